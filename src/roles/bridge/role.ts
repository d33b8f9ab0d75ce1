/**
 * The bridge role: the Kafka consumer that hands each order event to its order's workflow (src/roles/bridge/bridge.ts).
 * Beside a worker in the same process it starts runs eagerly on the worker's own connection (BRIDGE_EAGER_START);
 * alone it has a Temporal connection of its own. It waits for Kafka at start-up — a refused credential or an untrusted
 * certificate stops it at once — and returns what to stop (first of all: nothing new is handed to workflows while a
 * worker drains) and a promise that resolves if its consumer gives up for good.
 */
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { createKafka, probeKafka } from '../../adapters/kafka/client.js';
import { createOutcomeReporter } from '../../base/outcomes.js';
import { runtimeConnection } from '../../adapters/store/connection.js';
import { createDb, type Db } from '../../adapters/store/db.js';
import { BRIDGE_TEMPORAL_RPC, KAFKA_RETRY, type TransientRetry } from '../../base/retry-policies.js';
import { asPermanentKafkaFailure, type RoleContext, type StartedRole } from '../role.js';
import { waitForDependency } from '../../base/startup.js';
import { connectTemporal, temporalClient } from '../../domain/temporal.js';
import { workflowSettings } from '../../domain/workflow-settings.js';
import { tenantWeights } from '../../base/tenants/weights.js';
import { createBridge, DEFAULT_READ_AHEAD_RECORDS, type Bridge } from './bridge.js';
import { createLateEventRecorder } from './late-events.js';
import { createOrderStarter, type OrderStarter } from './order-starter.js';
import { Lifecycle } from '../../base/lifecycle.js';

/** Connections of a bridge's own pool (a bridge alone): the late path's one transaction per late event. */
const LATE_PATH_POOL_SIZE = 4;

export interface BridgeRoleOptions {
  /** The worker's connection when a worker runs in this process (eager starts); undefined for a bridge alone. */
  workerConnection?: NativeConnection;
  /** Whether the worker beside it takes every new run now (its version current, nothing ramping): eager starts only then. */
  workerTakesNewRuns?: () => boolean;
  /** The worker's PostgreSQL pool when a worker runs in this process; a bridge alone opens a small one of its own. */
  workerDb?: Db;
  bridgeRetry?: Partial<TransientRetry>;
  /** Decorates the bridge's order starter (tests use it to crash between delivery and commit). */
  wrapStarter?: (starter: OrderStarter) => OrderStarter;
  /** Called with the bridge before it starts consuming (tests use it to watch the consumer from its first join). */
  onBridge?: (bridge: Bridge) => void;
}

/**
 * Starts the role in named steps, each registering how to stop what it started; stop() undoes them last first — the
 * bridge itself first of all, so nothing new reaches workflows while a worker beside it drains.
 */
export async function startBridgeRole(
  ctx: RoleContext,
  opts: BridgeRoleOptions,
): Promise<StartedRole & { bridge: Bridge }> {
  return new Lifecycle(ctx.logger).startOrUndo(async (life) => {
    const kafka = kafkaClients(ctx);
    const client = await connectStarter(ctx, opts, life);
    const db = lateEventStore(ctx, opts, life);
    const bridge = createOrderBridge(ctx, opts, kafka, client, db);
    opts.onBridge?.(bridge);
    const watched = watchBridge(ctx, bridge);
    await startConsuming(ctx, bridge, watched, kafka.onConnectionError, life);
    return { bridge, failed: watched.promise, lifecycle: life };
  });
}

/**
 * The consumer's and the dead-letter producer's Kafka clients. kafkajs rides out a broker outage of about 30 s itself
 * (10 retries up to 5 s apart), keeping the consumer's group membership, so the bridge resumes within seconds of the
 * broker's return; every failed attempt is counted. A longer outage crashes the consumer, which is restarted as a new
 * member (bridge.ts).
 */
function kafkaClients({ config, logger, metrics }: RoleContext) {
  const onConnectionError = () => {
    metrics.retries.inc({ operation: 'kafka-connect' });
    metrics.failures.inc({ operation: 'kafka-connect', error_class: 'KafkaJSConnectionError' });
  };
  return {
    onConnectionError,
    consumer: createKafka(config, logger, { retries: KAFKA_RETRY.consumer, onConnectionError }),
    sender: createKafka(config, logger, {
      clientId: `${config.KAFKA_CLIENT_ID}-dlq`,
      retries: KAFKA_RETRY.requests,
      onConnectionError,
    }),
  };
}

/**
 * The Temporal client orders are started with. Beside a worker, orders start eagerly on the worker's own connection:
 * their first task never waits for a poll. Otherwise the bridge's own connection: few in-client retries, so an
 * outage reaches the bridge's backoff gate (partition paused, counted, abandonable on shutdown) instead of hiding
 * inside one call, and a reconnect backoff capped at 5 s, so delivery resumes within seconds of Temporal coming back.
 * With tracing, the start or signal carries the record's span context to the workflow (its headers).
 */
async function connectStarter(
  { config, logger, health, tracing, signal, permanent }: RoleContext,
  opts: BridgeRoleOptions,
  life: Lifecycle,
): Promise<{ client: Client; eager: boolean }> {
  const eager = opts.workerConnection !== undefined && config.BRIDGE_EAGER_START;
  const temporal = `Temporal at ${config.TEMPORAL_ADDRESS}`;
  const connection = eager
    ? opts.workerConnection!
    : await waitForDependency(
        temporal,
        health.attempting(temporal, () =>
          connectTemporal(config, {
            interceptors: [
              makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: BRIDGE_TEMPORAL_RPC.maxAttempts })),
            ],
            channelArgs: {
              'grpc.initial_reconnect_backoff_ms': BRIDGE_TEMPORAL_RPC.initialReconnectBackoffMs,
              'grpc.max_reconnect_backoff_ms': BRIDGE_TEMPORAL_RPC.maxReconnectBackoffMs,
            },
          }),
        ),
        logger,
        signal,
        permanent,
      );
  if (!eager) life.defer('bridge Temporal connection', () => connection.close());
  const client = temporalClient(
    config,
    connection,
    tracing ? { interceptors: { workflow: tracing.clientInterceptors() } } : {},
  );
  return { client, eager };
}

/** Events whose order's run has closed are recorded through the store (the late path), as the runtime role. */
function lateEventStore({ config }: RoleContext, opts: BridgeRoleOptions, life: Lifecycle): Db {
  if (opts.workerDb) return opts.workerDb;
  const db = createDb(runtimeConnection(config), LATE_PATH_POOL_SIZE);
  life.defer('bridge PostgreSQL pool', () => db.end());
  return db;
}

function createOrderBridge(
  { config, logger, metrics, tracing }: RoleContext,
  opts: BridgeRoleOptions,
  kafka: ReturnType<typeof kafkaClients>,
  { client, eager }: { client: Client; eager: boolean },
  db: Db,
): Bridge {
  const late = createLateEventRecorder(
    { db, statusTopic: config.STATUS_TOPIC },
    createOutcomeReporter({ logger, metrics }),
  );
  const takesNewRuns = opts.workerTakesNewRuns;
  const weightOf = tenantWeights(config);
  const starter = createOrderStarter(client, config.TEMPORAL_TASK_QUEUE, workflowSettings(config), late, {
    eager: eager && takesNewRuns ? takesNewRuns : eager,
    weightOf,
  });
  if (config.BRIDGE_LANES !== undefined)
    logger.warn(
      { BRIDGE_LANES: config.BRIDGE_LANES },
      'BRIDGE_LANES is no longer used: every order has a lane of its own; BRIDGE_MAX_DELIVERIES bounds the calls in flight',
    );
  return createBridge({
    kafka: kafka.consumer,
    senderKafka: kafka.sender,
    topic: config.ORDERS_TOPIC,
    dlqTopic: config.DLQ_TOPIC,
    groupId: config.CONSUMER_GROUP,
    starter: opts.wrapStarter ? opts.wrapStarter(starter) : starter,
    logger,
    metrics,
    maxDeliveries: config.BRIDGE_MAX_DELIVERIES,
    weightOf,
    readAhead: {
      records: config.BRIDGE_READ_AHEAD_RECORDS ?? config.BRIDGE_MAX_IN_FLIGHT ?? DEFAULT_READ_AHEAD_RECORDS,
      bytes: config.BRIDGE_READ_AHEAD_BYTES,
    },
    tenantLabels: config.BRIDGE_TENANT_METRIC_LABELS,
    coalesceMaxEvents: config.BRIDGE_COALESCE_MAX_EVENTS,
    maxBytesPerPartition: config.BRIDGE_MAX_BYTES_PER_PARTITION,
    maxBytes: config.BRIDGE_MAX_BYTES,
    sessionTimeoutMs: config.BRIDGE_SESSION_TIMEOUT_MS,
    retry: opts.bridgeRetry,
    tracer: tracing?.tracer,
    dlqEncryption: config.payloadEncryption,
    recordRetryBudgetMs: config.BRIDGE_RECORD_RETRY_BUDGET_SECONDS * 1000,
    parkedBudgetMs: config.BRIDGE_PARKED_BUDGET_SECONDS * 1000,
  });
}

/** Resolves, with why, if the bridge's consumer gives up for good while it is not being stopped. */
function watchBridge({ logger }: RoleContext, bridge: Bridge): { promise: Promise<Error>; stopping(): void } {
  let stopping = false;
  const promise = new Promise<Error>((resolve) =>
    bridge.events.on('failed', (err) => {
      if (stopping) return;
      logger.fatal(
        { err: err.message, errorClass: err.name },
        'the bridge stopped for good; this instance no longer consumes',
      );
      resolve(new Error(`the bridge stopped for good: ${err.message}`, { cause: err }));
    }),
  );
  return { promise, stopping: () => void (stopping = true) };
}

/**
 * Waits for Kafka and starts consuming. One connection without kafkajs's own retries first: a refused credential or
 * an untrusted certificate stops start-up at once (the process exits non-zero), while a broker that is down is waited
 * for. The bridge is then the first thing the role stops.
 */
async function startConsuming(
  { config, logger, health, signal }: RoleContext,
  bridge: Bridge,
  watched: { stopping(): void },
  onConnectionError: () => void,
  life: Lifecycle,
): Promise<void> {
  const kafkaName = `Kafka at ${config.KAFKA_BROKERS.join(',')}`;
  await waitForDependency(
    kafkaName,
    health.attempting(kafkaName, async () => {
      await probeKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-probe`, onConnectionError });
      await bridge.start();
    }),
    logger,
    signal,
    { permanent: (err) => asPermanentKafkaFailure(err, config) },
  );
  health.set('kafka', () => bridge.kafkaStatus());
  life.defer('bridge', () => {
    watched.stopping();
    return bridge.stop();
  });
}
