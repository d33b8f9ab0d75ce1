/**
 * The worker's version — its deployment and build id — and the place it takes in the deployment once it polls, with
 * the readers that follow the deployment's routing and the orders pinned to versions no worker polls for.
 */
import { hostname } from 'node:os';
import type { NativeConnection } from '@temporalio/worker';
import { resolveBuildId } from '../../adapters/deployment/build-id.js';
import type { Lifecycle } from '../../base/lifecycle.js';
import type { RoleContext } from '../role.js';
import { PermanentStartupError } from '../../base/startup.js';
import { watchPinnedWithoutWorkers } from './pinned-without-workers.js';
import { takeVersionPlace, watchVersionRouting, type VersionRoutingWatch } from './version-rollout.js';

export interface WorkerVersion {
  deployment: string;
  buildId: string;
}

/** The worker's version: WORKER_DEPLOYMENT_NAME (default the task queue) and the build id (src/adapters/deployment/build-id.ts). */
export function workerVersion(config: RoleContext['config']): WorkerVersion {
  try {
    return {
      deployment: config.WORKER_DEPLOYMENT_NAME ?? config.TEMPORAL_TASK_QUEUE,
      buildId: resolveBuildId(config.WORKER_BUILD_ID),
    };
  } catch (err) {
    throw new PermanentStartupError((err as Error).message);
  }
}

/**
 * Once the worker polls, its version takes its place in the deployment (WORKER_VERSION_ROLLOUT), and the routing is
 * read again every few seconds: the bridge beside it starts orders eagerly only while this version takes them all.
 */
export async function takePlace(
  ctx: RoleContext,
  connection: NativeConnection,
  version: WorkerVersion,
  life: Lifecycle,
): Promise<VersionRoutingWatch> {
  const { config, logger, metrics, signal } = ctx;
  // Part of start-up: the process reports ready only once it is done.
  const identity = `${hostname()}/${process.pid}`;
  const place = await takeVersionPlace({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    ...version,
    rollout: config.WORKER_VERSION_ROLLOUT,
    identity,
    logger,
    ...(signal ? { signal } : {}),
  });
  const waits = place.outcome === 'waiting' || place.outcome === 'ramping';
  logger[waits ? 'warn' : 'info'](
    { ...version, outcome: place.outcome, current: place.current, rollout: config.WORKER_VERSION_ROLLOUT },
    waits
      ? `worker version ${version.buildId} is not current (current: ${place.current ?? 'none'}): it runs the orders pinned to it${place.outcome === 'ramping' ? ' and its ramp’s share of new ones' : ''}; \`fulfilment deployment current ${version.buildId}\` makes it current`
      : `worker version ${version.buildId} is current in deployment ${version.deployment}`,
  );
  const gauge = metrics.workerVersion.labels({ deployment: version.deployment, build_id: version.buildId });
  gauge.set(place.outcome === 'made current' || place.outcome === 'current' ? 1 : 0);
  const watch = watchVersionRouting({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    place,
    rollout: config.WORKER_VERSION_ROLLOUT,
    identity,
    logger,
    onReading: (takes) => gauge.set(takes ? 1 : 0),
  });
  life.defer('deployment routing reader', () => watch.stop());
  const stopPinned = watchPinnedWithoutWorkers({
    client: ctx.client,
    namespace: config.TEMPORAL_NAMESPACE,
    deployment: version.deployment,
    metrics,
    logger,
    seconds: config.WORKER_VERSION_CHECK_SECONDS,
  });
  life.defer('orders-pinned-without-workers gauge', stopPinned);
  return watch;
}
