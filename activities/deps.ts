/** What the order's activities are built over (createActivities): one set of dependencies, handed to each concern. */
import type { TransientRetry } from '../src/base/retry-policies.js';
import type { Logger } from '../src/base/log.js';
import type { OutcomeMetrics } from '../src/base/outcomes.js';
import type { Metrics } from '../src/base/metrics.js';
import type { Db } from '../src/adapters/store/db.js';
import type { PauseBook } from '../src/adapters/store/pause-book.js';
import type { DeadLetterSink } from '../src/adapters/dlq/sink.js';
import type { WarehouseClient } from '../src/adapters/warehouse/client.js';

export interface ActivityDeps {
  db: Db;
  warehouse: WarehouseClient;
  /** The topic every status change's event is published to (STATUS_TOPIC), written with it into the outbox. */
  statusTopic: string;
  logger: Logger;
  metrics?: Pick<Metrics, 'ordersHeldFailed' | 'ordersRecallFailed' | 'waitsUnrecorded'> & OutcomeMetrics;
  deadLetters?: DeadLetterSink;
  /** How often the shipment activity heartbeats while it waits, milliseconds. Default 2000. */
  heartbeatMs?: number;
  /** The delays between an order's own shipment attempts (WAREHOUSE_RETRY_*); default SHIPMENT_BACKOFF. */
  shipmentBackoff?: TransientRetry;
  /** Operators' pauses of shipping (`fulfilment shipping pause`); absent, nothing is ever paused. */
  pauses?: PauseBook;
  /**
   * What a waiting order is told with its wait (ORDER_SHIPMENT_DEADLINE_SECONDS, ORDER_WAIT_RECHECK_SECONDS); absent,
   * the run keeps what its start gave it and checks again after the default.
   */
  waits?: { deadlineSeconds: number; recheckSeconds: number };
}
