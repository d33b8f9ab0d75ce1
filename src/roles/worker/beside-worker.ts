/**
 * What runs beside the Temporal worker in the same process, each stopped after the worker has drained: the shipment
 * resumer (wakes orders waiting for the warehouse), the status relay with its lag gauge, and the continuous
 * reconciliation (read-only passes of `fulfilment reconcile`, as metrics).
 */
import { createDb, type Db } from '../../adapters/store/db.js';
import { createKafka } from '../../adapters/kafka/client.js';
import { createSender } from '../../adapters/kafka/sender.js';
import type { Lifecycle } from '../../base/lifecycle.js';
import type { RoleContext } from '../role.js';
import { watchStatusRelayLag } from '../../adapters/status-events/relay-lag.js';
import { startStatusRelay } from '../../adapters/status-events/relay.js';
import { runtimeConnection } from '../../adapters/store/connection.js';
import type { WarehouseClient } from '../../adapters/warehouse/client.js';
import { reconcileIntervalMs, startContinuousReconcile } from './continuous-reconcile.js';
import { startShipmentResumer } from './shipment-resumer.js';

/** Wakes orders waiting for the warehouse: one probe at a time while it is down, paced once it answers. */
export function startResumer(
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
 * The status relay (src/adapters/status-events/relay.ts) of STATUS_TOPIC and its lag gauge (read on the probe's pool):
 * it publishes the outbox, and is never part of readiness, so Kafka being down leaves the input side's health alone
 * (the lag metric and its alert tell of it).
 */
export function startRelay({ config, logger, metrics, tracing }: RoleContext, probeDb: Db, life: Lifecycle): void {
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
 * The continuous reconciliation (src/roles/worker/continuous-reconcile.ts) on a one-connection pool and a Kafka client
 * of its own, so its reads never wait behind, or hold up, the activities' connections or the relay's producer.
 */
export function startReconciler({ config, logger, metrics, client }: RoleContext, life: Lifecycle): void {
  if (reconcileIntervalMs(config) === 0) {
    metrics.reconcile.interval.set(0);
    return;
  }
  const reconcileLogger = logger.child({ component: 'reconcile' });
  const db = createDb(runtimeConnection(config), 1);
  life.defer('reconcile pool', () => db.end());
  const kafka = createKafka(config, reconcileLogger, { clientId: `${config.KAFKA_CLIENT_ID}-reconcile` });
  const reconciler = startContinuousReconcile({
    config,
    kafka,
    db,
    client,
    metrics: metrics.reconcile,
    logger: reconcileLogger,
  });
  life.defer('continuous reconciliation', () => reconciler.stop());
}
