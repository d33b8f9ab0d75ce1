/**
 * The Temporal worker itself: created over the workflow bundle and every activity (the order's, the retention runs',
 * the version move), pinned to its version of the deployment; then run and watched, so that a worker that stops for
 * good on its own is reported, not left unnoticed.
 */
import { Worker, type NativeConnection } from '@temporalio/worker';
import { createActivities } from '../../../activities/index.js';
import { createOutcomeReporter } from '../../base/outcomes.js';
import { createLedgerRetentionActivities } from '../../../activities/ledger-pruning.js';
import { createStatusOutboxRetentionActivities } from '../../../activities/status-outbox-pruning.js';
import { createVersionActivities } from '../../../activities/move-answer.js';
import type { Db } from '../../adapters/store/db.js';
import { describeDeployment } from '../../adapters/deployment/routing.js';
import type { Lifecycle } from '../../base/lifecycle.js';
import type { RoleContext } from '../role.js';
import { workflowCodeOptions } from '../../domain/temporal.js';
import type { Effects } from './effects.js';
import type { WorkerVersion } from './worker-version.js';

/** How often the worker's state is read for a failure its run() has not reported yet, milliseconds. */
const WATCH_MS = 500;

/** The Temporal worker over the workflows and every activity; settings: docs/configuration.md (WORKER_*). */
export async function createWorker(
  { config, logger, metrics, tracing }: RoleContext,
  connection: NativeConnection,
  db: Db,
  { deadLetters, warehouse, pauses }: Effects,
  version: WorkerVersion,
  workflowsPath: string | undefined,
): Promise<Worker> {
  const activityLogger = logger.child({ component: 'activities' });
  return Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    // A version of the deployment; every workflow pinned: an order finishes on the code it started on.
    workerDeploymentOptions: {
      version: { deploymentName: version.deployment, buildId: version.buildId },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    },
    ...(await workflowCodeOptions({
      config,
      ...(workflowsPath ? { workflowsPath } : {}),
      reportOutcome: createOutcomeReporter({ logger: logger.child({ component: 'workflow' }), metrics }),
      ...(tracing ? { tracing } : {}),
    })),
    activities: {
      ...createLedgerRetentionActivities({
        db,
        logger: activityLogger,
        metrics,
        minRetentionDays: config.KAFKA_RETENTION_DAYS + config.REDRIVE_WINDOW_DAYS,
      }),
      ...createStatusOutboxRetentionActivities({ db, logger: activityLogger, metrics }),
      ...createVersionActivities({
        readRouting: () =>
          describeDeployment(connection.workflowService, config.TEMPORAL_NAMESPACE, version.deployment),
      }),
      ...createActivities({
        db,
        warehouse,
        logger: activityLogger,
        metrics,
        deadLetters,
        statusTopic: config.STATUS_TOPIC,
        pauses,
        waits: {
          deadlineSeconds: config.ORDER_SHIPMENT_DEADLINE_SECONDS,
          recheckSeconds: config.ORDER_WAIT_RECHECK_SECONDS,
        },
        shipmentBackoff: {
          initialDelayMs: config.WAREHOUSE_RETRY_INITIAL_MS,
          maxDelayMs: config.WAREHOUSE_RETRY_MAX_MS,
        },
      }),
    },
    // Activities still running after the grace time are cancelled; their retries resume on another worker.
    shutdownGraceTime: config.WORKER_SHUTDOWN_GRACE_MS,
    // Cancellation reaches a running activity only through its heartbeat: keep that prompt.
    maxHeartbeatThrottleInterval: '2 seconds',
    // Concurrency, cache and pollers: docs/configuration.md (WORKER_*), defaults measured there.
    maxConcurrentWorkflowTaskExecutions: config.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
    maxConcurrentActivityTaskExecutions: config.WORKER_MAX_CONCURRENT_ACTIVITIES,
    maxConcurrentLocalActivityExecutions: config.WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES,
    maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
    workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: config.WORKER_WORKFLOW_TASK_POLLERS },
    activityTaskPollerBehavior: { type: 'simple-maximum', maximum: config.WORKER_ACTIVITY_TASK_POLLERS },
  });
}

/**
 * Runs the worker and watches it: the promise resolves, with why, if it stops for good on its own (the SDK retries
 * lost polls itself; a worker that stops is fatal and must not go unnoticed). A failed worker can take long (or
 * forever) to finish shutting down before run() rejects — seen with its namespace deleted — so its state is watched
 * too: FAILED is fatal at once. Its readiness check says what the worker and its pollers are doing.
 */
export function runWorker(
  { logger, health }: RoleContext,
  worker: Worker,
  connection: { heldByFailedWorker: boolean },
  life: Lifecycle,
): Promise<Error> {
  let stopping = false;
  let fail!: (err: Error) => void;
  const failed = new Promise<Error>((resolve) => (fail = resolve));
  const lost = 'Temporal worker stopped unexpectedly; this instance no longer runs workflows';
  const run = worker.run();
  let runSettled = false;
  const watch = setInterval(() => {
    if (stopping || runSettled || worker.getState() !== 'FAILED') return;
    clearInterval(watch);
    logger.fatal({ state: 'FAILED' }, lost);
    fail(new Error('Temporal worker stopped unexpectedly: it is FAILED'));
  }, WATCH_MS);
  watch.unref();
  run
    .finally(() => {
      runSettled = true;
      clearInterval(watch);
    })
    .catch(() => undefined);
  run.then(
    () => {
      if (stopping) return;
      logger.fatal(lost);
      fail(new Error('Temporal worker stopped unexpectedly'));
    },
    (err: unknown) => {
      if (stopping) return;
      logger.fatal({ err }, lost);
      fail(new Error(`Temporal worker stopped unexpectedly: ${(err as Error).message ?? String(err)}`, { cause: err }));
    },
  );
  health.set('worker', () => {
    const { runState, workflowPollerState, activityPollerState } = worker.getStatus();
    if (runState === 'RUNNING' && workflowPollerState === 'POLLING' && activityPollerState === 'POLLING')
      return { ok: true };
    return {
      ok: false,
      reason: `Temporal worker is ${runState} (workflow poller ${workflowPollerState}, activity poller ${activityPollerState})`,
    };
  });
  life.defer('Temporal worker', async () => {
    stopping = true;
    if (worker.getState() === 'RUNNING') worker.shutdown();
    if (worker.getState() === 'FAILED' && !runSettled) {
      // Its shutdown may never finish; waiting would only hold the process up (the connection stays held by it).
      connection.heldByFailedWorker = true;
      logger.warn('not waiting for the failed Temporal worker to finish shutting down');
    } else {
      await run.catch((err: unknown) => logger.error({ err }, 'worker stopped with an error'));
    }
  });
  return failed;
}
