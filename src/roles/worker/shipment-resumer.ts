/**
 * The shipment resumer: wakes orders whose shipment waits for the warehouse (src/adapters/store/shipment-waits.ts), so
 * that an outage ends by itself, paced, and the warehouse meets a bounded number of requests however many orders wait.
 *
 * Every worker runs one. Each second it reads how many orders wait (the gauges), then, while some wait and no pause
 * holds them:
 * - when this process's warehouse client has seen the warehouse answer since it last failed (its circuit closed) —
 *   or, in a brownout, answered some of its recent calls — it wakes up to WAREHOUSE_RESUME_PER_SECOND of the oldest,
 *   each with a resumeShipment signal; their shipments go out as they would have, under the same keys;
 * - otherwise it wakes only the oldest, once per WAREHOUSE_PROBE_SECONDS: that order's shipment is the probe. If the
 *   warehouse answers, the client's circuit closes and the rest follow at the paced rate; if not, the order waits
 *   again (and stays the oldest).
 * release_waiting_orders() marks each order it hands out, so no two workers wake the same order. The mark is a lease
 * (migration 009): an order woken since its last wait is not woken again while it tries the warehouse, but one that
 * neither waited again nor left `pending` within WAKE_LEASE_SECONDS (doubling per release, at most 15 min) is released
 * again — so a wake-up lost between the mark and the signal (this process killed mid-round, Temporal unreachable) is
 * sent again. A signal that fails hands its order back at once (src/roles/worker/wake-orders.ts) and the round goes on
 * with the others. A resumer wakes only orders whose wait a worker of its own task queue recorded: the warehouse it
 * judges is theirs (another deployment on the same database has its own).
 */
import type { Client } from '@temporalio/client';
import type { Logger } from '../../base/log.js';
import type { Metrics } from '../../base/metrics.js';
import type { Db } from '../../adapters/store/db.js';
import { releaseWaitingOrders, waitSummary, type WaitSummary } from '../../adapters/store/shipment-waits.js';
import { wakeReleased } from './wake-orders.js';
import type { WarehouseHealth } from '../../adapters/warehouse/client.js';

export interface ShipmentResumerOptions {
  db: Db;
  client: Client;
  /** This process's view of the warehouse (its client's circuit and last answer). */
  warehouse: { health(): WarehouseHealth };
  /** Seconds between probes while the warehouse is not seen answering (WAREHOUSE_PROBE_SECONDS). */
  probeSeconds: number;
  /** Orders woken per second once it answers (WAREHOUSE_RESUME_PER_SECOND). */
  perSecond: number;
  /** The task queue of this process's worker: only orders whose wait one of its workers recorded are woken. */
  taskQueue: string;
  /** Seconds a release holds an order before it is released again (WAKE_LEASE_SECONDS). Default 60. */
  leaseSeconds?: number;
  metrics: Pick<
    Metrics,
    | 'ordersWaiting'
    | 'ordersWaitingOldest'
    | 'ordersWaitingPaused'
    | 'ordersWaitingRunGone'
    | 'shipmentsResumed'
    | 'wakeUpsFailed'
  >;
  logger: Logger;
  /** Milliseconds between rounds. Default 1000. */
  tickMs?: number;
}

/**
 * True when this process's circuit is closed and the warehouse answers: it answered since its last failure, or it
 * answered some of the calls of the client's brownout window (a brownout: answers and failures interleave, and the
 * last call may be either). Woken orders then retry; while the window says the warehouse fails for everyone, one whose
 * call fails waits again, its attempts unspent, and the consecutive breaker still stops the rounds if it fails on.
 */
export function warehouseAnswers(h: WarehouseHealth): boolean {
  if (h.circuit !== 'closed' || h.lastAnswerAt === 0) return false;
  return h.lastAnswerAt >= h.lastFailureAt || h.recent.calls > h.recent.failures;
}

/** How many orders a round wakes, and why: none, the probe (one), or a paced share. */
export function roundPlan(
  summary: WaitSummary,
  answers: boolean,
  now: number,
  lastProbeAt: number,
  opts: { probeSeconds: number; perSecond: number; tickMs: number },
): { wake: number; reason: 'probe' | 'resume' } | undefined {
  if (summary.orders - summary.paused <= 0) return undefined;
  if (answers) return { wake: Math.max(1, Math.round((opts.perSecond * opts.tickMs) / 1000)), reason: 'resume' };
  if (now - lastProbeAt < opts.probeSeconds * 1000) return undefined;
  return { wake: 1, reason: 'probe' };
}

export interface ShipmentResumer {
  /** Ends the rounds; resolves once the current one finished. */
  stop(): Promise<void>;
}

export function startShipmentResumer(opts: ShipmentResumerOptions): ShipmentResumer {
  const tickMs = opts.tickMs ?? 1000;
  const { metrics, logger } = opts;
  let lastProbeAt = -Infinity;
  let failing = false;
  let stopped = false;
  let round: Promise<void> | undefined;

  async function once(): Promise<void> {
    const summary = await waitSummary(opts.db);
    metrics.ordersWaiting.set(summary.orders);
    metrics.ordersWaitingPaused.set(summary.paused);
    metrics.ordersWaitingRunGone.set(summary.runGone);
    metrics.ordersWaitingOldest.set(summary.oldest ? Math.max(0, (Date.now() - summary.oldest.getTime()) / 1000) : 0);
    const now = Date.now();
    const plan = roundPlan(summary, warehouseAnswers(opts.warehouse.health()), now, lastProbeAt, {
      probeSeconds: opts.probeSeconds,
      perSecond: opts.perSecond,
      tickMs,
    });
    if (!plan) return;
    if (plan.reason === 'probe') lastProbeAt = now;
    const orders = await releaseWaitingOrders(opts.db, plan.wake, {
      taskQueue: opts.taskQueue,
      ...(opts.leaseSeconds !== undefined ? { leaseSeconds: opts.leaseSeconds } : {}),
    });
    if (orders.length === 0) return;
    const tally = await wakeReleased(opts, orders, ({ tenantId, orderId }) => {
      metrics.shipmentsResumed.inc({ reason: plan.reason });
      logger.info(
        { tenantId, orderId, reason: plan.reason },
        plan.reason === 'probe'
          ? 'woke the oldest waiting order to probe the warehouse'
          : 'woke a waiting order: the warehouse answers again',
      );
    });
    if (tally.gone.length > 0) metrics.wakeUpsFailed.inc({ reason: 'run-gone' }, tally.gone.length);
    if (tally.failed.length > 0) {
      metrics.wakeUpsFailed.inc({ reason: 'signal-failed' }, tally.failed.length);
      // The round counts as failed (logged once per spell); the orders were handed back for the next one.
      throw new Error(
        `${tally.failed.length} of ${orders.length} wake-up(s) could not be sent and were handed back (${tally.error})`,
      );
    }
  }

  const timer = setInterval(() => {
    // A round that outlasts the tick (a slow store, many signals) is not overlapped: the next tick skips.
    if (stopped || round) return;
    round = once()
      .then(
        () => {
          if (failing) logger.info('the shipment resumer works again');
          failing = false;
        },
        (err: unknown) => {
          if (!failing)
            logger.warn({ err: (err as Error).message }, 'shipment resumer round failed; trying again next round');
          failing = true;
        },
      )
      .finally(() => (round = undefined));
  }, tickMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await round;
    },
  };
}
