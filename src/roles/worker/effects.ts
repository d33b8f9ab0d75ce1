/**
 * What the worker's activities act on besides the store: the dead-letter producer, the warehouse's client (with its
 * circuit breaker, brownout rule and slots shared between tenants by weight) and operators' pauses of shipping, read
 * in the background.
 */
import { createDeadLetterSink, type DeadLetterSink } from '../../adapters/dlq/sink.js';
import { createKafka } from '../../adapters/kafka/client.js';
import { createSender } from '../../adapters/kafka/sender.js';
import type { Db } from '../../adapters/store/db.js';
import { createWarehouseClient, type WarehouseClient } from '../../adapters/warehouse/client.js';
import { createWeightedSlots, type WeightedSlots } from '../../base/tenants/weighted-slots.js';
import { tenantWeights } from '../../base/tenants/weights.js';
import { tenantLabels } from '../../base/tenants/tenant-label.js';
import type { Metrics } from '../../base/metrics.js';
import type { Config } from '../../base/config.js';
import type { RoleContext } from '../role.js';
import { createPauseBook, type PauseBook } from '../../adapters/store/pause-book.js';
import type { Lifecycle } from '../../base/lifecycle.js';

/** What the activities act on besides the store: the dead-letter topic, the warehouse, operators' pauses. */
export interface Effects {
  deadLetters: DeadLetterSink;
  warehouse: WarehouseClient;
  pauses: PauseBook;
}

/** Built once per worker, each with how it stops; the pauses are read on the probe pool (`probeDb`). */
export function createEffects(
  { config, logger, metrics, tracing }: RoleContext,
  probeDb: Db,
  life: Lifecycle,
): Effects {
  const deadLetters = createDeadLetterSink(
    createSender(createKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-worker` })),
    config.DLQ_TOPIC,
    config.CONSUMER_GROUP,
    config.payloadEncryption,
  );
  life.defer('dead-letter producer', () => deadLetters.close());
  const warehouse = createWarehouseClient(config.WAREHOUSE_URL, {
    timeoutMs: config.WAREHOUSE_TIMEOUT_MS,
    slots: warehouseSlots(config, metrics),
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
    onLapsedRelease: (ended) =>
      logger.warn(
        { component: 'activities', pauseId: ended.id, tenantId: ended.tenantId ?? null, until: ended.releasingUntil },
        'ended a pause whose `shipping resume --rate` stopped before ending it; the resumers wake what it held',
      ),
  });
  life.defer('shipping pauses reader', () => pauses.stop());
  return { deadLetters, warehouse, pauses };
}

/** The worker's warehouse call slots, shared between tenants by weight, counted in fulfilment_warehouse_slots. */
function warehouseSlots(
  config: Pick<Config, 'WAREHOUSE_MAX_CONCURRENT_CALLS' | 'TENANT_WEIGHTS' | 'TENANT_DEFAULT_WEIGHT'>,
  metrics: Pick<Metrics, 'warehouseSlots'>,
): WeightedSlots {
  const label = tenantLabels({ named: config.TENANT_WEIGHTS?.keys() });
  const move = (state: 'in-use' | 'waiting') => (tenant: string, delta: 1 | -1) =>
    metrics.warehouseSlots.inc({ tenant: label(tenant), state }, delta);
  return createWeightedSlots(config.WAREHOUSE_MAX_CONCURRENT_CALLS, tenantWeights(config), {
    inUse: move('in-use'),
    waiting: move('waiting'),
  });
}
