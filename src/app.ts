/**
 * Composes the running service from the configuration: the Temporal worker hosting the order workflow and
 * its activities, and the Kafka bridge feeding it. `npm start`, the demo and the integration tests all start
 * the service through here, so what is tested is what runs.
 */
import type { Server } from 'node:http';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { NativeConnection, Worker as TemporalWorker } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { createLedgerRetentionActivities } from '../activities/ledger-retention.js';
import { createBridge, type Bridge, type TransientRetry } from './bridge/bridge.js';
import { createKafka, permanentKafkaFailure, probeKafka } from './kafka/client.js';
import { createSender } from './kafka/sender.js';
import { createOrderStarter, type OrderStarter } from './bridge/order-starter.js';
import type { Config } from './config.js';
import { createDeadLetterSink } from './dlq/sink.js';
import type { Logger } from './log.js';
import { createMetrics, serveMetrics, type Metrics } from './metrics.js';
import { BRIDGE_TEMPORAL_RPC, KAFKA_RETRY } from './retry-policies.js';
import { PermanentStartupError, waitForDependency } from './startup.js';
import { ensureLedgerRetentionSchedule } from './ledger-retention-schedule.js';
import { createDb, type Db } from './store/db.js';
import { connectClient, workflowBundle } from './temporal.js';
import { createWarehouseClient } from './warehouse/client.js';
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
}

export interface App {
  config: Config;
  metrics: Metrics;
  db: Db;
  client: Client;
  worker?: Worker;
  bridge?: Bridge;
  stop(): Promise<void>;
}

export async function startApp(config: Config, opts: AppOptions): Promise<App> {
  const { logger } = opts;
  const runWorker = opts.roles?.worker ?? config.FULFILMENT_ROLES.includes('worker');
  const runBridge = opts.roles?.bridge ?? config.FULFILMENT_ROLES.includes('bridge');
  const metrics = createMetrics({ defaultMetrics: opts.serveMetrics ?? false });
  const db = createDb(config.DATABASE_URL);
  const { signal } = opts;
  const temporal = `Temporal at ${config.TEMPORAL_ADDRESS}`;
  const client = await waitForDependency(temporal, () => connectClient(config.TEMPORAL_ADDRESS, config.TEMPORAL_NAMESPACE), logger, signal);
  const stops: (() => Promise<unknown>)[] = [];
  let stopping = false;

  let worker: Worker | undefined;
  let workerRun: Promise<void> | undefined;
  if (runWorker) {
    // A worker alone reaches Kafka only to dead-letter and does not wait for it; but a refused credential or
    // certificate would only show at its first dead letter, so it is checked once, beside the other start-up steps.
    const kafkaRefused = runBridge ? Promise.resolve(undefined) : kafkaRefusal(config, logger);
    const connection = await waitForDependency(temporal, () => NativeConnection.connect({ address: config.TEMPORAL_ADDRESS }), logger, signal);
    // The worker's effects need PostgreSQL: it starts polling only once the database answers.
    await waitForDependency('PostgreSQL', () => db.query('SELECT 1'), logger, signal);
    // The ledger-retention schedule, created or brought in step with this worker's configuration.
    await waitForDependency(temporal, () => ensureLedgerRetentionSchedule(client, config, logger), logger, signal);
    const refused = await kafkaRefused;
    if (refused) {
      await connection.close();
      throw refused;
    }
    const deadLetters = createDeadLetterSink(createSender(createKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-worker` })), config.DLQ_TOPIC, config.CONSUMER_GROUP);
    worker = await TemporalWorker.create({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowBundle: await workflowBundle(),
      activities: { ...createLedgerRetentionActivities({ db, logger: logger.child({ component: 'activities' }), metrics, minRetentionDays: config.KAFKA_RETENTION_DAYS + config.REDRIVE_WINDOW_DAYS }), ...createActivities({ db, warehouse: createWarehouseClient(config.WAREHOUSE_URL, {
        breaker: {
          failures: config.WAREHOUSE_BREAKER_FAILURES,
          halfOpenAfterMs: config.WAREHOUSE_BREAKER_HALF_OPEN_MS,
          onStateChange: (state) => {
            metrics.circuitState.set({ dependency: 'warehouse' }, { closed: 0, 'half-open': 1, open: 2 }[state]);
            if (state === 'open') metrics.circuitOpened.inc({ dependency: 'warehouse' });
          },
        },
      }), logger: logger.child({ component: 'activities' }), metrics, deadLetters }) },
      // Activities still running after the grace time are cancelled; their retries resume on another worker.
      shutdownGraceTime: config.WORKER_SHUTDOWN_GRACE_MS,
      // Cancellation reaches a running activity only through its heartbeat: keep that prompt.
      maxHeartbeatThrottleInterval: '2 seconds',
    });
    workerRun = worker.run();
    const w = worker;
    // The SDK retries lost polls itself; a worker that stops on its own is fatal and must not go unnoticed.
    workerRun.catch((err: unknown) => {
      if (!stopping) logger.fatal({ err }, 'Temporal worker stopped unexpectedly; this instance no longer runs workflows');
    });
    stops.push(async () => {
      if (w.getState() === 'RUNNING') w.shutdown();
      await workerRun?.catch((err: unknown) => logger.error({ err }, 'worker stopped with an error'));
      await connection.close();
      await deadLetters.close();
    });
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
    const bridgeConnection = await waitForDependency(temporal, () => Connection.connect({
      address: config.TEMPORAL_ADDRESS,
      interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: BRIDGE_TEMPORAL_RPC.maxAttempts }))],
      channelArgs: {
        'grpc.initial_reconnect_backoff_ms': BRIDGE_TEMPORAL_RPC.initialReconnectBackoffMs,
        'grpc.max_reconnect_backoff_ms': BRIDGE_TEMPORAL_RPC.maxReconnectBackoffMs,
      },
    }), logger, signal);
    stops.push(() => bridgeConnection.close());
    const bridgeClient = new Client({ connection: bridgeConnection, namespace: config.TEMPORAL_NAMESPACE });
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
      maxBytesPerPartition: config.BRIDGE_MAX_BYTES_PER_PARTITION,
      sessionTimeoutMs: config.BRIDGE_SESSION_TIMEOUT_MS,
      retry: opts.bridgeRetry,
    });
    opts.onBridge?.(bridge);
    const b = bridge;
    // One connection without kafkajs's own retries first: a refused credential or an untrusted certificate stops
    // start-up at once (the process exits non-zero), while a broker that is down is waited for.
    await waitForDependency(`Kafka at ${config.KAFKA_BROKERS.join(',')}`, async () => {
      await probeKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-probe`, onConnectionError });
      await b.start();
    }, logger, signal, {
      permanent: (err) => asPermanent(err, config),
    });
    // The bridge stops first: nothing new is handed to workflows while the worker drains.
    stops.unshift(() => b.stop());
  }

  let server: Server | undefined;
  if ((opts.serveMetrics ?? true) && config.METRICS_PORT > 0) {
    server = await serveMetrics(metrics.registry, config.METRICS_PORT, config.METRICS_HOST);
    stops.push(() => new Promise((resolve) => server!.close(resolve)));
  }
  stops.push(() => client.connection.close(), () => db.end());

  let stopped: Promise<void> | undefined;
  return {
    config,
    metrics,
    db,
    client,
    worker,
    bridge,
    stop() {
      stopping = true;
      stopped ??= (async () => {
        for (const stop of stops) await stop().catch((err: unknown) => logger.warn({ err }, 'error while stopping'));
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
