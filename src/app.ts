/**
 * Composes the running service from the configuration: the Temporal worker hosting the order workflow and
 * its activities, and the Kafka bridge feeding it. `npm start`, the demo and the integration tests all start
 * the service through here, so what is tested is what runs.
 */
import type { Server } from 'node:http';
import { type Client, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { createActivities, createOutcomeReporter } from '../activities/index.js';
import { createLedgerRetentionActivities } from '../activities/ledger-retention.js';
import { createBridge, type Bridge, type TransientRetry } from './bridge/bridge.js';
import { createKafka, permanentKafkaFailure, probeKafka } from './kafka/client.js';
import { createSender } from './kafka/sender.js';
import { createOrderStarter, type OrderStarter } from './bridge/order-starter.js';
import type { Config } from './config.js';
import { createDeadLetterSink } from './dlq/sink.js';
import { Health, withTimeout, type CheckResult } from './health.js';
import type { Logger } from './log.js';
import { createMetrics, serveMetrics, type Metrics } from './metrics.js';
import { BRIDGE_TEMPORAL_RPC, KAFKA_RETRY } from './retry-policies.js';
import { PermanentStartupError, waitForDependency } from './startup.js';
import { ensureLedgerRetentionSchedule } from './ledger-retention-schedule.js';
import { runtimeConnection } from './store/connection.js';
import { createDb, type Db } from './store/db.js';
import { migrationFiles } from './store/migrate.js';
import { checkRuntimeRole, checkSchema, permanentDatabaseFailure } from './store/runtime-role.js';
import { connectClient, connectNative, connectTemporal, permanentTemporalError, temporalClient, workflowCodeOptions } from './temporal.js';
import { createWarehouseClient } from './warehouse/client.js';
import { startTracing, type Tracing } from './tracing/index.js';
import { workflowSettings } from './workflow-settings.js';

export interface AppOptions {
  logger: Logger;
  /** Run the worker, the bridge, or both (default: config.FULFILMENT_ROLES). */
  roles?: { worker?: boolean; bridge?: boolean };
  /** Serve /metrics on config.METRICS_PORT (default true when METRICS_PORT > 0). */
  serveMetrics?: boolean;
  bridgeRetry?: Partial<TransientRetry>;
  /** Decorates the bridge's order starter (tests use it to crash between delivery and commit). */
  wrapStarter?: (starter: OrderStarter) => OrderStarter;
  /** Called with the bridge before it starts consuming (tests use it to watch the consumer from its first join). */
  onBridge?: (bridge: Bridge) => void;
  /** Aborting it gives up start-up while a dependency is still down (StartupAborted). */
  signal?: AbortSignal;
  /**
   * The registry to count in and the readiness to report to, when the caller serves them itself (src/service.ts
   * starts its HTTP server before waiting for anything); startApp then serves neither.
   */
  observability?: { metrics: Metrics; health: Health };
}

export interface App {
  config: Config;
  metrics: Metrics;
  db: Db;
  client: Client;
  worker?: Worker;
  bridge?: Bridge;
  /** Readiness of the roles this app runs (served as /readyz). */
  health: Health;
  /** Tracing as configured by the OTEL_* variables; undefined when off (src/tracing/index.ts). */
  tracing?: Tracing;
  /**
   * Resolves (never rejects) once a role stopped for good on its own — the Temporal worker's run() ended, or the
   * bridge's consumer gave up — with why. The process must then stop and exit non-zero.
   */
  failed: Promise<Error>;
  /** What stop() has not finished stopping yet, in the order it stops them (empty before stop() and once done). */
  stillStopping(): string[];
  stop(): Promise<void>;
}

/** Longest a readiness check's own call (SELECT 1, a Temporal RPC) may take, ms. */
const CHECK_TIMEOUT_MS = 1500;

/** One readiness probe, bounded by CHECK_TIMEOUT_MS; a failure's reason names `what`. */
async function probeWithin(what: string, work: Promise<unknown>): Promise<CheckResult> {
  try {
    await withTimeout(work, CHECK_TIMEOUT_MS, what);
    return { ok: true };
  } catch (err) {
    const message = (err as Error).message ?? String(err);
    return { ok: false, reason: message.startsWith(what) ? message : `${what}: ${message}` };
  }
}

export async function startApp(config: Config, opts: AppOptions): Promise<App> {
  const { logger } = opts;
  const runWorker = opts.roles?.worker ?? config.FULFILMENT_ROLES.includes('worker');
  const runBridge = opts.roles?.bridge ?? config.FULFILMENT_ROLES.includes('bridge');
  const metrics = opts.observability?.metrics ?? createMetrics({ defaultMetrics: opts.serveMetrics ?? false });
  const health = opts.observability?.health ?? new Health();
  let server: Server | undefined;
  if (!opts.observability && (opts.serveMetrics ?? true) && config.METRICS_PORT > 0) {
    // Served before anything is waited for: readiness says what start-up is waiting for.
    server = await serveMetrics(metrics.registry, config.METRICS_PORT, config.METRICS_HOST, health);
  }
  const db = createDb(runtimeConnection(config));
  // Off unless configured: then undefined, and nothing below makes a span or registers anything.
  const tracing = await startTracing(config, logger);
  const { signal } = opts;
  const temporal = `Temporal at ${config.TEMPORAL_ADDRESS}`;
  // An untrusted certificate, a refused client certificate or API key stops start-up at once (src/temporal.ts).
  const permanent = { permanent: (err: unknown) => permanentTemporalError(config, err) };
  const client = await waitForDependency(temporal, health.attempting(temporal, () => connectClient(config)), logger, signal, permanent);
  health.set('temporal', async () => {
    // A cheap RPC on the shared client, bounded by a deadline (the client's own retries stop there).
    return probeWithin(temporal, client.connection.withDeadline(Date.now() + CHECK_TIMEOUT_MS, () => client.connection.workflowService.getSystemInfo({})));
  });
  /** Stops in order; each named, so a shutdown past its deadline can say what was still stopping. */
  const stops: { name: string; stop: () => Promise<unknown> }[] = [];
  let stopping = false;
  let fail!: (err: Error) => void;
  const failed = new Promise<Error>((resolve) => (fail = resolve));

  let worker: Worker | undefined;
  let workerRun: Promise<void> | undefined;
  if (runWorker) {
    // A worker alone reaches Kafka only to dead-letter and does not wait for it; but a refused credential or
    // certificate would only show at its first dead letter, so it is checked once, beside the other start-up steps.
    const kafkaRefused = runBridge ? Promise.resolve(undefined) : kafkaRefusal(config, logger);
    const connection = await waitForDependency(temporal, health.attempting(temporal, () => connectNative(config)), logger, signal, permanent);
    // The worker's effects need PostgreSQL: it starts polling only once the database answers, as a role row-level
    // security binds (anything else is refused for good), with the schema at the version this code needs.
    const database = { permanent: (err: unknown) => permanentDatabaseFailure(err, config) };
    await waitForDependency('PostgreSQL', health.attempting('PostgreSQL', () => checkRuntimeRole(db)), logger, signal, database);
    const schema = `the PostgreSQL schema (migrations up to ${(await migrationFiles()).at(-1)}, applied by \`fulfilment provision\`)`;
    await waitForDependency(schema, health.attempting(schema, async () => {
      await checkRuntimeRole(db);
      await checkSchema(db);
    }), logger, signal, database);
    // Readiness probes PostgreSQL on a one-connection pool of its own: a pool busy with activities does not make
    // the worker look down, and probes never take connections from the activities.
    const probeDb = createDb(runtimeConnection(config), 1);
    health.set('postgres', () => probeWithin('PostgreSQL', probeDb.query('SELECT 1')));
    // The ledger-retention schedule, created or brought in step with this worker's configuration.
    await waitForDependency(temporal, health.attempting(temporal, () => ensureLedgerRetentionSchedule(client, config, logger)), logger, signal, permanent);
    const refused = await kafkaRefused;
    if (refused) {
      await connection.close();
      await probeDb.end();
      throw refused;
    }
    const reportOutcome = createOutcomeReporter({ logger: logger.child({ component: 'workflow' }), metrics });
    const deadLetters = createDeadLetterSink(createSender(createKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-worker` })), config.DLQ_TOPIC, config.CONSUMER_GROUP, config.payloadEncryption);
    // Loaded here, not at the top: a bridge-only process never loads the worker SDK (src/temporal.ts).
    const { Worker: TemporalWorker } = await import('@temporalio/worker');
    worker = await TemporalWorker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      ...(await workflowCodeOptions({ config, reportOutcome, ...(tracing ? { tracing } : {}) })),
      activities: { ...createLedgerRetentionActivities({ db, logger: logger.child({ component: 'activities' }), metrics, minRetentionDays: config.KAFKA_RETENTION_DAYS + config.REDRIVE_WINDOW_DAYS }), ...createActivities({ db, warehouse: createWarehouseClient(config.WAREHOUSE_URL, {
        breaker: {
          failures: config.WAREHOUSE_BREAKER_FAILURES,
          halfOpenAfterMs: config.WAREHOUSE_BREAKER_HALF_OPEN_MS,
          onStateChange: (state) => {
            metrics.circuitState.set({ dependency: 'warehouse' }, { closed: 0, 'half-open': 1, open: 2 }[state]);
            if (state === 'open') metrics.circuitOpened.inc({ dependency: 'warehouse' });
          },
        },
        tracer: tracing?.tracer,
      }), logger: logger.child({ component: 'activities' }), metrics, deadLetters }) },
      // Activities still running after the grace time are cancelled; their retries resume on another worker.
      shutdownGraceTime: config.WORKER_SHUTDOWN_GRACE_MS,
      // Cancellation reaches a running activity only through its heartbeat: keep that prompt.
      maxHeartbeatThrottleInterval: '2 seconds',
      // Concurrency, cache and pollers: README "Configuration" (WORKER_*), defaults measured there.
      maxConcurrentWorkflowTaskExecutions: config.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
      maxConcurrentActivityTaskExecutions: config.WORKER_MAX_CONCURRENT_ACTIVITIES,
      maxConcurrentLocalActivityExecutions: config.WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES,
      maxCachedWorkflows: config.WORKER_MAX_CACHED_WORKFLOWS,
      workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: config.WORKER_WORKFLOW_TASK_POLLERS },
      activityTaskPollerBehavior: { type: 'simple-maximum', maximum: config.WORKER_ACTIVITY_TASK_POLLERS },
    });
    workerRun = worker.run();
    const w = worker;
    let runSettled = false;
    // The SDK retries lost polls itself; a worker that stops on its own is fatal and must not go unnoticed.
    // A failed worker can take long (or forever) to finish shutting down before run() rejects — seen with its
    // namespace deleted — so its state is watched too: FAILED is fatal at once.
    const watch = setInterval(() => {
      if (stopping || runSettled || w.getState() !== 'FAILED') return;
      clearInterval(watch);
      logger.fatal({ state: 'FAILED' }, 'Temporal worker stopped unexpectedly; this instance no longer runs workflows');
      fail(new Error('Temporal worker stopped unexpectedly: it is FAILED'));
    }, 500);
    watch.unref();
    workerRun.finally(() => {
      runSettled = true;
      clearInterval(watch);
    }).catch(() => undefined);
    workerRun.then(
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
      const { runState, workflowPollerState, activityPollerState } = w.getStatus();
      if (runState === 'RUNNING' && workflowPollerState === 'POLLING' && activityPollerState === 'POLLING') return { ok: true };
      return { ok: false, reason: `Temporal worker is ${runState} (workflow poller ${workflowPollerState}, activity poller ${activityPollerState})` };
    });
    stops.push({
      name: 'Temporal worker',
      stop: async () => {
        if (w.getState() === 'RUNNING') w.shutdown();
        if (w.getState() === 'FAILED' && !runSettled) {
          // Its shutdown may never finish; waiting would only hold the process up (the connection stays held by it).
          logger.warn('not waiting for the failed Temporal worker to finish shutting down');
        } else {
          await workerRun?.catch((err: unknown) => logger.error({ err }, 'worker stopped with an error'));
          await connection.close();
        }
        await deadLetters.close();
      },
    }, { name: 'PostgreSQL readiness probe', stop: () => probeDb.end() });
  }

  let bridge: Bridge | undefined;
  if (runBridge) {
    // kafkajs rides out a broker outage of about 30 s itself (10 retries up to 5 s apart), keeping the consumer's
    // group membership, so the bridge resumes within seconds of the broker's return; every failed attempt is counted.
    // A longer outage crashes the consumer, which is restarted as a new member (see bridge.ts).
    const onConnectionError = () => {
      metrics.retries.inc({ operation: 'kafka-connect' });
      metrics.failures.inc({ operation: 'kafka-connect', error_class: 'KafkaJSConnectionError' });
    };
    const kafka = createKafka(config, logger, { retries: KAFKA_RETRY.consumer, onConnectionError });
    const senderKafka = createKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-dlq`, retries: KAFKA_RETRY.requests, onConnectionError });
    // The bridge's own Temporal connection: few in-client retries, so an outage reaches the bridge's backoff gate
    // (partition paused, counted, abandonable on shutdown) instead of hiding inside one call, and a reconnect
    // backoff capped at 5 s, so delivery resumes within seconds of Temporal coming back.
    const bridgeConnection = await waitForDependency(temporal, health.attempting(temporal, () => connectTemporal(config, {
      interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: BRIDGE_TEMPORAL_RPC.maxAttempts }))],
      channelArgs: {
        'grpc.initial_reconnect_backoff_ms': BRIDGE_TEMPORAL_RPC.initialReconnectBackoffMs,
        'grpc.max_reconnect_backoff_ms': BRIDGE_TEMPORAL_RPC.maxReconnectBackoffMs,
      },
    })), logger, signal, permanent);
    stops.push({ name: 'bridge Temporal connection', stop: () => bridgeConnection.close() });
    // With tracing, signal-with-start carries the record's span context to the workflow (its start and signal headers).
    const bridgeClient = temporalClient(config, bridgeConnection, tracing ? { interceptors: { workflow: tracing.clientInterceptors() } } : {});
    bridge = createBridge({
      kafka,
      senderKafka,
      topic: config.ORDERS_TOPIC,
      dlqTopic: config.DLQ_TOPIC,
      groupId: config.CONSUMER_GROUP,
      starter: (opts.wrapStarter ?? ((x) => x))(createOrderStarter(bridgeClient, config.TEMPORAL_TASK_QUEUE, workflowSettings(config))),
      logger,
      metrics,
      lanes: config.BRIDGE_LANES,
      maxInFlight: config.BRIDGE_MAX_IN_FLIGHT,
      maxDeliveries: config.BRIDGE_MAX_DELIVERIES,
      maxBytesPerPartition: config.BRIDGE_MAX_BYTES_PER_PARTITION,
      maxBytes: config.BRIDGE_MAX_BYTES,
      sessionTimeoutMs: config.BRIDGE_SESSION_TIMEOUT_MS,
      retry: opts.bridgeRetry,
      tracer: tracing?.tracer,
      dlqEncryption: config.payloadEncryption,
    });
    opts.onBridge?.(bridge);
    const b = bridge;
    b.events.on('failed', (err) => {
      if (stopping) return;
      logger.fatal({ err: err.message }, 'Kafka consumer gave up; this instance no longer consumes');
      fail(new Error(`Kafka consumer gave up: ${err.message}`, { cause: err }));
    });
    // One connection without kafkajs's own retries first: a refused credential or an untrusted certificate stops
    // start-up at once (the process exits non-zero), while a broker that is down is waited for.
    const kafkaName = `Kafka at ${config.KAFKA_BROKERS.join(',')}`;
    await waitForDependency(kafkaName, health.attempting(kafkaName, async () => {
      await probeKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-probe`, onConnectionError });
      await b.start();
    }), logger, signal, {
      permanent: (err) => asPermanent(err, config),
    });
    health.set('kafka', () => b.kafkaStatus());
    // The bridge stops first: nothing new is handed to workflows while the worker drains.
    stops.unshift({ name: 'bridge', stop: () => b.stop() });
  }

  if (server) stops.push({ name: 'metrics and health server', stop: () => new Promise((resolve) => server!.close(resolve)) });
  stops.push({ name: 'Temporal client', stop: () => client.connection.close() }, { name: 'PostgreSQL pool', stop: () => db.end() });
  // Last, once nothing makes spans any more: what is still buffered is exported before the process exits.
  if (tracing) stops.push({ name: 'tracing (exporting the last spans)', stop: () => tracing.shutdown() });
  if (!opts.observability) health.started();

  let stopped: Promise<void> | undefined;
  let next = stops.length;
  return {
    config,
    metrics,
    db,
    client,
    worker,
    bridge,
    health,
    tracing,
    failed,
    stillStopping: () => (stopped === undefined ? [] : stops.slice(next).map((s) => s.name)),
    stop() {
      stopping = true;
      health.stopping('stopping');
      stopped ??= (async () => {
        for (next = 0; next < stops.length; next += 1) {
          await stops[next]!.stop().catch((err: unknown) => logger.warn({ err, stopping: stops[next]!.name }, 'error while stopping'));
        }
      })();
      return stopped;
    },
  };
}

/** A PermanentStartupError for a Kafka failure no wait can cure (permanentKafkaFailure), else undefined. */
function asPermanent(err: unknown, config: Config): PermanentStartupError | undefined {
  const why = permanentKafkaFailure(err, config);
  return why === undefined ? undefined : new PermanentStartupError(why, { cause: err });
}

/**
 * One connection to Kafka: the PermanentStartupError when the brokers refuse this client for good, undefined when
 * they accept it — or cannot be reached now, which only delays dead letters (logged, not waited for).
 */
async function kafkaRefusal(config: Config, logger: Logger): Promise<PermanentStartupError | undefined> {
  try {
    await probeKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-worker-probe` });
    return undefined;
  } catch (err) {
    const permanent = asPermanent(err, config);
    if (!permanent) logger.warn({ err: (err as Error).message }, `Kafka at ${config.KAFKA_BROKERS.join(',')} is not reachable now; dead letters wait for it`);
    return permanent;
  }
}
