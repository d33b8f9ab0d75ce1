/**
 * What the operator's order commands read from the store, as the runtime role and scoped to the tenant (row-level
 * security): one order's row, and a tenant's orders held for a person (failed, recall-failed) since a time — the bulk
 * retry's selection. The store is the truth these commands decide on; the workflow checks it again before acting.
 */
import { runtimeConnection } from '../../adapters/store/connection.js';
import { createDb, inTenantTransaction, type Db } from '../../adapters/store/db.js';
import { readFulfilment } from '../../adapters/store/fulfilments.js';
import type { StoredStatus, FulfilmentRow } from '../../vocabulary/order.js';
import type { CliContext } from '../context.js';

/** Statuses an operator acts on: `order retry` takes failed orders, `order resolve` recall-failed ones. */
export type HeldStatus = Extract<StoredStatus, 'failed' | 'recall-failed'>;

/** One held order as the bulk retry lists it. */
export interface HeldOrder {
  tenantId: string;
  orderId: string;
  status: HeldStatus;
  /** When it was held (failed_at; updated_at for rows held before that column existed). */
  heldSince: Date;
  failureReason: string | null;
  retryCount: number;
}

/** A tenant's held orders to select. */
export interface HeldSelection {
  tenantId: string;
  status: HeldStatus;
  /** Held at or after this time; all when absent. */
  since?: Date;
  /** Most orders selected, oldest held first. */
  limit: number;
}

/** Runs `work` on a one-connection pool as the runtime role, closing it after. */
export async function withStore<T>(ctx: CliContext, work: (db: Db) => Promise<T>): Promise<T> {
  const db = createDb(runtimeConnection(ctx.config), 1);
  try {
    return await work(db);
  } finally {
    await db.end().catch(() => undefined);
  }
}

/** The order's row, or undefined when the store holds no such order for the tenant. */
export function readOrderRow(db: Db, tenantId: string, orderId: string): Promise<FulfilmentRow | undefined> {
  return inTenantTransaction(db, tenantId, (tx) => readFulfilment(tx, tenantId, orderId));
}

/** The tenant's orders held in `status` since `since`, oldest first, at most `limit`. */
export async function selectHeldOrders(db: Db, sel: HeldSelection): Promise<HeldOrder[]> {
  const rows = await inTenantTransaction(db, sel.tenantId, (tx) =>
    tx.query<{
      order_id: string;
      status: HeldStatus;
      held_since: Date;
      failure_reason: string | null;
      retry_count: number;
    }>(
      `SELECT order_id, status, COALESCE(failed_at, updated_at) AS held_since, failure_reason, retry_count
         FROM fulfilments
        WHERE tenant_id = $1 AND status = $2 AND ($3::timestamptz IS NULL OR COALESCE(failed_at, updated_at) >= $3)
        ORDER BY COALESCE(failed_at, updated_at), order_id
        LIMIT $4`,
      [sel.tenantId, sel.status, sel.since ?? null, sel.limit],
    ),
  );
  return rows.rows.map((r) => ({
    tenantId: sel.tenantId,
    orderId: r.order_id,
    status: r.status,
    heldSince: r.held_since,
    failureReason: r.failure_reason,
    retryCount: r.retry_count,
  }));
}
