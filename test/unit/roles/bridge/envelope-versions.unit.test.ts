/**
 * Schema versions at the edge: dispatch on `schemaVersion`, version 2 and its upcaster, unsupported versions, and
 * the unknown fields the tolerant reader drops and reports (and the bridge counts).
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classify, processRecord, type PipelineDeps } from '../../../../src/roles/bridge/record-pipeline.js';
import {
  MAX_UNKNOWN_FIELDS,
  MAX_UNKNOWN_FIELD_LENGTH,
  SUPPORTED_SCHEMA_VERSIONS,
  isSafeText,
} from '../../../../src/adapters/events/envelope.js';
import { createLogger } from '../../../../src/base/log.js';
import { MAX_UNKNOWN_FIELD_LABELS, createMetrics, metricValue } from '../../../../src/base/metrics.js';
import { acceptedRecord, failure, parse, type KafkaHeaders } from '../../../support/parse.js';

type Json = Record<string, unknown>;

const example = (name: string): Json =>
  JSON.parse(readFileSync(new URL(`../../../../docs/schema/${name}.example.json`, import.meta.url), 'utf8')) as Json;
const v1 = example('order-placed.v1');
const v2 = example('order-placed.v2');
const dataOf = (r: Json) => r.data as Json;
const cancelledV1 = example('order-cancelled.v1');
const cancelledV2 = { ...cancelledV1, schemaVersion: 2 };

const serialise = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));
const accepted = acceptedRecord;
/** `value` serialised with the JSON text `raw` in place of the string "RAW". */
const raw = (value: unknown, text: string) => JSON.stringify(value).replace('"RAW"', text);
const nested = (levels: number) => `${'['.repeat(levels)}1${']'.repeat(levels)}`;
/** The same placement in either version: `lines` is the v1 name of v2's `items`. */
const linesKey = (r: Json) => (r.schemaVersion === 2 ? 'items' : 'lines');
const withData = (r: Json, data: Json) => ({ ...r, data: { ...dataOf(r), ...data } });
const withLines = (r: Json, lines: unknown) => withData(r, { [linesKey(r)]: lines });
const withAddress = (r: Json, shippingAddress: unknown) => withData(r, { shippingAddress });
/** A v1 message or field as version 2 words it (a whole value's size aside: the v2 example is a few bytes longer). */
const inV2 = (s: string) =>
  s
    .replaceAll('data.lines', 'data.items')
    .replaceAll('1000 lines', '1000 items')
    .replace(/^record value is \d+ bytes/, 'record value is N bytes');

describe('schema versions: dispatch and upcasting', () => {
  it('knows versions 1 and 2', () => {
    expect(SUPPORTED_SCHEMA_VERSIONS).toEqual([1, 2]);
  });

  it('reads the checked-in cancellation: the same order as the placement example, a later version, its reason', () => {
    const cancel = accepted(cancelledV1);
    expect(cancel).not.toHaveProperty('unknownFields');
    expect(cancel.event).toMatchObject({
      type: 'orders.OrderCancelled',
      tenantId: v1.tenantId,
      orderId: v1.orderId,
      orderVersion: (v1.orderVersion as number) + 1,
      data: { reason: 'customer changed their mind' },
    });
  });

  it('reads the checked-in examples; the v2 placement upcasts to exactly what its v1 equivalent parses to', () => {
    const one = accepted(v1);
    const two = accepted(v2);
    expect(one).not.toHaveProperty('unknownFields');
    expect(two).not.toHaveProperty('unknownFields');
    expect(two.event.schemaVersion).toBe(2);
    expect({ ...two.event, schemaVersion: 1 }).toEqual(one.event);
    expect(JSON.stringify({ ...two.event, schemaVersion: 1 })).toBe(JSON.stringify(one.event)); // same keys, same order
  });

  it('v2 upcast: items become lines, the currency is dropped, nothing else of the record reaches the model', () => {
    const { event } = accepted(v2);
    expect(event.type).toBe('orders.OrderPlaced');
    expect(event.data).toEqual({
      customerId: 'cust-5531',
      lines: [
        { sku: 'SKU-1001', quantity: 2 },
        { sku: 'SKU-2002', quantity: 1 },
      ],
      shippingAddress: dataOf(v2).shippingAddress,
    });
    expect(event.data).not.toHaveProperty('items');
    expect(event.data).not.toHaveProperty('currency');
    const { currency: _currency, ...withoutCurrency } = dataOf(v2);
    expect(accepted({ ...v2, data: withoutCurrency }).event).toEqual(event);
    const { shippingAddress: _address, ...bare } = withoutCurrency;
    expect(accepted({ ...v2, data: bare }).event.data).toEqual({
      customerId: 'cust-5531',
      lines: event.type === 'orders.OrderPlaced' ? event.data.lines : [],
    });
    expect(accepted({ ...v2, data: bare }).event.data).not.toHaveProperty('shippingAddress');
  });

  it('a v2 cancellation is a v1 cancellation', () => {
    expect({ ...accepted(cancelledV2).event, schemaVersion: 1 }).toEqual(accepted(cancelledV1).event);
    expect(accepted({ ...cancelledV2, data: {} }).event.data).toEqual({});
  });

  it('carries the correlation id from the header for v2 as for v1', () => {
    const { correlationId: _c, ...noCorrelation } = v2;
    expect(accepted(noCorrelation, { 'correlation-id': 'corr-h' }).event.correlationId).toBe('corr-h');
    expect(accepted(noCorrelation).event).not.toHaveProperty('correlationId');
  });

  it('takes a record for what its schemaVersion says, never for another version', () => {
    expect(failure({ ...v1, schemaVersion: 2 })).toMatchObject({
      field: 'data.items',
      message: 'field data.items: is required',
    });
    expect(failure({ ...v2, schemaVersion: 1 })).toMatchObject({
      field: 'data.lines',
      message: 'field data.lines: is required',
    });
  });

  it.each([
    [
      '1000 lines of the longest sku and largest quantity',
      (r: Json) =>
        withLines(
          r,
          Array.from({ length: 1000 }, () => ({ sku: 's'.repeat(64), quantity: 100_000 })),
        ),
    ],
    ['the largest order version', (r: Json) => ({ ...r, orderVersion: 2_147_483_647 })],
    ['a correlation id of 200 characters', (r: Json) => ({ ...r, correlationId: '!~'.repeat(100) })],
    [
      'an address at 4 levels and 64 entries',
      (r: Json) =>
        withAddress(r, {
          a: { b: { c: { d: 'x'.repeat(1000) } } },
          ...Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, i])),
        }),
    ],
    [
      'a leap day with a fraction of 9 digits',
      (r: Json) => ({ ...r, occurredAt: '2024-02-29T23:59:59.123456789-23:59' }),
    ],
  ])('v2 accepts the edges v1 accepts, with the same model: %s', (_name, edit) => {
    expect({ ...accepted(edit(v2)).event, schemaVersion: 1 }).toEqual(accepted(edit(v1)).event);
  });
});

describe('schema versions: every rule of the contract holds for v2 as for v1', () => {
  const cases: [string, (r: Json) => unknown, KafkaHeaders?][] = [
    ['an empty eventId', (r) => ({ ...r, eventId: '' })],
    ['an eventId of 129 characters', (r) => ({ ...r, eventId: 'e'.repeat(129) })],
    ['NUL in eventId', (r) => ({ ...r, eventId: 'evt\u0000' })],
    ['a lone surrogate in eventId', (r) => raw({ ...r, eventId: 'RAW' }, '"evt\\ud800"')],
    ['a leap second', (r) => ({ ...r, occurredAt: '2026-12-31T23:59:60Z' })],
    ['an offset of +25:00', (r) => ({ ...r, occurredAt: '2026-11-30T12:00:00+25:00' })],
    ['February 30', (r) => ({ ...r, occurredAt: '2026-02-30T00:00:00Z' })],
    ['a tenant with a slash', (r) => ({ ...r, tenantId: 'a/b' })],
    ['an order id of 65 characters', (r) => ({ ...r, orderId: 'o'.repeat(65) })],
    ['orderVersion 2147483648', (r) => ({ ...r, orderVersion: 2_147_483_648 })],
    ['orderVersion 0', (r) => ({ ...r, orderVersion: 0 })],
    ['orderVersion 1e400', (r) => raw({ ...r, orderVersion: 'RAW' }, '1e400')],
    ['orderVersion as a string', (r) => ({ ...r, orderVersion: '2' })],
    ['a correlationId with CR LF', (r) => ({ ...r, correlationId: 'a\r\nb' })],
    ['a correlationId with é', (r) => ({ ...r, correlationId: 'café' })],
    ['a correlationId of 201 characters', (r) => ({ ...r, correlationId: 'c'.repeat(201) })],
    [
      'an unsafe correlation-id header',
      (r) => ({ ...r, correlationId: undefined }),
      { 'correlation-id': 'corr\r\nX-Evil: 1' },
    ],
    ['missing data', (r) => ({ ...r, data: undefined })],
    ['data as a string', (r) => ({ ...r, data: 'x' })],
    ['NUL in customerId', (r) => withData(r, { customerId: 'c\u0000' })],
    ['a customerId of 129 characters', (r) => withData(r, { customerId: 'c'.repeat(129) })],
    ['no lines', (r) => withLines(r, [])],
    [
      '1001 lines',
      (r) =>
        withLines(
          r,
          Array.from({ length: 1001 }, () => ({ sku: 'a', quantity: 1 })),
        ),
    ],
    ['a line that is a string', (r) => withLines(r, ['a'])],
    ['quantity 0', (r) => withLines(r, [{ sku: 'a', quantity: 0 }])],
    ['quantity 100001', (r) => withLines(r, [{ sku: 'a', quantity: 100_001 }])],
    ['NUL in a sku', (r) => withLines(r, [{ sku: 'SKU\u0000', quantity: 1 }])],
    ['a lone surrogate in a sku', (r) => raw(withLines(r, [{ sku: 'RAW', quantity: 1 }]), '"\\ud800"')],
    ['a sku of 65 characters', (r) => withLines(r, [{ sku: 's'.repeat(65), quantity: 1 }])],
    ['an address of 5 levels', (r) => withAddress(r, { a: { b: { c: [{ e: 1 }] } } })],
    ['an address with 65 entries', (r) => withAddress(r, { a: Array.from({ length: 64 }, () => 1) })],
    [
      'an address over 8192 bytes',
      (r) => withAddress(r, Object.fromEntries('abcde'.split('').map((k) => [k, 'é'.repeat(1000)]))),
    ],
    ['NUL in an address value', (r) => withAddress(r, { city: 'Ly\u0000on' })],
    ['a lone surrogate in an address key', (r) => raw(withAddress(r, { RAW: 'Lyon' }), '"\\ud800"')],
    ['an address that is an array', (r) => withAddress(r, ['Lyon'])],
    ['a value over 256 KiB', (r) => withData(r, { padding: 'x'.repeat(300 * 1024) })],
    ['33 levels of nesting', (r) => ({ ...r, x: JSON.parse(nested(32)) as unknown })],
    ['NUL in a reason', (r) => ({ ...r, type: 'orders.OrderCancelled', data: { reason: '\u0000' } })],
    [
      'a reason of 1001 characters',
      (r) => ({ ...r, type: 'orders.OrderCancelled', data: { reason: 'r'.repeat(1001) } }),
    ],
    ['an empty type', (r) => ({ ...r, type: '' })],
  ];

  it.each(cases)('v2 refuses %s as v1 does, naming the same field', (_name, edit, headers) => {
    const one = failure(edit(v1), headers);
    const two = failure(edit(v2), headers);
    expect(two.field).toBe(inV2(one.field));
    expect(inV2(two.message)).toBe(inV2(one.message));
  });

  it.each([
    ['lowercase', 'eur'],
    ['four letters', 'EURO'],
    ['empty', ''],
    ['digits', '978'],
    ['a number', 978],
    ['null', null],
    ['NUL', 'EU\u0000'],
  ])('v2 refuses a currency that is not three uppercase letters (%s) naming data.currency', (_name, currency) => {
    const err = failure(withData(v2, { currency }));
    expect(err.field).toBe('data.currency');
    expect(err.message).toMatch(/^field data.currency: expected an ISO 4217 currency code of three uppercase letters/);
  });
});

describe('schema versions: unsupported versions are malformed, naming the supported ones', () => {
  it.each([3, 4, 999, 2 ** 31, 2 ** 53 + 2, 1e300])('version %s is not supported', (schemaVersion) => {
    const err = failure({ ...v1, schemaVersion });
    expect(err.field).toBe('schemaVersion');
    expect(err.message).toBe(
      `field schemaVersion: version ${schemaVersion} is not supported (supported schema versions: 1, 2)`,
    );
  });

  it.each([
    ['0', 0],
    ['-1', -1],
    ['1.5', 1.5],
    ['"2"', '2'],
    ['true', true],
    ['null', null],
    ['an array', [1]],
    ['an object', { v: 1 }],
    ['NaN as a string', 'NaN'],
  ])('%s is not a schema version', (_name, schemaVersion) => {
    const err = failure({ ...v2, schemaVersion });
    expect(err.field).toBe('schemaVersion');
    expect(err.message).toMatch(
      /^field schemaVersion: expected an integer ≥ 1 \(supported schema versions: 1, 2\), got /,
    );
  });

  it('a version too large for a double is not an integer version either', () => {
    expect(failure(raw({ ...v1, schemaVersion: 'RAW' }, '1e400')).message).toMatch(
      /expected an integer ≥ 1 .*got Infinity/,
    );
  });

  it('a missing version is malformed and says which versions there are', () => {
    const { schemaVersion: _v, ...rest } = v1;
    expect(failure(rest)).toMatchObject({
      field: 'schemaVersion',
      message: 'field schemaVersion: is required (supported schema versions: 1, 2)',
    });
  });

  it('reads the version before any other field: an unknown version is reported even when other fields are bad too', () => {
    expect(failure({ ...v1, schemaVersion: 999, eventId: '', orderVersion: -1, data: 'x' }).field).toBe(
      'schemaVersion',
    );
    expect(failure({ ...cancelledV1, schemaVersion: 3, tenantId: 'a/b' }).field).toBe('schemaVersion');
  });

  it('an event of a type this service does not handle is ignored whatever its version', () => {
    expect(parse({ ...v1, type: 'orders.OrderRefunded', schemaVersion: 999 })).toMatchObject({
      kind: 'unknown-type',
      type: 'orders.OrderRefunded',
    });
  });
});

describe('unknown fields: dropped, reported bounded and sanitised', () => {
  const unknownOf = (v: unknown) => accepted(v).unknownFields;

  it('reports the top-level and data fields a version does not define, top level first; not those inside lines or the address', () => {
    const record = {
      promo: 'x',
      ...v1,
      extra: { deep: true },
      data: { ...dataOf(v1), giftWrap: true, lines: [{ sku: 'a', quantity: 1, colour: 'red' }] },
    };
    const r = accepted(record);
    expect(r.unknownFields).toEqual(['promo', 'extra', 'data.giftWrap']);
    expect(r.event).not.toHaveProperty('promo');
    expect(r.event.data).not.toHaveProperty('giftWrap');
  });

  it('judges by the record’s own version: v1 does not know items or currency, v2 does not know lines', () => {
    expect(unknownOf(withData(v1, { items: [], currency: 'EUR' }))).toEqual(['data.items', 'data.currency']);
    expect(unknownOf(withData(v2, { lines: [] }))).toEqual(['data.lines']);
    expect(unknownOf({ ...cancelledV2, data: { reason: 'r', customerId: 'c' } })).toEqual(['data.customerId']);
  });

  it(`reports at most ${MAX_UNKNOWN_FIELDS} names`, () => {
    const extra = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`x${i}`, i]));
    const names = unknownOf({ ...v1, ...extra, data: { ...dataOf(v1), ...extra } });
    expect(names).toHaveLength(MAX_UNKNOWN_FIELDS);
    expect(names).toEqual(Array.from({ length: MAX_UNKNOWN_FIELDS }, (_, i) => `x${i}`));
  });

  it(`caps a name at ${MAX_UNKNOWN_FIELD_LENGTH} characters, never splitting a surrogate pair`, () => {
    expect(unknownOf({ ...v1, ['k'.repeat(500)]: 1 })).toEqual(['k'.repeat(64)]);
    expect(unknownOf(withData(v1, { ['d'.repeat(500)]: 1 }))).toEqual([`data.${'d'.repeat(59)}`]);
    expect(unknownOf({ ...v1, [`${'k'.repeat(63)}😀`]: 1 })).toEqual(['k'.repeat(63)]);
  });

  it('replaces NUL, controls, line separators, direction marks and unpaired surrogates; names an empty key', () => {
    const evil = { ...v1, 'a\u0000b': 1, 'c\u001b[31m': 2, 'd\u2028e': 3, '\u202eevil': 4, '': 5, 'ok😀': 6 };
    expect(unknownOf(evil)).toEqual(['a\ufffdb', 'c\ufffd[31m', 'd\ufffde', '\ufffdevil', '(empty)', 'ok😀']);
    expect(unknownOf(raw({ ...v1, RAW: 1 }, '"x\\ud800"'))).toEqual(['x\ufffd']);
    expect(unknownOf(JSON.stringify(v1).replace('{', '{"__proto__":{"polluted":true},'))).toEqual(['__proto__']);
  });

  it('reports two keys that sanitise alike once', () => {
    expect(unknownOf({ ...v1, 'a\u0000': 1, 'a\u0001': 2 })).toEqual(['a\ufffd']);
  });

  it('holds for any keys: bounded, short, well-formed, free of controls', () => {
    const key = fc.string({ unit: 'binary', maxLength: 100 });
    fc.assert(
      fc.property(
        fc.dictionary(key, fc.integer(), { maxKeys: 40 }),
        fc.dictionary(key, fc.integer(), { maxKeys: 40 }),
        (top, data) => {
          const names = parse({ ...top, ...v2, data: { ...data, ...dataOf(v2) } });
          if (names.kind !== 'order-event') throw new Error('expected an order event');
          for (const n of names.unknownFields ?? []) {
            expect(n.length).toBeGreaterThan(0);
            expect(n.length).toBeLessThanOrEqual(MAX_UNKNOWN_FIELD_LENGTH);
            expect(isSafeText(n)).toBe(true);
            // eslint-disable-next-line no-control-regex
            expect(n).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
          }
          expect((names.unknownFields ?? []).length).toBeLessThanOrEqual(MAX_UNKNOWN_FIELDS);
          expect(new Set(names.unknownFields).size).toBe((names.unknownFields ?? []).length);
        },
      ),
      { numRuns: 300, seed: 20_261_130 },
    );
  });
});

describe('unknown fields: counted by the bridge, with bounded labels', () => {
  it(`labels the first ${MAX_UNKNOWN_FIELD_LABELS} distinct names per process, then "other"`, async () => {
    const metrics = createMetrics();
    const count = (field: string) => metricValue(metrics.registry, 'fulfilment_unknown_fields_total', { field });
    for (let i = 0; i < 25; i += 1) metrics.unknownFields.inc(`f${i}`);
    metrics.unknownFields.inc('f0');
    metrics.unknownFields.inc('f24');
    expect(await count('f0')).toBe(2);
    expect(await count('f19')).toBe(1);
    expect(await count('f20')).toBe(0);
    expect(await count('other')).toBe(6);
    expect(await metricValue(metrics.registry, 'fulfilment_unknown_fields_total')).toBe(27);
    const { values } = await metrics.registry.getSingleMetric('fulfilment_unknown_fields_total')!.get();
    expect(values).toHaveLength(MAX_UNKNOWN_FIELD_LABELS + 1);
  });

  it('classify carries the names; processing the order event counts each', async () => {
    const metrics = createMetrics();
    const deps: PipelineDeps = {
      starter: { deliver: async () => 'accepted' },
      hint: new Map<string, true>(),
      sender: { send: async () => undefined },
      dlqTopic: 'dlq',
      group: 'g',
      metrics,
      log: createLogger('silent'),
      recordRetry: { initialDelayMs: 5, maxDelayMs: 20, budgetMs: 200 },
    };
    const ctx = {
      gates: {
        deliver: { run: <T>(work: () => Promise<T>) => work() },
        deadLetter: { run: <T>(work: () => Promise<T>) => work() },
      },
      signal: new AbortController().signal,
    };
    const record = {
      key: Buffer.from('k'),
      value: serialise(withData({ ...v2, promo: 1 }, { giftWrap: true })),
      offset: '7',
      timestamp: '1796000000000',
    };
    const classified = classify(record, 'orders', 0);
    expect(classified).toMatchObject({ kind: 'order-event', unknownFields: ['promo', 'data.giftWrap'] });
    expect(await processRecord({ record, topic: 'orders', partition: 0, classified }, deps, ctx)).toBe('accepted');
    const count = (field: string) => metricValue(metrics.registry, 'fulfilment_unknown_fields_total', { field });
    expect([await count('promo'), await count('data.giftWrap')]).toEqual([1, 1]);
    const plain = {
      key: null,
      value: serialise({ ...v1, eventId: 'evt-plain' }),
      offset: '8',
      timestamp: '1796000000000',
    };
    await processRecord(
      { record: plain, topic: 'orders', partition: 0, classified: classify(plain, 'orders', 0) },
      deps,
      ctx,
    );
    expect(await metricValue(metrics.registry, 'fulfilment_unknown_fields_total')).toBe(2);
  });
});
