/**
 * The failover lane's reading of what the service sent (test/failover/what-was-sent.ts), on request logs made here:
 * a request made twice shows though the warehouse kept one shipment, a shipment request for an order that must not
 * ship shows, a request under no order's key or a log that may have dropped requests is refused, and a record
 * produced twice but on the topic once is missing.
 */
import { describe, expect, it } from 'vitest';
import { shipmentKey } from '../../../src/vocabulary/order.js';
import { REQUEST_LOG_SIZE, type ReceivedRequest } from '../../../tools/warehouse/server.js';
import { missingFromTopic, sentPerOrder, shipmentReplays } from '../../failover/what-was-sent.js';

const at = new Date(0).toISOString();
const ship = (tenant: string, order: string): ReceivedRequest => ({
  method: 'POST',
  path: '/shipments',
  idempotencyKey: shipmentKey(tenant, order),
  receivedAt: at,
  whileDown: false,
});
const recall = (tenant: string, order: string): ReceivedRequest => ({
  method: 'POST',
  path: `/shipments/${encodeURIComponent(shipmentKey(tenant, order))}/cancel`,
  receivedAt: at,
  whileDown: false,
});

describe("the failover lane's count of what the service sent", () => {
  const orders = ['t1/o-000', 't1/o-001', 't2/o-002'];

  it('counts every shipment request per order, and the ones sent again as replays', () => {
    const sent = sentPerOrder(
      [ship('t1', 'o-000'), ship('t1', 'o-000'), ship('t1', 'o-000'), ship('t2', 'o-002'), recall('t2', 'o-002')],
      orders,
    );
    expect(sent.get('t1/o-000')).toEqual({ ship: 3, recall: 0 });
    expect(sent.get('t1/o-001')).toEqual({ ship: 0, recall: 0 });
    expect(sent.get('t2/o-002')).toEqual({ ship: 1, recall: 1 });
    expect(shipmentReplays(sent)).toBe(2);
  });

  it('refuses a request under no order of the case, and a log that may have dropped requests', () => {
    expect(() => sentPerOrder([ship('t1', 'o-000'), ship('t9', 'o-999')], orders)).toThrow(/under no order's key/);
    expect(() =>
      sentPerOrder(
        [{ method: 'POST', path: '/shipments', receivedAt: at, whileDown: false }], // no idempotency key
        orders,
      ),
    ).toThrow(/under no order's key/);
    const full = Array.from({ length: REQUEST_LOG_SIZE }, () => ship('t1', 'o-000'));
    expect(() => sentPerOrder(full, orders)).toThrow(/request log is full/);
  });

  it('finds a record produced twice but on the topic once, or not at all', () => {
    const onTopic = new Map([
      ['a', 2],
      ['b', 1],
    ]);
    expect(missingFromTopic(['a', 'a', 'b'], onTopic)).toEqual([]);
    expect(missingFromTopic(['a', 'b', 'b', 'c'], onTopic)).toEqual(['b (2×)', 'c (1×)']);
  });
});
