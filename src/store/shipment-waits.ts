/**
 * Orders whose shipment waits for the warehouse (migration 008_shipment_waits.sql): the wait an attempt records on
 * its order's row, the resumer's wake-ups across tenants, the counts for the metrics, and the operators' pauses.
 *
 * A wait is not a status: the order stays `pending`, and leaving `pending` for any reason ends the wait (the
 * migration's trigger clears it).
 */
import { inTenantTransaction, type Db } from '../db.js';

/** One waiting order, as release_waiting_orders() hands it to a resumer. */
export interface WaitingOrder {
  tenantId: string;
  orderId: string;
  waitingSince: Date;
  waitedAt: Date;
}

/** How many orders wait, since when, and how many of them an operator's pause holds. */
export interface WaitSummary {
  orders: number;
  oldest: Date | undefined;
  paused: number;
}

/** An operator's pause of shipping, in force or ended. */
export interface ShippingPause {
  id: string;
  /** Undefined: every tenant. */
  tenantId: string | undefined;
  pausedAt: Date;
  pausedBy: string;
  reason: string;
  /** `shipping resume --rate` under way: shipments go out, only that command wakes the orders the pause held. */
  releasingAt?: Date;
  resumedAt?: Date;
  resumedBy?: string;
  resumeReason?: string;
}

/**
 * Records that one of the order's attempts, on a worker of `taskQueue`, found the warehouse down (or shipping paused):
 * the wait begins now unless it had begun already. Returns when it began (the store's clock), or undefined when the order is no longer pending.
 */
export async function recordWait(
  db: Db,
  tenantId: string,
  orderId: string,
  reason: string,
  taskQueue: string,
): Promise<Date | undefined> {
  return inTenantTransaction(db, tenantId, async (tx) => {
    const res = await tx.query<{ waiting_since: Date }>(
      `UPDATE fulfilments SET waiting_since = COALESCE(waiting_since, now()), waited_at = clock_timestamp(), waiting_reason = $3,
              waiting_task_queue = $4
        WHERE tenant_id = $1 AND order_id = $2 AND status = 'pending'
        RETURNING waiting_since`,
      [tenantId, orderId, reason.slice(0, 500), taskQueue],
    );
    return res.rows[0]?.waiting_since;
  });
}

/**
 * Marks at most `max` of the oldest waiting orders released and returns them, oldest first (see the migration): of
 * every tenant no pause holds; with `tenantId`, of that tenant only; with `despitePause`, the pause of exactly that
 * scope (the tenant's, or without a tenant the one for every tenant) does not hold them, any other still does; with
 * `taskQueue`, only orders whose wait a worker of that task queue recorded.
 */
export async function releaseWaitingOrders(
  db: Db,
  max: number,
  opts: { tenantId?: string; despitePause?: boolean; taskQueue?: string } = {},
): Promise<WaitingOrder[]> {
  const res = await db.query<{ tenant_id: string; order_id: string; waiting_since: Date; waited_at: Date }>(
    'SELECT tenant_id, order_id, waiting_since, waited_at FROM release_waiting_orders($1, $2, $3, $4)',
    [max, opts.tenantId ?? null, opts.despitePause ?? false, opts.taskQueue ?? null],
  );
  return res.rows
    .map((r) => ({ tenantId: r.tenant_id, orderId: r.order_id, waitingSince: r.waiting_since, waitedAt: r.waited_at }))
    .sort((a, b) => a.waitingSince.getTime() - b.waitingSince.getTime());
}

export async function waitSummary(db: Db): Promise<WaitSummary> {
  const row = (
    await db.query<{ orders: string; oldest: Date | null; paused: string }>(
      'SELECT orders, oldest, paused FROM orders_waiting_summary()',
    )
  ).rows[0];
  return { orders: Number(row?.orders ?? 0), oldest: row?.oldest ?? undefined, paused: Number(row?.paused ?? 0) };
}

type PauseRow = {
  id: string;
  tenant_id: string | null;
  paused_at: Date;
  paused_by: string;
  reason: string;
  releasing_at: Date | null;
  resumed_at: Date | null;
  resumed_by: string | null;
  resume_reason: string | null;
};

function toPause(r: PauseRow): ShippingPause {
  return {
    id: String(r.id),
    tenantId: r.tenant_id ?? undefined,
    pausedAt: r.paused_at,
    pausedBy: r.paused_by,
    reason: r.reason,
    ...(r.releasing_at ? { releasingAt: r.releasing_at } : {}),
    ...(r.resumed_at
      ? { resumedAt: r.resumed_at, resumedBy: r.resumed_by ?? undefined, resumeReason: r.resume_reason ?? undefined }
      : {}),
  };
}

/** The pauses in force now (at most one for every tenant, and one per tenant). */
export async function pausesInForce(db: Pick<Db, 'query'>): Promise<ShippingPause[]> {
  return (
    await db.query<PauseRow>('SELECT * FROM shipping_pauses WHERE resumed_at IS NULL ORDER BY paused_at')
  ).rows.map(toPause);
}

/**
 * The pause that holds `tenantId`'s shipments among `pauses`: its own, else one for every tenant. A pause being
 * released (`shipping resume --rate` under way) no longer holds shipments.
 */
export function pauseFor(pauses: readonly ShippingPause[], tenantId: string): ShippingPause | undefined {
  const holding = pauses.filter((p) => p.releasingAt === undefined);
  return holding.find((p) => p.tenantId === tenantId) ?? holding.find((p) => p.tenantId === undefined);
}
