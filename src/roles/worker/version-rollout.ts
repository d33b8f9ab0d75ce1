/**
 * A worker's place in its deployment once it polls (WORKER_VERSION_ROLLOUT). Temporal routes an order's first task to
 * the deployment's current version (or, for the ramp's share, to the ramping one), and every later task of that order
 * to the version it started on (the order workflow is pinned). A worker whose version is neither current nor ramping
 * only finishes what is pinned to it. So a starting worker — at the end of its start-up (src/roles/worker/role.ts: its
 * store, schema, schedules and workflow bundle checked, its pollers polling) — makes its version current when:
 * - `all-at-once`: its version never took new runs (inactive: never current nor ramping) — a new build takes every
 *   new order (but a ramp's share) once its first worker has started, before any order ran on it; a restart changes
 *   nothing, and a version rolled back from or ramped by an operator is left as the operator routed it. Why that is
 *   safe: docs/changing-the-workflow.md ("When exactly, and why that is safe");
 * - `manual`: the deployment has no current version (its first deploy); later versions wait for an operator
 *   (`fulfilment deployment ramp|current`).
 * The version exists in Temporal only once the worker has polled: until then, and while Temporal does not answer,
 * this retries. Two workers of one new version starting together: the second finds it current already.
 */
import { ExponentialBackoff, handleAll, retry } from 'cockatiel';
import type { NativeConnection } from '@temporalio/worker';
import type { Logger } from '../../base/log.js';
import { describeDeployment, setCurrentVersion, type DeploymentView } from '../../adapters/deployment/routing.js';

export type Rollout = 'all-at-once' | 'manual';

export interface WorkerVersionPlace {
  deployment: string;
  buildId: string;
  /** What the worker did or found: it made its version current, or it was current already, or it waits. */
  outcome: 'made current' | 'current' | 'ramping' | 'waiting';
  /** The deployment's current version after this worker's step. */
  current?: string;
}

class NotRegisteredYet extends Error {}

/** The step a starting worker takes for its version, given the deployment as read: make it current or not. */
export function rolloutStep(view: DeploymentView, buildId: string, rollout: Rollout): 'make current' | 'leave' {
  const mine = view.versions.find((v) => v.buildId === buildId);
  if (!mine) throw new NotRegisteredYet(`version ${buildId} is not registered yet`);
  if (view.current === buildId) return 'leave';
  if (rollout === 'all-at-once') return mine.status === 'inactive' ? 'make current' : 'leave';
  return view.current === undefined && view.ramping === undefined ? 'make current' : 'leave';
}

export async function takeVersionPlace(opts: {
  connection: NativeConnection;
  namespace: string;
  deployment: string;
  buildId: string;
  rollout: Rollout;
  identity: string;
  logger: Logger;
  signal?: AbortSignal;
}): Promise<WorkerVersionPlace> {
  const { connection, namespace, deployment, buildId, rollout, logger } = opts;
  const service = connection.workflowService;
  const policy = retry(handleAll, { backoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 5_000 }) });
  policy.onRetry(({ delay, ...rest }) => {
    const err = 'error' in rest ? (rest.error as Error) : undefined;
    const level = err instanceof NotRegisteredYet ? 'debug' : 'warn';
    logger[level](
      { deployment, buildId, delayMs: Math.round(delay), err: err?.message },
      'worker version: reading its deployment again',
    );
  });
  return policy.execute(async () => {
    const view = await describeDeployment(service, namespace, deployment);
    if (!view) throw new NotRegisteredYet(`deployment ${deployment} is not registered yet`);
    const place = { deployment, buildId };
    if (rolloutStep(view, buildId, rollout) === 'make current') {
      await setCurrentVersion(service, {
        namespace,
        deployment,
        buildId,
        identity: opts.identity,
        conflictToken: view.conflictToken,
      });
      return { ...place, outcome: 'made current' as const, current: buildId };
    }
    const outcome = view.current === buildId ? 'current' : view.ramping?.buildId === buildId ? 'ramping' : 'waiting';
    return { ...place, outcome, ...(view.current ? { current: view.current } : {}) };
  }, opts.signal);
}

/** How often a worker reads its deployment's routing again (an operator's ramp, promotion or rollback). */
export const ROUTING_READ_MS = 2_000;

export interface VersionRoutingWatch {
  /** True while this version takes every new run: current, and no other version ramping. */
  takesNewRuns(): boolean;
  stop(): void;
}

/**
 * Re-reads the deployment every ROUTING_READ_MS: what the worker's place is now, logged when it changes. The rollout's
 * step is taken again on each reading, so a Temporal that lost the deployment's routing (a store emptied, a dev server
 * in memory restarted: the version comes back registered, never active, and nothing current) gets it back from the
 * workers' next reading. A reading that fails keeps the last one (logged once per failure streak).
 */
export function watchVersionRouting(opts: {
  connection: NativeConnection;
  namespace: string;
  place: WorkerVersionPlace;
  rollout: Rollout;
  identity: string;
  logger: Logger;
  /** Told each reading whether this version takes every new order (the fulfilment_worker_version gauge). */
  onReading?: (takesEveryNewOrder: boolean) => void;
}): VersionRoutingWatch {
  const { connection, namespace, place, rollout, logger } = opts;
  const { deployment, buildId } = place;
  const takes = (v: Pick<DeploymentView, 'current' | 'ramping'>) => v.current === buildId && v.ramping === undefined;
  let takesAll = place.outcome === 'made current' || place.outcome === 'current';
  let failing = false;
  let reading = false;
  const timer = setInterval(() => {
    if (reading) return;
    reading = true;
    describeDeployment(connection.workflowService, namespace, deployment)
      .then(async (view) => {
        failing = false;
        if (!view || !view.versions.some((v) => v.buildId === buildId)) return;
        if (rolloutStep(view, buildId, rollout) === 'make current') {
          const { conflictToken } = view;
          await setCurrentVersion(connection.workflowService, {
            namespace,
            deployment,
            buildId,
            identity: opts.identity,
            conflictToken,
          });
          logger.info(
            { deployment, buildId, rollout },
            'worker version made current again: its deployment had lost it',
          );
          view = { ...view, current: buildId };
        }
        const now = takes(view);
        if (now !== takesAll)
          logger.info(
            { deployment, buildId, current: view.current, ramping: view.ramping },
            now ? 'worker version now takes every new order' : 'worker version no longer takes every new order',
          );
        takesAll = now;
        opts.onReading?.(now);
      })
      .catch((err: unknown) => {
        if (!failing)
          logger.warn({ deployment, buildId, err: (err as Error).message }, 'could not read the deployment');
        failing = true;
      })
      .finally(() => (reading = false));
  }, ROUTING_READ_MS);
  timer.unref();
  return { takesNewRuns: () => takesAll, stop: () => clearInterval(timer) };
}
