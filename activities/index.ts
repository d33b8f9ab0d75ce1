/**
 * The order's activities, built by a factory over their dependencies so tests can pass fakes.
 * Every effect on PostgreSQL is one transaction that claims its key in `processed_events` first and applies
 * the effect second: a concurrent or repeated attempt loses at the claim and reads back the stored truth.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { halfJitterGenerator } from 'cockatiel';
import { SHIPMENT_BACKOFF, type TransientRetry } from '../src/retry-policies.js';
import { CONSUMER_NAME, ORDER_PLACED, type OrderEvent, type OrderLine, type StoredOrder } from '../workflows/api.js';
import { DependencyUnavailableError, PermanentError } from '../src/errors.js';
import type { Logger } from '../src/log.js';
import type { EventOutcome, Metrics } from '../src/metrics.js';
import { inTenantTransaction, type Db, type Tx } from '../src/store/db.js';
import {
  readFulfilment,
  recordCancellation,
  recordFailed,
  recordPlacement,
  recordShipped,
  reopenFailed,
  toStored,
} from '../src/store/fulfilments.js';
import { claim } from '../src/store/processed-events.js';
import { classifySqlError } from '../src/store/sql-errors.js';
import type { DeadLetter, DeadLetterForm } from '../src/dlq/dead-letter.js';
import type { WarehouseClient } from '../src/warehouse/client.js';

/** Where events refused after the edge are dead-lettered (the same DLQ topic the bridge writes). */
export interface DeadLetterSink {
  /** Consumer group named in the dead letters' headers, so every dead letter says whose it was. */
  group: string;
  publish(d: DeadLetter): Promise<DeadLetterForm>;
}

export interface ActivityDeps {
  db: Db;
  warehouse: WarehouseClient;
  logger: Logger;
  metrics?: Metrics;
  deadLetters?: DeadLetterSink;
  /** How often the shipment activity heartbeats while it waits, milliseconds. Default 2000. */
  heartbeatMs?: number;
}

export interface ShipInput {
  tenantId: string;
  orderId: string;
  key: string;
  lines: OrderLine[];
  shippingAddress?: Record<string, unknown>;
  correlationId?: string;
}

/** An event the workflow could not apply for good, with the failure that said so. */
export interface RefusedEvent {
  event: OrderEvent;
  error: { name: string; message: string };
  /** Workflow time of the refusal, ISO 8601. */
  refusedAt: string;
}

export interface OutcomeReport {
  event: Pick<OrderEvent, 'eventId' | 'type' | 'tenantId' | 'orderId' | 'orderVersion' | 'correlationId' | 'occurredAt'>;
  outcome: EventOutcome;
  layer?: 'workflow' | 'store';
  detail?: string;
}

export { SHIPMENT_BACKOFF } from '../src/retry-policies.js';

/**
 * The next delay of attempt `attempt` (1-based) under `policy`, with cockatiel's half jitter: between half and all
 * of min(max, initial·2^(attempt-1)) — never zero, and spread so that orders failing together retry apart.
 */
export function jitteredDelayMs(attempt: number, policy: TransientRetry): number {
  return halfJitterGenerator(Math.max(0, attempt - 1), { generator: halfJitterGenerator, exponent: 2, initialDelay: policy.initialDelayMs, maxDelay: policy.maxDelayMs })[0];
}

/** Permanent errors become non-retryable ApplicationFailures, so Temporal does not retry a business refusal. */
async function permanentAsFailure<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof PermanentError) throw ApplicationFailure.nonRetryable(err.message, err.name);
    throw err;
  }
}

/** The fields of an activity's input that identify the event (or order) an attempt works for. */
const ATTEMPT_FIELDS = ['eventId', 'type', 'orderVersion', 'correlationId', 'tenantId', 'orderId', 'key', 'retry'] as const;

/**
 * One log line per attempt of an activity: its attempt number (Temporal's activity info), activity type and
 * workflow id, and whichever of the event's id, type, version and correlation id, tenant and order its input
 * carries (activities that act on an order rather than one event have no event id).
 */
function attemptFields(input: object): Record<string, unknown> {
  const info = Context.current().info;
  const fields: Record<string, unknown> = { attempt: info.attempt, activityType: info.activityType, workflowId: info.workflowExecution?.workflowId };
  for (const k of ATTEMPT_FIELDS) if ((input as Record<string, unknown>)[k] !== undefined) fields[k] = (input as Record<string, unknown>)[k];
  return fields;
}

export function createActivities(deps: ActivityDeps) {
  const { db, warehouse, logger, metrics } = deps;

  /** Claim-then-effect for `key`; when already claimed, answers with the stored row as a duplicate. */
  async function claimThen(
    tenantId: string,
    orderId: string,
    key: string,
    effect: (tx: Tx) => Promise<StoredOrder>,
  ): Promise<StoredOrder> {
    return permanentAsFailure(() =>
      inTenantTransaction(db, tenantId, async (tx) => {
        if (!(await claim(tx, CONSUMER_NAME, tenantId, key))) {
          const row = await readFulfilment(tx, tenantId, orderId);
          if (!row) throw new Error(`claim ${key} exists but order ${tenantId}/${orderId} has no row`);
          return toStored(row, 'duplicate');
        }
        return effect(tx);
      }).catch((err: unknown) => {
        throw classifySqlError(err, key);
      }),
    );
  }

  return {
    /** Records a placement or cancellation: claim the event id, compare versions, write the row — one transaction. */
    async recordOrderEvent(event: OrderEvent): Promise<StoredOrder> {
      logger.info(attemptFields(event), 'recording order event');
      return claimThen(event.tenantId, event.orderId, event.eventId, (tx) =>
        event.type === ORDER_PLACED ? recordPlacement(tx, event, event.data) : recordCancellation(tx, event, event.data),
      );
    },

    /**
     * Asks the warehouse to ship, heartbeating while it waits; the key makes a repeat return the first shipment.
     * A transient failure asks Temporal for a jittered next delay, so orders failing together retry apart.
     */
    async shipOrder(input: ShipInput): Promise<string> {
      const ctx = Context.current();
      logger.info(attemptFields(input), 'asking the warehouse to ship');
      const timer = setInterval(() => ctx.heartbeat(), deps.heartbeatMs ?? 2000);
      try {
        const receipt = await permanentAsFailure(() =>
          warehouse.ship(input.key, input, ctx.cancellationSignal).catch((err: unknown) => {
            if (!(err instanceof DependencyUnavailableError)) throw err;
            throw ApplicationFailure.create({
              message: err.message,
              type: err.name,
              nextRetryDelay: jitteredDelayMs(ctx.info.attempt, SHIPMENT_BACKOFF),
            });
          }),
        );
        if (receipt.status === 'cancelled') {
          throw ApplicationFailure.nonRetryable(`shipment ${receipt.id} was recalled`, 'ShipmentRecalled');
        }
        return receipt.id;
      } finally {
        clearInterval(timer);
      }
    },

    /** Marks the order shipped (claim `shipped/...` first). A cancelled order is left cancelled and returned as is. */
    async markOrderShipped(input: { tenantId: string; orderId: string; shipmentId: string }): Promise<StoredOrder> {
      logger.info({ ...attemptFields(input), shipmentId: input.shipmentId }, 'marking order shipped');
      return claimThen(input.tenantId, input.orderId, `shipped/${input.tenantId}/${input.orderId}`, (tx) =>
        recordShipped(tx, input.tenantId, input.orderId, input.shipmentId),
      );
    },

    /**
     * Holds the order as failed with the reason once shipping gave up. The claim is per attempt: the first failure
     * keeps the key it always had (`failed/<tenant>/<order>`), the failure after retry n claims `…/<n>`, so a
     * retried order can be held as failed again.
     */
    async markOrderFailed(input: { tenantId: string; orderId: string; reason: string; retry?: number }): Promise<StoredOrder> {
      const key = `failed/${input.tenantId}/${input.orderId}${input.retry ? `/${input.retry}` : ''}`;
      logger.warn({ ...attemptFields(input), reason: input.reason }, 'holding order as failed');
      const stored = await claimThen(input.tenantId, input.orderId, key, (tx) => recordFailed(tx, input.tenantId, input.orderId, input.reason));
      if (stored.outcome === 'applied' && stored.status === 'failed') metrics?.ordersHeldFailed.inc();
      return stored;
    },

    /**
     * An operator's retry of a failed order (the workflow's retryShipment update): failed → pending in the store,
     * failure_reason cleared, the reason, time and count recorded. Claimed per retry (`retry/<tenant>/<order>/<n>`),
     * so a repeated attempt of one retry applies once; another status is returned as it is (stale).
     */
    async reopenFailedOrder(input: { tenantId: string; orderId: string; retry: number; reason: string }): Promise<StoredOrder> {
      logger.info({ ...attemptFields(input), reason: input.reason }, 'retrying a failed order');
      return claimThen(input.tenantId, input.orderId, `retry/${input.tenantId}/${input.orderId}/${input.retry}`, (tx) =>
        reopenFailed(tx, input.tenantId, input.orderId, input.reason),
      );
    },

    /** Compensation: recalls the shipment made under `key`, if any. Idempotent. */
    async recallShipment(input: { key: string }): Promise<boolean> {
      logger.info(attemptFields(input), 'recalling shipment');
      return permanentAsFailure(() => warehouse.cancel(input.key));
    },

    /**
     * Dead-letters an event the workflow refused for good (the store cannot hold it, a business refusal): the
     * same DLQ topic as the bridge's, with the origin the event carried, so every unprocessable event is in one
     * place and `dlq redrive` works for it. The value is the event as validated (flagged `dlq-value-form`).
     */
    async deadLetterEvent(refused: RefusedEvent): Promise<DeadLetterForm> {
      const { event, error } = refused;
      logger.warn({ ...attemptFields(event), errorClass: error.name, err: error.message }, 'dead-lettering an event the workflow refused');
      if (!deps.deadLetters) throw ApplicationFailure.nonRetryable('this worker has no dead-letter topic configured', 'DeadLetterUnavailable');
      const { origin, ...validated } = event;
      const at = new Date(refused.refusedAt);
      const form = await deps.deadLetters.publish({
        key: event.orderId,
        value: JSON.stringify(validated),
        origin: origin ?? { topic: 'unknown', partition: -1, offset: '-1' },
        group: deps.deadLetters.group,
        error,
        attempts: 1,
        firstFailureAt: at,
        lastFailureAt: new Date(),
        stage: 'workflow',
        ids: { eventId: event.eventId, tenantId: event.tenantId, correlationId: event.correlationId },
        valueForm: 'validated-event',
      });
      metrics?.eventsProcessed.inc({ type: event.type, outcome: 'dead-lettered' });
      return form;
    },

    /** Local activity: logs an event's outcome as the workflow decided it and counts it. */
    async reportOutcome(report: OutcomeReport): Promise<void> {
      const { event, outcome } = report;
      metrics?.eventsProcessed.inc({ type: event.type, outcome });
      if (outcome === 'duplicate') metrics?.duplicatesSuppressed.inc({ layer: report.layer ?? 'workflow' });
      if (outcome === 'applied') {
        const delay = (Date.now() - Date.parse(event.occurredAt)) / 1000;
        if (Number.isFinite(delay) && delay >= 0) metrics?.processingDelay.observe({ type: event.type }, delay);
      }
      logger.info({ ...attemptFields(event), outcome, detail: report.detail }, 'order event decided');
    },
  };
}

export type OrderActivities = ReturnType<typeof createActivities>;
