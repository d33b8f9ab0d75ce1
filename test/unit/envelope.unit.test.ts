import { describe, expect, it } from 'vitest';
import { MalformedEventError } from '../../src/errors.js';
import { parseRecord } from '../../src/events/envelope.js';

const valid = {
  eventId: 'evt-1', type: 'orders.OrderPlaced', schemaVersion: 1, occurredAt: '2026-11-30T10:00:00.123+01:00',
  tenantId: 'acme', orderId: 'o-1', orderVersion: 1,
  data: { customerId: 'c-1', lines: [{ sku: 'SKU-1', quantity: 2 }], shippingAddress: { city: 'Lyon' } },
};
const parse = (v: unknown, headers?: Record<string, string>) =>
  parseRecord({ value: Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)), headers });
const failure = (v: unknown) => {
  try {
    parse(v);
  } catch (err) {
    expect(err).toBeInstanceOf(MalformedEventError);
    return err as MalformedEventError;
  }
  throw new Error('expected a MalformedEventError');
};

describe('envelope parsing', () => {
  it('accepts a valid placement and drops unknown fields anywhere', () => {
    const r = parse({ ...valid, extra: true, data: { ...valid.data, promo: 'x', lines: [{ sku: 'SKU-1', quantity: 2, colour: 'red' }] } });
    expect(r.kind).toBe('order-event');
    if (r.kind !== 'order-event') return;
    expect(r.event).not.toHaveProperty('extra');
    expect(r.event.data).not.toHaveProperty('promo');
    expect(r.event.type === 'orders.OrderPlaced' && r.event.data.lines[0]).toEqual({ sku: 'SKU-1', quantity: 2 });
  });

  it('takes the correlation id from the header when the body has none', () => {
    const r = parse(valid, { 'correlation-id': 'corr-9' });
    expect(r.kind === 'order-event' && r.event.correlationId).toBe('corr-9');
  });

  it('reports an unknown type as ignorable, not as an error', () => {
    expect(parse({ ...valid, type: 'orders.OrderRefunded' })).toMatchObject({ kind: 'unknown-type', type: 'orders.OrderRefunded' });
  });

  it.each([
    ['not JSON', 'hello', '', /not JSON/],
    ['empty value', '', '', /empty value/],
    ['missing eventId', { ...valid, eventId: undefined }, 'eventId', /eventId: is required/],
    ['quantity 0', { ...valid, data: { ...valid.data, lines: [{ sku: 'a', quantity: 0 }] } }, 'data.lines[0].quantity', /expected an integer ≥ 1, got 0/],
    ['orderVersion as a string', { ...valid, orderVersion: '2' }, 'orderVersion', /expected an integer ≥ 1, got "2"/],
    ['no lines', { ...valid, data: { ...valid.data, lines: [] } }, 'data.lines', /at least one line/],
    ['tenant with a slash', { ...valid, tenantId: 'a/b' }, 'tenantId', /expected an id/],
    ['bad timestamp', { ...valid, occurredAt: 'yesterday' }, 'occurredAt', /RFC 3339/],
    ['an array', [valid], '', /an array: expected a JSON object/],
  ])('rejects %s naming the field', (_name, value, field, message) => {
    const err = failure(value);
    expect(err.field).toBe(field);
    expect(err.message).toMatch(message);
  });

  it('rejects a value over the size limit', () => {
    expect(failure('x'.repeat(300 * 1024)).message).toMatch(/expected at most/);
  });
});
