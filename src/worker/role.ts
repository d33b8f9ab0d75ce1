/**
 * The worker role: the Temporal worker that runs the order workflows and their activities. It connects to Temporal,
 * waits until PostgreSQL answers as the runtime role with the schema this code needs, keeps the ledger-retention
 * schedule in step with its configuration, and polls its task queue. It returns its lifecycle (what to stop), and a
 * promise that resolves if the worker stops for good on its own (the process must then exit non-zero). Loaded only by
 * a process that runs the role (src/app.ts), so a bridge-only process never loads the worker SDK, pg or activities.
 */
import { hostname } from 'node:os';
import { Worker, type NativeConnection } from '@temporalio/worker';
import { createActivities, createOutcomeReporter } from '../../activities/index.js';
import { createLedgerRetentionActivities } from '../../activities/ledger-retention.js';
import { createStatusOutboxRetentionActivities } from '../../activities/status-outbox-retention.js';
import { createDeadLetterSink, type DeadLetterSink } from '../dlq/sink.js';
import { createKafka, probeKafka } from '../kafka/client.js';
import { createSender } from '../kafka/sender.js';
import { PermanentStartupError, waitForDependency } from '../startup.js';
import { runtimeConnection } from '../store/connection.js';
import { createDb, type Db } from '../db.js';
import { migrationFiles } from '../store/migrate.js';
import { checkRuntimeRole, checkSchema, permanentDatabaseFailure } from '../store/runtime-role.js';
import { connectNative, workflowCodeOptions } from '../temporal.js';
import { createWarehouseClient, type WarehouseClient } from '../warehouse/client.js';
import { asPermanentKafkaFailure, probeWithin, type RoleContext, type StartedRole } from '../role.js';
import { watchOrdersNeedingAttention } from './attention-gauges.js';
import { ensureLedgerRetentionSchedule } from './ledger-retention-schedule.js';
import { ensureStatusOutboxRetentionSchedule } from './status-outbox-retention-schedule.js';
import { startStatusRelay } from '../status-events/relay.js';
import { watchStatusRelayLag } from '../status-events/relay-lag.js';
import { startShipmentResumer } from './shipment-resumer.js';
import { createPauseBook, type PauseBook } from '../store/pause-book.js';
import { Lifecycle } from '../lifecycle.js';
import { resolveBuildId } from '../deployment/build-id.js';
import { takeVersionPlace, watchVersionRouting, type VersionRoutingWatch } from './version-rollout.js';
import { describeDeployment } from '../deployment/routing.js';
import { createVersionActivities } from '../../activities/version-move.js';
import { watchPinnedWithoutWorkers } from './pinned-without-workers.js';

/** How often the worker's state is read for a failure its run() has not reported yet, milliseconds. */
const WATCH_MS = 500;

/**
 * Starts the role in named steps, each registering how to stop what it started: stop() undoes them last first
 * (the worker's drain, then the shipment resumer and the relay — which publishes what the drain committed — then the
 * effects' clients, the pools, the connection).
 */
export async function startWorkerRole(
  ctx: RoleContext,
  opts: { alone: boolean; workflowsPath?: string },
): Promise<StartedRole & { worker: Worker; takesNewRuns: () => boolean }> {
  return new Lifecycle(ctx.logger).startOrUndo(async (life) => {
    // A worker alone reaches Kafka only to dead-letter and does not wait for it; but a refused credential or
    // certificate would only show at its first dead letter, so it is checked once, beside the other start-up steps.
    const kafkaRefused = opts.alone ? kafkaRefusal(ctx) : Promise.resolve(undefined);
    const connection = await connectWorker(ctx, life);
    const db = await openStore(ctx, life);
    const probeDb = watchStore(ctx, life);
    await keepRetentionSchedules(ctx);
    const refused = await kafkaRefused;
    if (refused) throw refused;
    const version = workerVersion(ctx.config);
    const effects = createEffects(ctx, probeDb, life);
    const worker = await createWorker(ctx, connection.native, db, effects, version, opts.workflowsPath);
    // Started before the worker runs, so they stop after it has drained.
    if (ctx.config.STATUS_RELAY) startRelay(ctx, probeDb, life);
    startResumer(ctx, probeDb, effects.warehouse, life);
    const failed = runWorker(ctx, worker, connection, life);
    const routing = await takePlace(ctx, connection.native, version, life);
    return { worker, connection: connection.native, db, failed, lifecycle: life, takesNewRuns: routing.takesNewRuns };
  });
}

/** The worker's own Temporal connection, once Temporal answers; closed last, unless a failed worker still holds it. */
async function connectWorker(
  { config, logger, health, signal, permanent }: RoleContext,
  life: Lifecycle,
): Promise<{ native: NativeConnection; heldByFailedWorker: boolean }> {
  const temporal = `Temporal at ${config.TEMPORAL_ADDRESS}`;
  const native = await waitForDependency(
    temporal,
    health.attempting(temporal, () => connectNative(config)),
    logger,
    signal,
    permanent,
  );
  const connection = { native, heldByFailedWorker: false };
  life.defer('Temporal connection', () => (connection.heldByFailedWorker ? undefined : native.close()));
  return connection;
}

/**
 * The activities' pool, once PostgreSQL answers as a role row-level security binds (anything else is refused for
 * good), with the schema at the version this code needs: the worker polls only then.
 */
async function openStore({ config, logger, health, signal }: RoleContext, life: Lifecycle): Promise<Db> {
  const db = createDb(runtimeConnection(config));
  life.defer('PostgreSQL pool', () => db.end());
  const database = { permanent: (err: unknown) => permanentDatabaseFailure(err, config) };
  await waitForDependency(
    'PostgreSQL',
    health.attempting('PostgreSQL', () => checkRuntimeRole(db)),
    logger,
    signal,
    database,
  );
  const schema = `the PostgreSQL schema (migrations up to ${(await migrationFiles()).at(-1)}, applied by \`fulfilment provision\`)`;
  await waitForDependency(
    schema,
    health.attempting(schema, async () => {
      await checkRuntimeRole(db);
      await checkSchema(db);
    }),
    logger,
    signal,
    database,
  );
  return db;
}

/**
 * A one-connection pool of its own for readiness and the background reads (the orders held for a person, as
 * gauges): a pool busy with activities does not make the worker look down, and they never take its connections.
 */
function watchStore({ config, logger, metrics, health }: RoleContext, life: Lifecycle): Db {
  const probeDb = createDb(runtimeConnection(config), 1);
  life.defer('PostgreSQL readiness probe', () => probeDb.end());
  health.set('postgres', () => probeWithin('PostgreSQL', probeDb.query('SELECT 1')));
  const stopAttention = watchOrdersNeedingAttention(probeDb, metrics, logger, config.WORKER_ATTENTION_POLL_SECONDS);
  life.defer('orders-needing-attention gauges', stopAttention);
  return probeDb;
}

/** The retention schedules (dedupe ledger, status outbox), created or brought in step with this worker's configuration. */
async function keepRetentionSchedules(ctx: RoleContext): Promise<void> {
  const { config, logger, health, signal, permanent, client } = ctx;
  const temporal = `Temporal at ${config.TEMPORAL_ADDRESS}`;
  await waitForDependency(
    temporal,
    health.attempting(temporal, async () => {
      await ensureLedgerRetentionSchedule(client, config, logger);
      await ensureStatusOutboxRetentionSchedule(client, config, logger);
    }),
    logger,
    signal,
    permanent,
  );
}

/** What the activities act on besides the store: the dead-letter topic, the warehouse, operators' pauses. */
interface Effects {
  deadLetters: DeadLetterSink;
  warehouse: WarehouseClient;
  pauses: PauseBook;
}

function createEffects({ config, logger, metrics, tracing }: RoleContext, probeDb: Db, life: Lifecycle): Effects {
  const deadLetters = createDeadLetterSink(
    createSender(createKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-worker` })),
    config.DLQ_TOPIC,
    config.CONSUMER_GROUP,
    config.payloadEncryption,
  );
  life.defer('dead-letter producer', () => deadLetters.close());
  const warehouse = createWarehouseClient(config.WAREHOUSE_URL, {
    timeoutMs: config.WAREHOUSE_TIMEOUT_MS,
    brownout: {
      windowMs: config.WAREHOUSE_BROWNOUT_WINDOW_SECONDS * 1000,
      minCalls: config.WAREHOUSE_BROWNOUT_MIN_CALLS,
      failurePercent: config.WAREHOUSE_BROWNOUT_FAILURE_PERCENT,
      minFailingKeys: config.WAREHOUSE_BROWNOUT_MIN_ORDERS,
    },
    breaker: {
      failures: config.WAREHOUSE_BREAKER_FAILURES,
      halfOpenAfterMs: config.WAREHOUSE_BREAKER_HALF_OPEN_MS,
      onStateChange: (state) => {
        metrics.circuitState.set({ dependency: 'warehouse' }, { closed: 0, 'half-open': 1, open: 2 }[state]);
        if (state === 'open') metrics.circuitOpened.inc({ dependency: 'warehouse' });
      },
    },
    tracer: tracing?.tracer,
  });
  // Operators' pauses of shipping, read every 2 s in the background (not once per shipment).
  const pauses = createPauseBook(probeDb, {
    onRead: (inForce) => metrics.shippingPauses.set(inForce.length),
    onReadFailed: (err) =>
      logger.warn(
        { component: 'activities', err: err.message },
        'could not read the shipping pauses; keeping the last ones read',
      ),
  });
  life.defer('shipping pauses reader', () => pauses.stop());
  return { deadLetters, warehouse, pauses };
}

/** The Temporal worker over the workflows and every activity; settings: docs/configuration.md (WORKER_*). */
async function createWorker(
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
function runWorker(
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

export interface WorkerVersion {
  deployment: string;
  buildId: string;
}

/** The worker's version: WORKER_DEPLOYMENT_NAME (default the task queue) and the build id (src/deployment/build-id.ts). */
function workerVersion(config: RoleContext['config']): WorkerVersion {
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
async function takePlace(
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

/** Wakes orders waiting for the warehouse: one probe at a time while it is down, paced once it answers. */
function startResumer(
  { config, logger, metrics, client }: RoleContext,
  probeDb: Db,
  warehouse: WarehouseClient,
  life: Lifecycle,
): void {
  const resumer = startShipmentResumer({
    db: probeDb,
    client,
    warehouse,
    probeSeconds: config.WAREHOUSE_PROBE_SECONDS,
    perSecond: config.WAREHOUSE_RESUME_PER_SECOND,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    leaseSeconds: config.WAKE_LEASE_SECONDS,
    metrics,
    logger: logger.child({ component: 'shipment-resumer' }),
  });
  life.defer('shipment resumer', () => resumer.stop());
}

/**
 * The status relay (src/status-events/relay.ts) of STATUS_TOPIC and its lag gauge (read on the probe's pool): it
 * publishes the outbox, and is never part of readiness, so Kafka being down leaves the input side's health alone
 * (the lag metric and its alert tell of it).
 */
function startRelay({ config, logger, metrics, tracing }: RoleContext, probeDb: Db, life: Lifecycle): void {
  const relayLogger = logger.child({ component: 'status-relay' });
  const sender = createSender(
    createKafka(config, relayLogger, { clientId: `${config.KAFKA_CLIENT_ID}-status-relay` }),
    { idempotent: true },
  );
  life.defer('status relay producer', () => sender.disconnect());
  const relay = startStatusRelay({
    connection: runtimeConnection(config),
    topic: config.STATUS_TOPIC,
    sender,
    batch: config.STATUS_RELAY_BATCH,
    pollMs: config.STATUS_RELAY_POLL_MS,
    gatherMs: config.STATUS_RELAY_GATHER_MS,
    logger: relayLogger,
    metrics,
    ...(tracing ? { tracer: tracing.tracer } : {}),
  });
  life.defer('status relay', () => relay.stop());
  life.defer(
    'status relay lag gauge',
    watchStatusRelayLag(probeDb, config.STATUS_TOPIC, metrics, relayLogger, config.STATUS_RELAY_POLL_MS),
  );
}

/**
 * One connection to Kafka: the PermanentStartupError when the brokers refuse this client for good, undefined when
 * they accept it — or cannot be reached now, which only delays dead letters (logged, not waited for).
 */
async function kafkaRefusal({ config, logger }: RoleContext): Promise<PermanentStartupError | undefined> {
  try {
    await probeKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-worker-probe` });
    return undefined;
  } catch (err) {
    const permanent = asPermanentKafkaFailure(err, config);
    if (!permanent)
      logger.warn(
        { err: (err as Error).message },
        `Kafka at ${config.KAFKA_BROKERS.join(',')} is not reachable now; dead letters wait for it`,
      );
    return permanent;
  }
}
