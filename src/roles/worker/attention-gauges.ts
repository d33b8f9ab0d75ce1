/**
 * The orders every tenant holds for a person, as metrics: every WORKER_ATTENTION_POLL_SECONDS the worker asks the
 * store's orders_needing_attention() (migration 006 — counts and the oldest time per status, over every tenant,
 * through one narrow door; no tenant's rows) and sets fulfilment_orders_needing_attention{status} and
 * fulfilment_orders_needing_attention_oldest_seconds{status}. A failed poll is logged and leaves the last values.
 */
import type { Db } from '../../adapters/store/db.js';
import type { Logger } from '../../base/log.js';
import type { Metrics } from '../../base/metrics.js';

/** The metrics this module sets. */
type AttentionMetrics = Pick<Metrics, 'ordersNeedingAttention' | 'ordersNeedingAttentionOldest'>;

/** The statuses that need a person: failed (`order retry`) and recall-failed (`order resolve`). */
export const HELD_STATUSES = ['failed', 'recall-failed'] as const;

/** Reads the counts once and sets the gauges (every held status, 0 when none). */
export async function pollOrdersNeedingAttention(db: Db, metrics: AttentionMetrics, now = Date.now()): Promise<void> {
  const res = await db.query<{ status: string; orders: string; oldest: Date | null }>(
    'SELECT status, orders, oldest FROM orders_needing_attention()',
  );
  for (const status of HELD_STATUSES) {
    const row = res.rows.find((r) => r.status === status);
    metrics.ordersNeedingAttention.set({ status }, row ? Number(row.orders) : 0);
    metrics.ordersNeedingAttentionOldest.set(
      { status },
      row?.oldest ? Math.max(0, (now - row.oldest.getTime()) / 1000) : 0,
    );
  }
}

/** Polls every `seconds` until the returned stop is called (the first poll at once). */
export function watchOrdersNeedingAttention(
  db: Db,
  metrics: AttentionMetrics,
  logger: Logger,
  seconds: number,
): () => void {
  let failing = false;
  const poll = () =>
    pollOrdersNeedingAttention(db, metrics).then(
      () => {
        if (failing) logger.info('counting orders that need a person works again');
        failing = false;
      },
      (err: unknown) => {
        if (!failing)
          logger.warn(
            { err: (err as Error).message },
            'could not count the orders that need a person; the metrics keep their last values',
          );
        failing = true;
      },
    );
  void poll();
  const timer = setInterval(() => void poll(), seconds * 1000);
  timer.unref();
  return () => clearInterval(timer);
}
