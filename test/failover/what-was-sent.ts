/**
 * What a failover case's service did, read where repetition is not absorbed: the warehouse's request log (every
 * shipment and recall request the service sent, by idempotency key — the warehouse's own store keeps one shipment per
 * key, so counting shipments there cannot show a second request), the store's dedupe ledger (every event the store
 * claimed, a cancellation whether it was recorded or refused) and the orders topic itself (every record the test
 * produced, read back). Each check names what is missing; the replays are a figure of the case.
 */
import { CONSUMER_NAME, shipmentKey } from '../../src/vocabulary/order.js';
import { inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import { REQUEST_LOG_SIZE, type ReceivedRequest } from '../../tools/warehouse/server.js';

/** One order's requests to the warehouse. */
export interface Sent {
  /** POST /shipments under the order's key. */
  ship: number;
  /** POST /shipments/<key>/cancel (a recall). */
  recall: number;
}

/**
 * The service's warehouse requests per order (`<tenant>/<order>`), from the request log; throws when the log may have
 * lost requests (it keeps the last REQUEST_LOG_SIZE) or a shipment request carries a key that is no order's of
 * `orders` — a request the per-order counts would miss.
 */
export function sentPerOrder(requests: ReceivedRequest[], orders: Iterable<string>): Map<string, Sent> {
  if (requests.length >= REQUEST_LOG_SIZE)
    throw new Error(`the warehouse's request log is full (${requests.length}): requests may have been dropped`);
  const byKey = new Map<string, string>();
  const sent = new Map<string, Sent>();
  for (const ref of orders) {
    const [tenant, order] = ref.split('/') as [string, string];
    byKey.set(shipmentKey(tenant, order), ref);
    sent.set(ref, { ship: 0, recall: 0 });
  }
  const foreign: string[] = [];
  for (const r of requests) {
    const recall = /^\/shipments\/(.+)\/cancel$/.exec(r.path);
    const key = recall ? decodeURIComponent(recall[1]!) : r.path === '/shipments' ? r.idempotencyKey : undefined;
    const ref = key === undefined ? undefined : byKey.get(key);
    if (!ref) {
      foreign.push(`${r.method} ${r.path} (key ${String(r.idempotencyKey)})`);
      continue;
    }
    const of = sent.get(ref)!;
    if (recall) of.recall += 1;
    else of.ship += 1;
  }
  if (foreign.length > 0) throw new Error(`warehouse requests under no order's key: ${foreign.join(', ')}`);
  return sent;
}

/** Shipment requests beyond the first per order: what the idempotency key had to absorb. */
export function shipmentReplays(sent: Map<string, Sent>): number {
  return [...sent.values()].reduce((n, s) => n + Math.max(0, s.ship - 1), 0);
}

/** The event ids among `eventIds` that the store's ledger does not hold for their tenant. */
export async function unclaimed(db: Db, eventIds: Map<string, string[]>): Promise<string[]> {
  const missing: string[] = [];
  for (const [tenant, ids] of eventIds) {
    const claimed = await inTenantTransaction(db, tenant, async (tx) =>
      (
        await tx.query<{ event_id: string }>(
          'SELECT event_id FROM processed_events WHERE consumer = $1 AND tenant_id = $2 AND event_id = ANY($3)',
          [CONSUMER_NAME, tenant, ids],
        )
      ).rows.map((r) => r.event_id),
    );
    const held = new Set(claimed);
    missing.push(...ids.filter((id) => !held.has(id)).map((id) => `${tenant} ${id}`));
  }
  return missing;
}

/** Produced records (their bytes) that the topic, read whole, holds fewer times than they were produced. */
export function missingFromTopic(produced: string[], onTopic: Map<string, number>): string[] {
  const wanted = new Map<string, number>();
  for (const v of produced) wanted.set(v, (wanted.get(v) ?? 0) + 1);
  return [...wanted].filter(([v, n]) => (onTopic.get(v) ?? 0) < n).map(([v, n]) => `${v} (${n}×)`);
}
