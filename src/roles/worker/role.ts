/**
 * The worker role: the Temporal worker that runs the order workflows and their activities. It connects to Temporal,
 * waits until PostgreSQL answers as the runtime role with the schema this code needs, keeps the retention schedules in
 * step with its configuration, and polls its task queue; beside it run the shipment resumer, the status relay and the
 * continuous reconciliation (src/roles/worker/beside-worker.ts). It returns its lifecycle (what to stop), and a promise
 * that resolves if the worker stops for good on its own (the process must then exit non-zero). Loaded only by a process
 * that runs the role (src/app.ts), so a bridge-only process never loads the worker SDK, pg or activities.
 */
import type { NativeConnection, Worker } from '@temporalio/worker';
import { createDb, type Db } from '../../adapters/store/db.js';
import { probeKafka } from '../../adapters/kafka/client.js';
import { Lifecycle } from '../../base/lifecycle.js';
import { asPermanentKafkaFailure, probeWithin, type RoleContext, type StartedRole } from '../role.js';
import { PermanentStartupError, waitForDependency } from '../../base/startup.js';
import { runtimeConnection } from '../../adapters/store/connection.js';
import { migrationFiles } from '../../adapters/store/migrate.js';
import { checkRuntimeRole, checkSchema, permanentDatabaseFailure } from '../../adapters/store/runtime-role.js';
import { connectNative } from '../../domain/temporal.js';
import { watchOrdersNeedingAttention } from './attention-gauges.js';
import { startReconciler, startRelay, startResumer } from './beside-worker.js';
import { createEffects } from './effects.js';
import { ensureLedgerRetentionSchedule } from './ledger-retention-schedule.js';
import { ensureStatusOutboxRetentionSchedule } from './status-outbox-retention-schedule.js';
import { createWorker, runWorker } from './temporal-worker.js';
import { takePlace, workerVersion } from './worker-version.js';

/**
 * Starts the role in named steps, each registering how to stop what it started: stop() undoes them last first
 * (the worker's drain, then the reconciliation, the shipment resumer and the relay — which publishes what the drain committed — then the
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
    startReconciler(ctx, life);
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
