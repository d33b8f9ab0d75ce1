/**
 * Orders whose shipment waits for the warehouse (migration 008_shipment_waits.sql): the wait an attempt records on
 * its order's row, the resumer's wake-ups across tenants, the counts for the metrics, and the operators' pauses.
 *
 * A wait is not a status: the order stays `pending`, and leaving `pending` for any reason ends the wait (the
 * migration's trigger clears it).
 */
import { inTenantTransaction, type Db } from './db.js';

/** One waiting order, as release_waiting_orders() hands it to a resumer. */
export interface WaitingOrder {
  tenantId: string;
  orderId: string;
  waitingSince: Date;
  waitedAt: Date;
  /** The release's mark, exactly as the store holds it (microseconds): unreleaseWaitingOrder names it. */
  releaseMark: string;
}

/** What an order's wait is for: the warehouse down for everyone, or an operator's pause of shipping. */
export type WaitingFor = 'outage' | 'pause';

/** What recordWait found and left. */
export interface RecordedWait {
  /** When the wait began (the store's clock). */
  since: Date;
  /** True when the run said it was already waiting but the row held no wait (lost: a restore, a manual fix). */
  restored: boolean;
}

/** How many orders wait, since when, how many of them an operator's pause holds, and how many have no run to wake. */
export interface WaitSummary {
  orders: number;
  oldest: Date | undefined;
  paused: number;
  /** Set aside because the resumer found their run gone (migration 010): no wake-up reaches them until repaired. */
  runGone: number;
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
  /** Until when the running resume holds the release (renewed each round); past it, the pause is ended for it. */
  releasingUntil?: Date;
  resumedAt?: Date;
  resumedBy?: string;
  resumeReason?: string;
}

/**
 * Records that one of the order's attempts, on a worker of `taskQueue`, found the warehouse down (or shipping paused):
 * the wait begins now unless it had begun already — or, when the run says it has waited since `runWaitingSince` and
 * the row holds no wait (it was lost), then. Undefined when the order is not pending in the store.
 */
export async function recordWait(
  db: Db,
  wait: {
    tenantId: string;
    orderId: string;
    reason: string;
    taskQueue: string;
    waitingFor: WaitingFor;
    runWaitingSince?: string;
  },
): Promise<RecordedWait | undefined> {
  return inTenantTransaction(db, wait.tenantId, async (tx) => {
    const res = await tx.query<{ waiting_since: Date; restored: boolean }>(
      `WITH before AS (
         SELECT tenant_id, order_id, waiting_since IS NULL AS fresh FROM fulfilments
          WHERE tenant_id = $1 AND order_id = $2 AND status = 'pending' FOR UPDATE)
       UPDATE fulfilments f
          SET waiting_since = COALESCE(f.waiting_since, $6::timestamptz, now()), waited_at = clock_timestamp(),
              waiting_reason = $3, waiting_task_queue = $4, waiting_for = $5
         FROM before
        WHERE f.tenant_id = before.tenant_id AND f.order_id = before.order_id
        RETURNING f.waiting_since, before.fresh AND $6::timestamptz IS NOT NULL AS restored`,
      [
        wait.tenantId,
        wait.orderId,
        wait.reason.slice(0, 500),
        wait.taskQueue,
        wait.waitingFor,
        wait.runWaitingSince ?? null,
      ],
    );
    const row = res.rows[0];
    return row ? { since: row.waiting_since, restored: row.restored } : undefined;
  });
}

/** How long a release holds an order before it is released again, unless it waited again (migration 009). */
export const DEFAULT_WAKE_LEASE_SECONDS = 60;

/**
 * Marks at most `max` of the oldest waiting orders released and returns them, oldest first (migrations 008, 009): of
 * every tenant no pause holds; with `tenantId`, of that tenant only; with `despitePause`, the pause of exactly that
 * scope (the tenant's, or without a tenant the one for every tenant) does not hold them, any other still does; with
 * `taskQueue`, only orders whose wait a worker of that task queue recorded; with `waitingFor`, only orders whose last
 * wait was for that. An order released before is released again once its lease (`leaseSeconds`, doubling with each
 * release, at most 15 minutes or `leaseSeconds` when longer: migration 010) ran out without it waiting again: a lost
 * wake-up is sent again. An order set aside because its run is gone (markWaitingOrderRunGone) is not.
 */
export async function releaseWaitingOrders(
  db: Db,
  max: number,
  opts: {
    tenantId?: string;
    despitePause?: boolean;
    taskQueue?: string;
    leaseSeconds?: number;
    waitingFor?: WaitingFor;
  } = {},
): Promise<WaitingOrder[]> {
  const res = await db.query<{
    tenant_id: string;
    order_id: string;
    waiting_since: Date;
    waited_at: Date;
    release_mark: string;
  }>(
    `SELECT tenant_id, order_id, waiting_since, waited_at, released_at::text AS release_mark
       FROM release_waiting_orders($1, $2, $3, $4, $5, $6)`,
    [
      max,
      opts.tenantId ?? null,
      opts.despitePause ?? false,
      opts.taskQueue ?? null,
      opts.leaseSeconds ?? DEFAULT_WAKE_LEASE_SECONDS,
      opts.waitingFor ?? null,
    ],
  );
  return res.rows
    .map((r) => ({
      tenantId: r.tenant_id,
      orderId: r.order_id,
      waitingSince: r.waiting_since,
      waitedAt: r.waited_at,
      releaseMark: r.release_mark,
    }))
    .sort((a, b) => a.waitingSince.getTime() - b.waitingSince.getTime());
}

/**
 * Hands back an order whose wake-up could not be sent, so the next round releases it at once rather than after its
 * lease; false when it was released again (or stopped waiting) meanwhile.
 */
export async function unreleaseWaitingOrder(db: Db, order: WaitingOrder): Promise<boolean> {
  return actOnRelease(db, 'unrelease_waiting_order', order);
}

/**
 * Sets aside an order the resumer released but found no run to wake (terminated or deleted by hand): it is not released
 * again until a run of it waits again or it leaves `pending` (migration 010). False when it was released again (or
 * stopped waiting) meanwhile.
 */
export async function markWaitingOrderRunGone(db: Db, order: WaitingOrder): Promise<boolean> {
  return actOnRelease(db, 'mark_waiting_order_run_gone', order);
}

/** Calls the store's function `fn` on the order's release, named by its exact mark; true when it acted. */
async function actOnRelease(
  db: Db,
  fn: 'unrelease_waiting_order' | 'mark_waiting_order_run_gone',
  order: WaitingOrder,
): Promise<boolean> {
  const res = await db.query<{ ok: boolean }>(`SELECT ${fn}($1, $2, $3::timestamptz) AS ok`, [
    order.tenantId,
    order.orderId,
    order.releaseMark,
  ]);
  return res.rows[0]?.ok === true;
}

export async function waitSummary(db: Db): Promise<WaitSummary> {
  const row = (
    await db.query<{ orders: string; oldest: Date | null; paused: string; run_gone: string }>(
      'SELECT orders, oldest, paused, run_gone FROM orders_waiting_summary()',
    )
  ).rows[0];
  return {
    orders: Number(row?.orders ?? 0),
    oldest: row?.oldest ?? undefined,
    paused: Number(row?.paused ?? 0),
    runGone: Number(row?.run_gone ?? 0),
  };
}

type PauseRow = {
  id: string;
  tenant_id: string | null;
  paused_at: Date;
  paused_by: string;
  reason: string;
  releasing_at: Date | null;
  releasing_until: Date | null;
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
    ...(r.releasing_until ? { releasingUntil: r.releasing_until } : {}),
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
