/**
 * The worker role: the Temporal worker that runs the order workflows and their activities. It connects to Temporal,
 * waits until PostgreSQL answers as the runtime role with the schema this code needs, keeps the ledger-retention
 * schedule in step with its configuration, and polls its task queue. It returns what to stop (in order), and a
 * promise that resolves if the worker stops for good on its own (the process must then exit non-zero). Loaded only by
 * a process that runs the role (src/app.ts), so a bridge-only process never loads the worker SDK, pg or activities.
 */
import { Worker } from '@temporalio/worker';
import { createActivities, createOutcomeReporter } from '../../activities/index.js';
import { createLedgerRetentionActivities } from '../../activities/ledger-retention.js';
import { createStatusOutboxRetentionActivities } from '../../activities/status-outbox-retention.js';
import { createDeadLetterSink } from '../dlq/sink.js';
import { createKafka, probeKafka } from '../kafka/client.js';
import { createSender } from '../kafka/sender.js';
import { PermanentStartupError, waitForDependency } from '../startup.js';
import { runtimeConnection } from '../store/connection.js';
import { createDb } from '../db.js';
import { migrationFiles } from '../store/migrate.js';
import { checkRuntimeRole, checkSchema, permanentDatabaseFailure } from '../store/runtime-role.js';
import { connectNative, workflowCodeOptions } from '../temporal.js';
import { createWarehouseClient } from '../warehouse/client.js';
import { asPermanentKafkaFailure, probeWithin, type RoleContext, type StartedRole } from '../role.js';
import { watchOrdersNeedingAttention } from './attention-gauges.js';
import { ensureLedgerRetentionSchedule } from './ledger-retention-schedule.js';
import { ensureStatusOutboxRetentionSchedule } from './status-outbox-retention-schedule.js';
import { startStatusRelay, type StatusRelay } from '../status-events/relay.js';
import { watchStatusRelayLag } from '../status-events/relay-lag.js';
import { startShipmentResumer } from './shipment-resumer.js';
import { createPauseBook } from '../store/pause-book.js';

/** How often the worker's state is read for a failure its run() has not reported yet, milliseconds. */
const WATCH_MS = 500;

export async function startWorkerRole(
  ctx: RoleContext,
  opts: { alone: boolean },
): Promise<StartedRole & { worker: Worker }> {
  const { config, logger, metrics, health, tracing, signal, permanent } = ctx;
  const temporal = `Temporal at ${config.TEMPORAL_ADDRESS}`;
  // A worker alone reaches Kafka only to dead-letter and does not wait for it; but a refused credential or
  // certificate would only show at its first dead letter, so it is checked once, beside the other start-up steps.
  const kafkaRefused = opts.alone ? kafkaRefusal(ctx) : Promise.resolve(undefined);
  const connection = await waitForDependency(
    temporal,
    health.attempting(temporal, () => connectNative(config)),
    logger,
    signal,
    permanent,
  );
  // The worker's effects need PostgreSQL: it starts polling only once the database answers, as a role row-level
  // security binds (anything else is refused for good), with the schema at the version this code needs.
  const db = createDb(runtimeConnection(config));
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
  // Readiness probes PostgreSQL on a one-connection pool of its own: a pool busy with activities does not make the
  // worker look down, and probes never take connections from the activities.
  const probeDb = createDb(runtimeConnection(config), 1);
  health.set('postgres', () => probeWithin('PostgreSQL', probeDb.query('SELECT 1')));
  // The orders every tenant holds for a person, as gauges (counts only), on the probe's connection.
  const stopAttention = watchOrdersNeedingAttention(probeDb, metrics, logger, config.WORKER_ATTENTION_POLL_SECONDS);
  // The retention schedules (dedupe ledger, status outbox), created or brought in step with this worker's configuration.
  await waitForDependency(
    temporal,
    health.attempting(temporal, async () => {
      await ensureLedgerRetentionSchedule(ctx.client, config, logger);
      await ensureStatusOutboxRetentionSchedule(ctx.client, config, logger);
    }),
    logger,
    signal,
    permanent,
  );
  const refused = await kafkaRefused;
  if (refused) {
    stopAttention();
    await Promise.all([connection.close(), probeDb.end(), db.end()]);
    throw refused;
  }

  const activityLogger = logger.child({ component: 'activities' });
  const deadLetters = createDeadLetterSink(
    createSender(createKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-worker` })),
    config.DLQ_TOPIC,
    config.CONSUMER_GROUP,
    config.payloadEncryption,
  );
  const warehouse = createWarehouseClient(config.WAREHOUSE_URL, {
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
      activityLogger.warn({ err: err.message }, 'could not read the shipping pauses; keeping the last ones read'),
  });
  const worker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    ...(await workflowCodeOptions({
      config,
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
      ...createActivities({
        db,
        warehouse,
        logger: activityLogger,
        metrics,
        deadLetters,
        statusTopic: config.STATUS_TOPIC,
        pauses,
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

  // The status relay (src/status-events/relay.ts): publishes the outbox; never part of readiness, so Kafka being down
  // leaves the input side's health alone (the lag metric and its alert tell of it).
  const relay = config.STATUS_RELAY ? startRelay(ctx, probeDb) : undefined;
  // Wakes orders waiting for the warehouse: one probe at a time while it is down, paced once it answers.
  const resumer = startShipmentResumer({
    db: probeDb,
    client: ctx.client,
    warehouse,
    probeSeconds: config.WAREHOUSE_PROBE_SECONDS,
    perSecond: config.WAREHOUSE_RESUME_PER_SECOND,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    metrics,
    logger: logger.child({ component: 'shipment-resumer' }),
  });

  let stopping = false;
  let fail!: (err: Error) => void;
  const failed = new Promise<Error>((resolve) => (fail = resolve));
  const run = worker.run();
  let runSettled = false;
  // The SDK retries lost polls itself; a worker that stops on its own is fatal and must not go unnoticed. A failed
  // worker can take long (or forever) to finish shutting down before run() rejects — seen with its namespace
  // deleted — so its state is watched too: FAILED is fatal at once.
  const watch = setInterval(() => {
    if (stopping || runSettled || worker.getState() !== 'FAILED') return;
    clearInterval(watch);
    logger.fatal({ state: 'FAILED' }, 'Temporal worker stopped unexpectedly; this instance no longer runs workflows');
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
      logger.fatal('Temporal worker stopped unexpectedly; this instance no longer runs workflows');
      fail(new Error('Temporal worker stopped unexpectedly'));
    },
    (err: unknown) => {
      if (stopping) return;
      logger.fatal({ err }, 'Temporal worker stopped unexpectedly; this instance no longer runs workflows');
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

  return {
    worker,
    connection,
    db,
    failed,
    stops: [
      {
        name: 'Temporal worker',
        stop: async () => {
          stopping = true;
          if (worker.getState() === 'RUNNING') worker.shutdown();
          if (worker.getState() === 'FAILED' && !runSettled) {
            // Its shutdown may never finish; waiting would only hold the process up (the connection stays held by it).
            logger.warn('not waiting for the failed Temporal worker to finish shutting down');
          } else {
            await run.catch((err: unknown) => logger.error({ err }, 'worker stopped with an error'));
            await connection.close();
          }
          await deadLetters.close();
        },
      },
      {
        name: 'shipment resumer',
        stop: () => {
          pauses.stop();
          return resumer.stop();
        },
      },
      ...(relay ? [{ name: 'status relay', stop: relay.stop }] : []),
      {
        name: 'PostgreSQL readiness probe',
        stop: () => {
          stopAttention();
          return probeDb.end();
        },
      },
      { name: 'PostgreSQL pool', stop: () => db.end() },
    ],
  };
}

/** Starts the status relay of STATUS_TOPIC and its lag gauge (read on the probe's pool); stop() ends both. */
function startRelay(
  { config, logger, metrics, tracing }: RoleContext,
  probeDb: ReturnType<typeof createDb>,
): { stop: () => Promise<void>; relay: StatusRelay } {
  const relayLogger = logger.child({ component: 'status-relay' });
  const sender = createSender(
    createKafka(config, relayLogger, { clientId: `${config.KAFKA_CLIENT_ID}-status-relay` }),
    { idempotent: true },
  );
  const relay = startStatusRelay({
    connection: runtimeConnection(config),
    topic: config.STATUS_TOPIC,
    sender,
    batch: config.STATUS_RELAY_BATCH,
    pollMs: config.STATUS_RELAY_POLL_MS,
    logger: relayLogger,
    metrics,
    ...(tracing ? { tracer: tracing.tracer } : {}),
  });
  const stopLag = watchStatusRelayLag(probeDb, config.STATUS_TOPIC, metrics, relayLogger, config.STATUS_RELAY_POLL_MS);
  return {
    relay,
    async stop() {
      stopLag();
      await relay.stop();
      await sender.disconnect();
    },
  };
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
