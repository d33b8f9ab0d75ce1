import { describe, expect, it } from 'vitest';
import { ORDER_CANCELLED, ORDER_PLACED, type OrderEvent, type StoredOrder } from '../../../src/vocabulary/order.js';
import {
  applyStored,
  cancelsShipment,
  decide,
  expireTombstone,
  initialOrderState,
  markShipped,
  noteDecision,
  type OrderState,
} from '../../../workflows/order-state.js';

const base = { schemaVersion: 1, occurredAt: '2026-11-30T10:00:00Z', tenantId: 't1', orderId: 'o1' };
const placed = (eventId: string, orderVersion = 1): OrderEvent => ({
  ...base,
  eventId,
  orderVersion,
  type: ORDER_PLACED,
  data: { customerId: 'c1', lines: [{ sku: 's', quantity: 1 }] },
});
const cancelled = (eventId: string, orderVersion = 2): OrderEvent => ({
  ...base,
  eventId,
  orderVersion,
  type: ORDER_CANCELLED,
  data: {},
});
const stored = (s: Partial<StoredOrder>): StoredOrder => ({
  outcome: 'applied',
  status: 'pending',
  orderVersion: 1,
  placed: true,
  cancelRefused: false,
  ...s,
});

/** Feeds an event through decide/note and, when it records, a store answer. */
function feed(state: OrderState, event: OrderEvent, answer?: Partial<StoredOrder>): OrderState {
  const d = decide(state, event);
  let next = noteDecision(state, event, d);
  if (d.kind.startsWith('record')) next = applyStored(next, event, stored(answer ?? {}));
  return next;
}

describe('order state machine', () => {
  it('a placement on a new order is recorded and leaves it pending', () => {
    const s0 = initialOrderState('t1', 'o1');
    expect(decide(s0, placed('e1'))).toEqual({ kind: 'record', transition: 'place' });
    const s1 = feed(s0, placed('e1'));
    expect(s1.status).toBe('pending');
    expect(s1.orderVersion).toBe(1);
    expect(s1.counters.applied).toBe(1);
  });

  it('the same event id again is a duplicate, however often it comes', () => {
    let s = feed(initialOrderState('t1', 'o1'), placed('e1'));
    for (let i = 0; i < 3; i += 1) {
      expect(decide(s, placed('e1'))).toEqual({ kind: 'duplicate' });
      s = noteDecision(s, placed('e1'), { kind: 'duplicate' });
    }
    expect(s.counters).toEqual({ applied: 1, duplicates: 3, stale: 0 });
  });

  it('an older or equal version with a fresh event id is stale and changes nothing', () => {
    let s = feed(initialOrderState('t1', 'o1'), placed('e1', 3));
    s = { ...s, orderVersion: 3 };
    const d = decide(s, cancelled('e2', 2));
    expect(d.kind).toBe('stale');
    const after = noteDecision(s, cancelled('e2', 2), d);
    expect(after.status).toBe('pending');
    expect(after.orderVersion).toBe(3);
    expect(after.counters.stale).toBe(1);
  });

  it('a cancellation before the placement leaves a tombstone; the placement then records as cancelled', () => {
    const s1 = feed(initialOrderState('t1', 'o1'), cancelled('c1', 2), {
      status: 'cancelled',
      placed: false,
      orderVersion: 2,
    });
    expect(s1.status).toBe('awaiting-placement');
    expect(decide(s1, placed('p1', 1))).toEqual({ kind: 'record', transition: 'join-tombstone' });
    const s2 = feed(s1, placed('p1', 1), { status: 'cancelled', placed: true, orderVersion: 2 });
    expect(s2.status).toBe('cancelled');
  });

  it('a tombstone whose placement never comes ends cancelled', () => {
    const s1 = feed(initialOrderState('t1', 'o1'), cancelled('c1', 2), {
      status: 'cancelled',
      placed: false,
      orderVersion: 2,
    });
    expect(expireTombstone(s1).status).toBe('cancelled');
  });

  it('a cancellation of a pending order stops its shipment; after shipment it is only recorded', () => {
    const pending = feed(initialOrderState('t1', 'o1'), placed('p1', 1));
    expect(cancelsShipment(pending, cancelled('c1', 2))).toBe(true);
    expect(decide(pending, cancelled('c1', 2))).toEqual({ kind: 'record', transition: 'cancel' });
    const shipped = markShipped(pending, 'shp_1');
    expect(cancelsShipment(shipped, cancelled('c1', 2))).toBe(false);
    expect(decide(shipped, cancelled('c1', 2))).toEqual({ kind: 'record', transition: 'refuse' });
    const after = feed(shipped, cancelled('c1', 2), { status: 'shipped', cancelRefused: true, orderVersion: 2 });
    expect(after.status).toBe('shipped');
    expect(after.cancelRefused).toBe(true);
  });

  it('an event naming another tenant or order is refused', () => {
    const s = initialOrderState('t1', 'o1');
    expect(decide(s, { ...placed('x'), tenantId: 't2' })).toEqual({ kind: 'foreign' });
    expect(decide(s, { ...placed('x'), orderId: 'o2' })).toEqual({ kind: 'foreign' });
  });

  it('the store is the truth: a store duplicate still takes the stored status', () => {
    const s = feed(initialOrderState('t1', 'o1'), placed('p1'), { outcome: 'duplicate', status: 'shipped' });
    expect(s.status).toBe('shipped');
    expect(s.counters.duplicates).toBe(1);
  });

  it('remembers at most the configured number of event ids', () => {
    let s = initialOrderState('t1', 'o1');
    for (let i = 0; i < 10; i += 1) s = noteDecision(s, placed(`e${i}`), { kind: 'stale', reason: 'x' }, 4);
    expect(s.seenEventIds).toEqual(['e6', 'e7', 'e8', 'e9']);
  });
});
