/**
 * What the reconciler reads of PostgreSQL, as the runtime role and one tenant at a time (row-level security lets no
 * session see more): the orders changed in a window, the pending ones, the rows of named orders, which event ids the
 * ledger holds, and the status outbox's rows. Reads only: nothing here writes.
 */
import { inTenantTransaction, type Db } from '../adapters/store/db.js';
import { CONSUMER_NAME, type FulfilmentRow } from '../vocabulary/order.js';
import type { OutboxSeen } from './status.js';

/** Ids per ledger or row look-up. */
const CHUNK = 1000;

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

/** The tenant's orders whose row changed in [since, until). */
export function rowsChanged(db: Db, tenantId: string, since: Date, until: Date): Promise<FulfilmentRow[]> {
  return inTenantTransaction(db, tenantId, async (tx) => {
    const res = await tx.query<FulfilmentRow>(
      'SELECT * FROM fulfilments WHERE tenant_id = $1 AND updated_at >= $2 AND updated_at < $3 ORDER BY order_id',
      [tenantId, since, until],
    );
    return res.rows;
  });
}

/** The tenant's pending orders whose row last changed before `until`, however long ago. */
export function pendingRows(db: Db, tenantId: string, until: Date): Promise<FulfilmentRow[]> {
  return inTenantTransaction(db, tenantId, async (tx) => {
    const res = await tx.query<FulfilmentRow>(
      "SELECT * FROM fulfilments WHERE tenant_id = $1 AND status = 'pending' AND updated_at < $2 ORDER BY order_id",
      [tenantId, until],
    );
    return res.rows;
  });
}

/** The rows of `orderIds` the tenant holds. */
export function rowsOf(db: Db, tenantId: string, orderIds: readonly string[]): Promise<FulfilmentRow[]> {
  return inTenantTransaction(db, tenantId, async (tx) => {
    const rows: FulfilmentRow[] = [];
    for (const ids of chunks([...new Set(orderIds)])) {
      const res = await tx.query<FulfilmentRow>(
        'SELECT * FROM fulfilments WHERE tenant_id = $1 AND order_id = ANY($2::text[])',
        [tenantId, ids],
      );
      rows.push(...res.rows);
    }
    return rows;
  });
}

/** Which of `eventIds` the tenant's ledger holds. */
export function ledgerHolds(db: Db, tenantId: string, eventIds: readonly string[]): Promise<Set<string>> {
  return inTenantTransaction(db, tenantId, async (tx) => {
    const held = new Set<string>();
    for (const ids of chunks([...new Set(eventIds)])) {
      const res = await tx.query<{ event_id: string }>(
        'SELECT event_id FROM processed_events WHERE consumer = $1 AND tenant_id = $2 AND event_id = ANY($3::text[])',
        [CONSUMER_NAME, tenantId, ids],
      );
      for (const r of res.rows) held.add(r.event_id);
    }
    return held;
  });
}

/** The tenant's outbox rows of `orderIds`, and every one of its rows created or sent in [since, until). */
export function outboxRows(
  db: Db,
  tenantId: string,
  q: { orderIds: readonly string[]; since: Date; until: Date },
): Promise<OutboxSeen[]> {
  return inTenantTransaction(db, tenantId, async (tx) => {
    const res = await tx.query<{
      id: string;
      topic: string;
      order_id: string;
      event_id: string;
      event_type: string;
      created_at: Date;
      sent_at: Date | null;
    }>(
      `SELECT id, topic, order_id, event_id, event_type, created_at, sent_at FROM status_outbox
       WHERE tenant_id = $1 AND (order_id = ANY($2::text[])
         OR (created_at >= $3 AND created_at < $4) OR (sent_at >= $3 AND sent_at < $4))
       ORDER BY id`,
      [tenantId, [...new Set(q.orderIds)], q.since, q.until],
    );
    return res.rows.map((r) => ({
      id: r.id,
      topic: r.topic,
      tenantId,
      orderId: r.order_id,
      eventId: r.event_id,
      type: r.event_type,
      createdAt: r.created_at,
      sentAt: r.sent_at,
    }));
  });
}
