/**
 * Orders stranded on a version nobody runs: every WORKER_VERSION_CHECK_SECONDS the worker reads its deployment's
 * versions, which of them have live workers (src/adapters/deployment/live-workers.ts), and for each one without, how
 * many open runs are pinned to it (visibility, as `fulfilment deployment show` counts them). It sets
 * fulfilment_orders_pinned_without_workers{deployment,build_id}: those runs, 0 for a version with pollers. A pinned run
 * only ever runs on its own version, so such orders wait — their events, timers and wake-ups queue in Temporal — until
 * a worker of that version polls again (FulfilmentOrdersPinnedWithoutWorkers).
 *
 * Cost per reading: one DescribeWorkerDeployment, one DescribeWorkerDeploymentVersion per version that ever took new
 * runs, one DescribeTaskQueue per task queue, and one visibility count per version without pollers. Every worker of
 * the deployment computes the same numbers (the alert takes the max). A failed reading is logged once per failure
 * streak and leaves the last values.
 */
import type { Client } from '@temporalio/client';
import type { Logger } from '../../base/log.js';
import type { Metrics } from '../../base/metrics.js';
import { describeDeployment, openRunsByVersion } from '../../adapters/deployment/routing.js';
import { pollersByVersion, versionsToCheck } from '../../adapters/deployment/live-workers.js';

type PinnedMetrics = Pick<Metrics, 'ordersPinnedWithoutWorkers'>;

/** Open runs pinned to each checked version that has no live workers; 0 for one with pollers. */
export async function countPinnedWithoutWorkers(
  client: Client,
  namespace: string,
  deployment: string,
): Promise<Map<string, number>> {
  const view = await describeDeployment(client.workflowService, namespace, deployment);
  if (!view) return new Map();
  const checked = versionsToCheck(view);
  const pollers = await pollersByVersion(client.workflowService, namespace, deployment, checked);
  const unpolled = checked.filter((id) => (pollers.get(id)?.pollers ?? 0) === 0);
  const open = unpolled.length > 0 ? await openRunsByVersion(client, deployment, unpolled) : new Map<string, number>();
  return new Map(checked.map((id) => [id, open.get(id) ?? 0]));
}

/**
 * Reads once at once, then every `seconds`, until the returned stop is called. A reading never overlaps the last;
 * stop aborts the one in flight (its Temporal calls, which the client would otherwise retry on a closing
 * connection) and waits for it to end.
 */
export function watchPinnedWithoutWorkers(opts: {
  client: Client;
  namespace: string;
  deployment: string;
  metrics: PinnedMetrics;
  logger: Logger;
  seconds: number;
}): () => Promise<void> {
  const { client, namespace, deployment, metrics, logger } = opts;
  const gauge = metrics.ordersPinnedWithoutWorkers;
  const stopping = new AbortController();
  let shown = new Set<string>();
  let failing = false;
  let reading: Promise<void> | undefined;
  const read = async () => {
    const counts = await client.withAbortSignal(stopping.signal, () =>
      countPinnedWithoutWorkers(client, namespace, deployment),
    );
    for (const [buildId, n] of counts) gauge.set({ deployment, build_id: buildId }, n);
    // A version retired (or never seen again) leaves the metric.
    for (const gone of [...shown].filter((id) => !counts.has(id))) gauge.remove({ deployment, build_id: gone });
    shown = new Set(counts.keys());
    const stranded = [...counts].filter(([, n]) => n > 0);
    if (stranded.length > 0)
      logger.warn(
        { deployment, stranded: Object.fromEntries(stranded) },
        'open orders are pinned to versions with no live workers: they wait until a worker of their version polls',
      );
  };
  const poll = () => {
    if (reading || stopping.signal.aborted) return;
    reading = read()
      .then(
        () => {
          if (failing) logger.info({ deployment }, 'checking the versions for live workers works again');
          failing = false;
        },
        (err: unknown) => {
          if (!failing && !stopping.signal.aborted)
            logger.warn(
              { deployment, err: (err as Error).message },
              'could not check the versions for live workers; fulfilment_orders_pinned_without_workers keeps its last values',
            );
          failing = true;
        },
      )
      .finally(() => (reading = undefined));
  };
  poll();
  const timer = setInterval(poll, opts.seconds * 1000);
  timer.unref();
  return async () => {
    clearInterval(timer);
    stopping.abort();
    await reading;
  };
}
