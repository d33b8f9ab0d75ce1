import { describe, expect, it } from 'vitest';
import { MalformedEventError } from '../../../../src/base/errors.js';
import {
  MAX_ORDER_VERSION,
  isRfc3339Instant,
  isSafeToken,
  parseRecord,
} from '../../../../src/adapters/events/envelope.js';
import { acceptedRecord, failure, parse, type KafkaHeaders } from '../../../support/parse.js';

const valid = {
  eventId: 'evt-1',
  type: 'orders.OrderPlaced',
  schemaVersion: 1,
  occurredAt: '2026-11-30T10:00:00.123+01:00',
  tenantId: 'acme',
  orderId: 'o-1',
  orderVersion: 1,
  data: { customerId: 'c-1', lines: [{ sku: 'SKU-1', quantity: 2 }], shippingAddress: { city: 'Lyon' } },
};
const cancelled = { ...valid, type: 'orders.OrderCancelled', data: { reason: 'changed my mind' } };
const accepted = (v: unknown, headers?: KafkaHeaders) => acceptedRecord(v, headers).event;
const withData = (data: Record<string, unknown>) => ({ ...valid, data: { ...valid.data, ...data } });
const withAddress = (shippingAddress: unknown) => withData({ shippingAddress });
const withSku = (sku: unknown) => withData({ lines: [{ sku, quantity: 1 }] });
/** `value` serialised with the JSON text `raw` in place of the string "RAW". */
const raw = (value: unknown, text: string) => JSON.stringify(value).replace('"RAW"', text);
const nested = (levels: number, leaf = '1') => `${'['.repeat(levels)}${leaf}${']'.repeat(levels)}`;
const TEXT = /without NUL or unpaired surrogates/;
const TOKEN = /expected a token of 1–200 visible ASCII characters/;
const TIMESTAMP = /expected an RFC 3339 timestamp/;

/** No raw control characters, line separators or unpaired surrogates. */
function expectPrintable(s: string) {
  expect(Buffer.from(s, 'utf8').toString('utf8')).toBe(s);
  // eslint-disable-next-line no-control-regex
  expect(s).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
}

describe('envelope parsing', () => {
  it('accepts a valid placement and drops unknown fields anywhere', () => {
    const event = accepted({
      ...valid,
      extra: true,
      data: { ...valid.data, promo: 'x', lines: [{ sku: 'SKU-1', quantity: 2, colour: 'red' }] },
    });
    expect(event).not.toHaveProperty('extra');
    expect(event.data).not.toHaveProperty('promo');
    expect(event.type === 'orders.OrderPlaced' && event.data.lines[0]).toEqual({ sku: 'SKU-1', quantity: 2 });
  });

  it('accepts a valid cancellation, with or without a reason', () => {
    expect(accepted(cancelled).data).toEqual({ reason: 'changed my mind' });
    expect(accepted({ ...cancelled, data: {} }).data).toEqual({});
    expect(accepted({ ...cancelled, data: { reason: '' } }).data).toEqual({ reason: '' });
  });

  it('takes the correlation id from the header when the body has none', () => {
    expect(accepted(valid, { 'correlation-id': 'corr-9' }).correlationId).toBe('corr-9');
    expect(accepted(valid, { 'correlation-id': [Buffer.from('corr-b'), 'second'] }).correlationId).toBe('corr-b');
    expect(accepted({ ...valid, correlationId: 'body' }, { 'correlation-id': 'header' }).correlationId).toBe('body');
    expect(accepted(valid)).not.toHaveProperty('correlationId');
  });

  it('reports an unknown type as ignorable, not as an error', () => {
    expect(parse({ ...valid, type: 'orders.OrderRefunded' })).toMatchObject({
      kind: 'unknown-type',
      type: 'orders.OrderRefunded',
      eventId: 'evt-1',
      tenantId: 'acme',
    });
  });

  it('returns well-formed, NUL-free and capped strings for an unknown type', () => {
    const r = parse({ type: `x\u0000\ud800${'t'.repeat(300)}`, eventId: `\udc00${'e'.repeat(127)}😀`, tenantId: 7 });
    expect(r.kind).toBe('unknown-type');
    if (r.kind !== 'unknown-type') return;
    expect(r.type).toBe(`x\ufffd\ufffd${'t'.repeat(197)}`);
    expect(r.eventId).toBe(`\ufffd${'e'.repeat(127)}`);
    expect(r.tenantId).toBeUndefined();
  });

  it('accepts the edges of the contract', () => {
    expect(accepted({ ...valid, orderVersion: MAX_ORDER_VERSION }).orderVersion).toBe(2_147_483_647);
    expect(accepted({ ...valid, correlationId: '!~'.repeat(100) }).correlationId).toHaveLength(200);
    expect(accepted({ ...valid, eventId: '😀'.repeat(64) }).eventId).toHaveLength(128);
    expect(
      accepted(
        withData({
          customerId: 'c'.repeat(128),
          lines: Array.from({ length: 1000 }, () => ({ sku: 's'.repeat(64), quantity: 100_000 })),
        }),
      ).orderVersion,
    ).toBe(1);
    expect(
      accepted(withAddress({ a: { b: { c: { d: 'x'.repeat(1000) } } }, n: -1.5e300, t: true, z: null, l: [1, 'x'] }))
        .type,
    ).toBe('orders.OrderPlaced');
    expect(accepted(withAddress(Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, i])))).type).toBe(
      'orders.OrderPlaced',
    );
    expect(accepted({ ...valid, x: JSON.parse(nested(31)) as unknown }).type).toBe('orders.OrderPlaced');
  });

  it.each([
    '2026-11-30T12:00:00Z',
    '2026-11-30t12:00:00z',
    '2024-02-29T23:59:59.123456789-23:59',
    '2000-02-29T00:00:00+23:00',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59-00:00',
    '2026-12-31T00:00:00.5+05:30',
  ])('accepts the RFC 3339 instant %s', (occurredAt) => {
    expect(isRfc3339Instant(occurredAt)).toBe(true);
    expect(accepted({ ...valid, occurredAt }).occurredAt).toBe(occurredAt);
  });

  it.each([
    '2026-11-30T12:00:00+25:00',
    '2026-02-30T00:00:00Z',
    '2026-01-01 00:00:00Z',
    '2025-02-29T00:00:00Z',
    '1900-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-01T00:00:00Z',
    '2026-01-00T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T00:60:00Z',
    '2026-12-31T23:59:60Z',
    '2026-01-01T00:00:00.1234567891Z',
    '2026-01-01T00:00:00+23:60',
    '2026-01-01T00:00:00',
    '2026-01-01T00:00Z',
    '2026-01-01T00:00:00.Z',
    '2026-01-01T00:00:00+0100',
    '+2026-01-01T00:00:00Z',
    '２０２６-01-01T00:00:00Z',
    '2026-01-01T00:00:00Z\n',
    'yesterday',
    '',
  ])('rejects the timestamp %j naming occurredAt', (occurredAt) => {
    expect(isRfc3339Instant(occurredAt)).toBe(false);
    const err = failure({ ...valid, occurredAt });
    expect(err.field).toBe('occurredAt');
    expect(err.message).toMatch(TIMESTAMP);
  });

  it.each([
    ['not JSON', 'hello', '', /not JSON/],
    ['empty value', '', '', /empty value/],
    ['a string value', '"x"', '', /record value is string: expected a JSON object/],
    ['null', 'null', '', /record value is null: expected a JSON object/],
    ['an array', [valid], '', /an array: expected a JSON object/],
    ['missing eventId', { ...valid, eventId: undefined }, 'eventId', /eventId: is required/],
    ['an empty eventId', { ...valid, eventId: '' }, 'eventId', /expected a string of 1–128 characters/],
    [
      'an eventId of 129 characters',
      { ...valid, eventId: 'e'.repeat(129) },
      'eventId',
      /expected a string of 1–128 characters/,
    ],
    [
      'NUL in eventId',
      { ...valid, eventId: 'evt\u0000-1' },
      'eventId',
      /1–128 characters without NUL or unpaired surrogates, got "evt\\u0000-1"/,
    ],
    ['a lone surrogate in eventId', raw({ ...valid, eventId: 'RAW' }, '"evt\\ud800"'), 'eventId', TEXT],
    ['an empty type', { ...valid, type: '' }, 'type', /expected a non-empty event type name/],
    ['a numeric type', { ...valid, type: 3 }, 'type', /expected a non-empty event type name/],
    [
      'schemaVersion 3',
      { ...valid, schemaVersion: 3 },
      'schemaVersion',
      /version 3 is not supported \(supported schema versions: 1, 2\)/,
    ],
    [
      'schemaVersion "1"',
      { ...valid, schemaVersion: '1' },
      'schemaVersion',
      /expected an integer ≥ 1 \(supported schema versions: 1, 2\), got "1"/,
    ],
    [
      'schemaVersion 1.5',
      { ...valid, schemaVersion: 1.5 },
      'schemaVersion',
      /supported schema versions: 1, 2\), got 1.5/,
    ],
    [
      'missing schemaVersion',
      { ...valid, schemaVersion: undefined },
      'schemaVersion',
      /schemaVersion: is required \(supported schema versions: 1, 2\)/,
    ],
    [
      'a v1 placement labelled version 2',
      { ...valid, schemaVersion: 2 },
      'data.items',
      /field data.items: is required/,
    ],
    ['tenant with a slash', { ...valid, tenantId: 'a/b' }, 'tenantId', /expected an id/],
    ['an order id of 65 characters', { ...valid, orderId: 'o'.repeat(65) }, 'orderId', /expected an id/],
    [
      'orderVersion 2147483648',
      { ...valid, orderVersion: 2_147_483_648 },
      'orderVersion',
      /expected an integer from 1 to 2147483647, got 2147483648/,
    ],
    [
      'orderVersion 2**53+1',
      raw({ ...valid, orderVersion: 'RAW' }, '9007199254740993'),
      'orderVersion',
      /expected an integer from 1 to 2147483647/,
    ],
    [
      'orderVersion 2**53+2',
      { ...valid, orderVersion: 2 ** 53 + 2 },
      'orderVersion',
      /expected an integer from 1 to 2147483647/,
    ],
    ['orderVersion 3e9', raw({ ...valid, orderVersion: 'RAW' }, '3e9'), 'orderVersion', /got 3000000000/],
    ['orderVersion 1.5', { ...valid, orderVersion: 1.5 }, 'orderVersion', /got 1.5/],
    ['orderVersion 1e400', raw({ ...valid, orderVersion: 'RAW' }, '1e400'), 'orderVersion', /got Infinity/],
    ['orderVersion 0', { ...valid, orderVersion: 0 }, 'orderVersion', /got 0/],
    [
      'orderVersion as a string',
      { ...valid, orderVersion: '2' },
      'orderVersion',
      /expected an integer from 1 to 2147483647, got "2"/,
    ],
    ['correlationId with CR', { ...valid, correlationId: 'a\rb' }, 'correlationId', /got "a\\rb"/],
    ['correlationId with LF', { ...valid, correlationId: 'a\nb' }, 'correlationId', /got "a\\nb"/],
    ['correlationId with NUL', { ...valid, correlationId: 'a\u0000b' }, 'correlationId', /got "a\\u0000b"/],
    ['correlationId with é', { ...valid, correlationId: 'café' }, 'correlationId', TOKEN],
    ['correlationId with an emoji', { ...valid, correlationId: 'corr-😀' }, 'correlationId', TOKEN],
    ['correlationId with a space', { ...valid, correlationId: 'corr 1' }, 'correlationId', TOKEN],
    ['correlationId with a tab', { ...valid, correlationId: '\tcorr' }, 'correlationId', TOKEN],
    ['an empty correlationId', { ...valid, correlationId: '' }, 'correlationId', TOKEN],
    ['a correlationId of 201 characters', { ...valid, correlationId: 'c'.repeat(201) }, 'correlationId', TOKEN],
    ['a numeric correlationId', { ...valid, correlationId: 42 }, 'correlationId', TOKEN],
    ['data as a string', { ...valid, data: 'x' }, 'data', /field data: expected an object, got "x"/],
    ['missing data', { ...valid, data: undefined }, 'data', /field data: is required/],
    ['NUL in data.customerId', withData({ customerId: 'c\u0000' }), 'data.customerId', TEXT],
    ['a lone surrogate in data.customerId', raw(withData({ customerId: 'RAW' }), '"\\udfff"'), 'data.customerId', TEXT],
    [
      'quantity 0',
      withData({ lines: [{ sku: 'a', quantity: 0 }] }),
      'data.lines[0].quantity',
      /expected an integer from 1 to 100000, got 0/,
    ],
    ['quantity 100001', withData({ lines: [{ sku: 'a', quantity: 100_001 }] }), 'data.lines[0].quantity', /got 100001/],
    ['no lines', withData({ lines: [] }), 'data.lines', /expected an array of 1–1000 lines/],
    [
      '1001 lines',
      withData({ lines: Array.from({ length: 1001 }, () => ({ sku: 'a', quantity: 1 })) }),
      'data.lines',
      /1–1000 lines/,
    ],
    ['a line that is a string', withData({ lines: ['a'] }), 'data.lines[0]', /expected a line \{sku, quantity\}/],
    [
      'NUL in data.lines[].sku',
      withSku('SKU\u0000'),
      'data.lines[0].sku',
      /expected a string of 1–64 characters without NUL or unpaired surrogates, got "SKU\\u0000"/,
    ],
    ['a lone surrogate in data.lines[].sku', raw(withSku('RAW'), '"\\ud800"'), 'data.lines[0].sku', /got "\\ud800"/],
    ['a sku of 65 characters', withSku('s'.repeat(65)), 'data.lines[0].sku', /1–64 characters/],
    [
      'NUL in a shippingAddress value',
      withAddress({ city: 'Ly\u0000on' }),
      'data.shippingAddress.city',
      /at most 1000 characters without NUL or unpaired surrogates, got a string of 5 characters containing U\+0000/,
    ],
    [
      'a lone surrogate in a shippingAddress value',
      raw(withAddress({ city: 'RAW' }), '"\\ud800"'),
      'data.shippingAddress.city',
      /containing an unpaired surrogate/,
    ],
    [
      'NUL in a shippingAddress key',
      withAddress({ 'ci\u0000ty': 'Lyon' }),
      'data.shippingAddress["ci\\u0000ty"]',
      /expected a key of 1–64 characters without NUL/,
    ],
    [
      'a lone surrogate in a shippingAddress key',
      raw(withAddress({ RAW: 'Lyon' }), '"\\ud800"'),
      'data.shippingAddress["\\ud800"]',
      /got the key "\\ud800"/,
    ],
    [
      'an empty shippingAddress key',
      withAddress({ '': 'Lyon' }),
      'data.shippingAddress[""]',
      /expected a key of 1–64 characters/,
    ],
    [
      'a __proto__ key in shippingAddress',
      raw(withAddress({ RAW: { isAdmin: true } }), '"__proto__"'),
      'data.shippingAddress.__proto__',
      /expected a key other than __proto__, constructor, prototype/,
    ],
    [
      'a constructor key nested in shippingAddress',
      withAddress({ street: { constructor: { prototype: { x: 1 } } } }),
      'data.shippingAddress.street.constructor',
      /got the key "constructor"/,
    ],
    [
      'a prototype key in an array in shippingAddress',
      withAddress({ lines: [{ prototype: 'x' }] }),
      'data.shippingAddress.lines[0].prototype',
      /a key other than __proto__/,
    ],
    [
      'a nested lone surrogate in shippingAddress',
      raw(withAddress({ lines: [{ street: 'RAW' }] }), '"\\udc00x"'),
      'data.shippingAddress.lines[0].street',
      TEXT,
    ],
    [
      'a shippingAddress value of 1001 characters',
      withAddress({ city: 'x'.repeat(1001) }),
      'data.shippingAddress.city',
      /got a string of 1001 characters/,
    ],
    [
      'an infinite shippingAddress number',
      raw(withAddress({ zip: 'RAW' }), '-1e999'),
      'data.shippingAddress.zip',
      /expected a finite number, got -Infinity/,
    ],
    [
      'a shippingAddress array',
      withAddress(['Lyon']),
      'data.shippingAddress',
      /expected a JSON object of at most 4 levels/,
    ],
    ['a null shippingAddress', withAddress(null), 'data.shippingAddress', /expected a JSON object/],
    [
      'a shippingAddress of 5 levels',
      withAddress({ a: { b: { c: [{ e: 1 }] } } }),
      'data.shippingAddress.a.b.c[0]',
      /at most 4 levels/,
    ],
    [
      'a shippingAddress with 65 entries',
      withAddress({ a: Array.from({ length: 64 }, () => 1) }),
      'data.shippingAddress',
      /got more than 64 keys and elements/,
    ],
    [
      'a shippingAddress over 8192 bytes',
      withAddress({
        a: 'é'.repeat(1000),
        b: 'é'.repeat(1000),
        c: 'é'.repeat(1000),
        d: 'é'.repeat(1000),
        e: 'é'.repeat(1000),
      }),
      'data.shippingAddress',
      /got 100\d\d bytes/,
    ],
    [
      'NUL in data.reason',
      { ...cancelled, data: { reason: '\u0000' } },
      'data.reason',
      /at most 1000 characters without NUL/,
    ],
    [
      'a reason of 1001 characters',
      { ...cancelled, data: { reason: 'r'.repeat(1001) } },
      'data.reason',
      /at most 1000 characters/,
    ],
    [
      'a 5,000-level nesting inside data',
      raw(withData({ extra: 'RAW' }), nested(5000)),
      '',
      /record value nests 5002 levels deep: expected at most 32/,
    ],
    [
      'a 5,000-level nesting inside shippingAddress',
      raw(withAddress({ deep: 'RAW' }), nested(5000)),
      '',
      /record value nests 5003 levels deep: expected at most 32/,
    ],
    ['33 levels', { ...valid, x: JSON.parse(nested(32)) as unknown }, '', /nests 33 levels deep/],
    ['an unknown type nested too deep', raw({ type: 'other', x: 'RAW' }, nested(40)), '', /nests 41 levels deep/],
  ])('rejects %s naming the field', (_name, value, field, message) => {
    const err = failure(value);
    expect(err.field).toBe(field);
    expect(err.message).toMatch(message);
    if (field) expect(err.message.startsWith(`field ${field}:`)).toBe(true);
    expectPrintable(err.message);
  });

  it.each([
    ['a space', 'corr 1'],
    ['CR LF', 'corr\r\nX-Evil: 1'],
    ['NUL', 'corr\u0000'],
    ['é', 'café'],
    ['an empty value', ''],
    ['invalid UTF-8', Buffer.from([0x63, 0xff, 0xfe])],
  ])('rejects an unsafe correlation-id header with %s naming it', (_name, header) => {
    const err = failure(valid, { 'correlation-id': header });
    expect(err.field).toBe('header correlation-id');
    expect(err.message).toMatch(/^header correlation-id: expected a token of 1–200 visible ASCII characters/);
    expectPrintable(err.message);
  });

  it('rejects a value over the size limit', () => {
    expect(failure('x'.repeat(300 * 1024)).message).toMatch(/expected at most/);
  });

  it('rejects 120,000 levels of nesting within the size limit as malformed, not a RangeError', () => {
    expect(failure(nested(120_000)).message).toMatch(/^record value is an array/);
    expect(failure(`{"a":${nested(120_000)}}`).message).toMatch(/nests 120001 levels deep/);
    expect(failure('['.repeat(200_000)).message).toMatch(/not JSON/);
  });

  it('keeps error messages printable, well-formed and short whatever the input', () => {
    const evil = `\u0000\u001b[31m\u007f\u0085\u2028\u202e${'😀'.repeat(40)}`;
    for (const value of [
      raw({ ...valid, eventId: 'RAW' }, `"${'\\ud83d'.repeat(100)}"`),
      { ...valid, eventId: evil },
      { ...valid, orderVersion: { [evil]: evil } },
      withAddress({ [`${evil}${'k'.repeat(100)}`]: 1 }),
      `\u0000\u0001${evil}`,
      Buffer.from([0x7b, 0xff, 0x00, 0x1b]).toString('latin1'),
    ]) {
      const err = failure(value);
      expectPrintable(err.message);
      expectPrintable(err.field);
      expect(err.message.length).toBeLessThanOrEqual(1000);
    }
  });

  it('turns an unexpected failure into a MalformedEventError', () => {
    const value = {
      length: 10,
      toString: () => {
        throw new TypeError('boom\u0000');
      },
    } as unknown as Buffer;
    let err: unknown;
    try {
      parseRecord({ value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MalformedEventError);
    expect((err as MalformedEventError).message).toMatch(/^record could not be validated \(TypeError: boom\\u0000\)/);
  });

  it('exports the safe-token check for the warehouse client', () => {
    expect(isSafeToken('corr-1_A.b~!')).toBe(true);
    for (const v of ['', 'a b', 'é', 'a\r', 'x'.repeat(201), 7, undefined]) expect(isSafeToken(v)).toBe(false);
  });
});
