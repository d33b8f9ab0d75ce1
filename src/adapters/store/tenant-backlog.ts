/**
 * One tenant's orders the store holds unsettled, counted in a transaction scoped to the tenant (row-level security):
 * pending and being shipped, pending and waiting for the warehouse (an outage, or a pause of shipping), held as
 * failed, held as recall-failed; and the oldest of them. Counts and times only: no order id leaves it.
 *
 * Settled is shipped or cancelled: nothing more happens to such an order unless an event or an operator asks. The
 * count reads every row of the tenant (the primary key's tenant prefix), and says how many there are.
 */
import { inTenantTransaction, type Db } from './db.js';

export interface TenantBacklog {
  /** Every order the store holds for the tenant, settled or not. */
  orders: number;
  /** Pending and not waiting: being placed or shipped now (its run is at it, or gone: `order show`). */
  pending: number;
  /** Pending and waiting for the warehouse: down for everyone, or shipping paused (`waitingForPause` of them). */
  waiting: number;
  /** Of the waiting ones, those whose last wait was for an operator's pause. */
  waitingForPause: number;
  /** Held as failed: shipping gave up or the warehouse refused (`order retry`). */
  failed: number;
  /** Cancelled, their recall refused: held for a person (`order resolve`). */
  recallFailed: number;
  /** When the oldest of them was placed (its row written, for a row without a placement); null when none. */
  oldestSince: Date | null;
  /** Its age by the store's clock, seconds; 0 when none. */
  oldestAgeSeconds: number;
}

/** The statuses of an order that is not settled. */
const UNSETTLED = "('pending', 'failed', 'recall-failed')";

export async function tenantBacklog(db: Db, tenantId: string): Promise<TenantBacklog> {
  const row = await inTenantTransaction(db, tenantId, async (tx) => {
    const res = await tx.query<{
      orders: string;
      pending: string;
      waiting: string;
      waiting_for_pause: string;
      failed: string;
      recall_failed: string;
      oldest: Date | null;
      oldest_age: number | null;
    }>(
      `SELECT count(*) AS orders,
              count(*) FILTER (WHERE status = 'pending' AND waiting_since IS NULL) AS pending,
              count(*) FILTER (WHERE status = 'pending' AND waiting_since IS NOT NULL) AS waiting,
              count(*) FILTER (WHERE status = 'pending' AND waiting_since IS NOT NULL AND waiting_for = 'pause')
                AS waiting_for_pause,
              count(*) FILTER (WHERE status = 'failed') AS failed,
              count(*) FILTER (WHERE status = 'recall-failed') AS recall_failed,
              min(COALESCE(placed_at, created_at)) FILTER (WHERE status IN ${UNSETTLED}) AS oldest,
              extract(epoch FROM now() - min(COALESCE(placed_at, created_at)) FILTER (WHERE status IN ${UNSETTLED}))::float8
                AS oldest_age
         FROM fulfilments
        WHERE tenant_id = $1`,
      [tenantId],
    );
    return res.rows[0];
  });
  return {
    orders: Number(row?.orders ?? 0),
    pending: Number(row?.pending ?? 0),
    waiting: Number(row?.waiting ?? 0),
    waitingForPause: Number(row?.waiting_for_pause ?? 0),
    failed: Number(row?.failed ?? 0),
    recallFailed: Number(row?.recall_failed ?? 0),
    oldestSince: row?.oldest ?? null,
    oldestAgeSeconds: Math.max(0, row?.oldest_age ?? 0),
  };
}
