/**
 * The order's activities, built by a factory over their dependencies so tests can pass fakes.
 * Every effect on PostgreSQL is one transaction that claims its key in `processed_events` first and applies
 * the effect second: a concurrent or repeated attempt loses at the claim and reads back the stored truth. A status
 * change the effect makes writes its event into the outbox in that same transaction, with the claim key (the basis
 * of the event's id), its cause and the trace context of the attempt that commits it.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { halfJitterGenerator } from 'cockatiel';
import { SHIPMENT_BACKOFF, type TransientRetry } from '../src/retry-policies.js';
import {
  FailureType,
  type OrderEvent,
  type OrderLine,
  type ShipmentWaitDetails,
  type RecallResolution,
  type StoredOrder,
  type StoredOrderDetail,
} from '../src/order.js';
import { DependencyUnavailableError, PermanentError, WarehouseOutageError } from '../src/errors.js';
import type { Logger } from '../src/log.js';
import { createOutcomeReporter, type OutcomeMetrics } from '../src/outcomes.js';
import type { Metrics } from '../src/metrics.js';
import { inTenantTransaction, type Db, type Tx } from '../src/db.js';
import {
  loadOrderDetail,
  recordFailed,
  recordRecallFailed,
  recordShipped,
  reopenFailed,
  resolveRecallFailed,
} from '../src/store/fulfilments.js';
import {
  claimThen as claimInStore,
  recordOrderEvent as recordInStore,
  type ChangeCause,
} from '../src/store/order-events.js';
import { classifySqlError } from '../src/store/sql-errors.js';
import type { PauseBook } from '../src/store/pause-book.js';
import { recordWait, type WaitingFor } from '../src/store/shipment-waits.js';
import { resolveActionId, retryActionId } from '../src/status-events/event.js';
import type { ChangeContext } from '../src/status-events/outbox.js';
import type { DeadLetterForm } from '../src/dlq/dead-letter.js';
import type { DeadLetterSink } from '../src/dlq/sink.js';
import type { WarehouseClient } from '../src/warehouse/client.js';

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

/** How soon (seconds) a run whose wait the store could not record checks again by itself, at most. */
export const UNRECORDED_WAIT_RECHECK_SECONDS = 30;
/** Why a wait is not recorded when the store holds the order otherwise: the run is behind the store, which wins. */
const NOT_PENDING = 'the store does not hold the order pending: no wait to record';

export interface ShipInput {
  tenantId: string;
  orderId: string;
  key: string;
  /**
   * The run waits when the warehouse is down for everyone or shipping is paused (WarehouseWaiting); absent (runs
   * started before waits existed), an outage fails the attempt as transient, as it did.
   */
  waitOnOutage?: true;
  /** The run has waited since then (ISO 8601) and was woken: a wait the store no longer holds is restored from it. */
  waitingSince?: string;
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

/** What the one shipping activity answers: the warehouse's shipment and the store's row after recording it. */
export interface RecordedShipment {
  shipmentId: string;
  stored: StoredOrder;
}

/**
 * What placeAndShip answers: the store's row after the placement, and the shipment when it was made and recorded, or
 * the wait it met (the warehouse down for everyone, or shipping paused).
 */
export interface PlacedAndShipped {
  stored: StoredOrder;
  shipped?: RecordedShipment;
  waiting?: ShipmentWaitDetails;
}

export { createOutcomeReporter } from '../src/outcomes.js';

export { SHIPMENT_BACKOFF } from '../src/retry-policies.js';

/**
 * The next delay of attempt `attempt` (1-based) under `policy`, with cockatiel's half jitter: between half and all
 * of min(max, initial·2^(attempt-1)) — never zero, and spread so that orders failing together retry apart.
 */
export function jitteredDelayMs(attempt: number, policy: TransientRetry): number {
  return halfJitterGenerator(Math.max(0, attempt - 1), {
    generator: halfJitterGenerator,
    exponent: 2,
    initialDelay: policy.initialDelayMs,
    maxDelay: policy.maxDelayMs,
  })[0];
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
const ATTEMPT_FIELDS = [
  'eventId',
  'type',
  'orderVersion',
  'correlationId',
  'tenantId',
  'orderId',
  'key',
  'retry',
] as const;

/**
 * One log line per attempt of an activity (local ones too): its attempt number (Temporal's activity info),
 * activity type and workflow id, and whichever of the event's id, type, version and correlation id, tenant and
 * order its input carries (activities that act on an order rather than one event have no event id).
 */
function attemptFields(input: object): Record<string, unknown> {
  const info = Context.current().info;
  const fields: Record<string, unknown> = {
    attempt: info.attempt,
    activityType: info.activityType,
    workflowId: info.workflowExecution?.workflowId,
  };
  for (const k of ATTEMPT_FIELDS)
    if ((input as Record<string, unknown>)[k] !== undefined) fields[k] = (input as Record<string, unknown>)[k];
  return fields;
}

export function createActivities(deps: ActivityDeps) {
  const { db, warehouse, logger, metrics } = deps;
  const report = createOutcomeReporter({ logger, metrics });

  const target = { db, statusTopic: deps.statusTopic };

  /**
   * Claim-then-effect for `key` (src/store/order-events.ts claimThen); a permanent refusal becomes a non-retryable
   * failure. `cause`: the input event or operator action behind the change.
   */
  function claimThen(
    tenantId: string,
    orderId: string,
    key: string,
    effect: (tx: Tx, change: ChangeContext) => Promise<StoredOrder>,
    cause: ChangeCause = {},
  ): Promise<StoredOrder> {
    return permanentAsFailure(() => claimInStore(target, { tenantId, orderId }, key, effect, cause));
  }

  /**
   * Asks the warehouse to ship, heartbeating while it waits; the key makes a repeat return the first shipment.
   * A transient failure asks Temporal for a jittered next delay, so orders failing together retry apart.
   */
  async function ship(input: ShipInput): Promise<string> {
    const ctx = Context.current();
    const pause = input.waitOnOutage ? await deps.pauses?.pauseFor(input.tenantId) : undefined;
    if (pause)
      throw await waiting(
        input,
        `shipping paused${pause.tenantId ? ` for tenant ${pause.tenantId}` : ''} by ${pause.pausedBy} at ${pause.pausedAt.toISOString()}: ${pause.reason}`,
        'pause',
      );
    logger.info(attemptFields(input), 'asking the warehouse to ship');
    // A local activity has no heartbeat (its workflow task is its liveness): only the activity heartbeats.
    const timer = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), deps.heartbeatMs ?? 2000);
    try {
      const receipt = await permanentAsFailure(() =>
        warehouse.ship(input.key, input, ctx.cancellationSignal).catch(async (err: unknown) => {
          if (err instanceof WarehouseOutageError && input.waitOnOutage)
            throw await waiting(input, err.message, 'outage');
          if (!(err instanceof DependencyUnavailableError)) throw err;
          throw ApplicationFailure.create({
            message: err.message,
            type: err.name,
            nextRetryDelay: jitteredDelayMs(ctx.info.attempt, deps.shipmentBackoff ?? SHIPMENT_BACKOFF),
          });
        }),
      );
      if (receipt.status === 'cancelled') {
        throw ApplicationFailure.nonRetryable(`shipment ${receipt.id} was recalled`, FailureType.shipmentRecalled);
      }
      return receipt.id;
    } finally {
      clearInterval(timer);
    }
  }

  /**
   * The shipment waits: the warehouse is down for everyone, or shipping is paused. The wait is recorded on the order's
   * row (where the resumer finds it) and returned as a non-retryable WarehouseWaiting failure, so Temporal spends no
   * attempt on it and the workflow waits to be woken. A store that cannot record it does not spend an attempt either:
   * the order waits all the same, unrecorded, and its run tries again by itself within 30 s — it waits for the store
   * as the rest of the service does. A wait the store had lost (the run says it waited, the row holds no wait) is
   * recorded again from the run's time, and counted.
   */
  async function waiting(input: ShipInput, reason: string, waitingFor: WaitingFor): Promise<ApplicationFailure> {
    const unrecorded = (why: string, label: 'not-recorded' | 'not-pending'): ShipmentWaitDetails => {
      metrics?.waitsUnrecorded.inc({ reason: label });
      logger.warn(
        { ...attemptFields(input), reason, unrecorded: why },
        'the shipment waits for the warehouse; the wait is not recorded, so the order checks again by itself',
      );
      const soon = Math.min(deps.waits?.recheckSeconds ?? Infinity, UNRECORDED_WAIT_RECHECK_SECONDS);
      const since = input.waitingSince ?? new Date().toISOString();
      return { since, reason, for: waitingFor, recheckSeconds: soon, unrecorded: why.slice(0, 300) };
    };
    let details: ShipmentWaitDetails;
    try {
      details = (await recordedWait(input, reason, waitingFor)) ?? unrecorded(NOT_PENDING, 'not-pending');
    } catch (err) {
      details = unrecorded((err as Error).message, 'not-recorded');
    }
    if (deps.waits) details.deadlineSeconds = deps.waits.deadlineSeconds;
    return ApplicationFailure.create({
      type: FailureType.warehouseWaiting,
      message: `waiting for the warehouse: ${reason}`,
      nonRetryable: true,
      details: [details],
    });
  }

  /** Records the wait on the order's row; undefined when the store does not hold the order pending. */
  async function recordedWait(
    input: ShipInput,
    reason: string,
    waitingFor: WaitingFor,
  ): Promise<ShipmentWaitDetails | undefined> {
    const recorded = await recordWait(db, {
      tenantId: input.tenantId,
      orderId: input.orderId,
      reason,
      taskQueue: Context.current().info.taskQueue,
      waitingFor,
      ...(input.waitingSince !== undefined ? { runWaitingSince: input.waitingSince } : {}),
    });
    if (!recorded) return undefined;
    const fields = attemptFields(input);
    if (recorded.restored) {
      metrics?.waitsUnrecorded.inc({ reason: 'row-lost' });
      logger.warn(
        { ...fields, waitingSince: input.waitingSince },
        "a waiting order's wait was gone from the store; recorded it again",
      );
    }
    const since = recorded.since.toISOString();
    logger.warn({ ...fields, reason, waitingSince: since }, 'the shipment waits for the warehouse');
    const recheck = deps.waits ? { recheckSeconds: deps.waits.recheckSeconds } : {};
    return { since, reason, for: waitingFor, ...recheck };
  }

  /** Marks the order shipped (claim `shipped/...` first). A cancelled order is left cancelled and returned as is. */
  function markShipped(input: { tenantId: string; orderId: string; shipmentId: string }): Promise<StoredOrder> {
    logger.info({ ...attemptFields(input), shipmentId: input.shipmentId }, 'marking order shipped');
    return claimThen(input.tenantId, input.orderId, `shipped/${input.tenantId}/${input.orderId}`, (tx, change) =>
      recordShipped(tx, input.tenantId, input.orderId, input.shipmentId, change),
    );
  }

  /** Claim the event id, compare versions, write the row — one transaction; with `reportOutcome`, then reports it. */
  async function recordEvent(event: OrderEvent, reportOutcome: boolean): Promise<StoredOrder> {
    logger.info(attemptFields(event), 'recording order event');
    const stored = await permanentAsFailure(() => recordInStore(target, event));
    if (reportOutcome) report({ event, outcome: stored.outcome, layer: 'store' });
    return stored;
  }

  /** ship, then markShipped; see shipAndRecordOrder. */
  async function shipAndRecord(input: ShipInput): Promise<RecordedShipment> {
    const shipmentId = await ship(input);
    const ctx = Context.current();
    if (ctx.cancellationSignal.aborted) throw new CancelledFailure('the shipment was cancelled before it was recorded');
    try {
      return {
        shipmentId,
        stored: await markShipped({ tenantId: input.tenantId, orderId: input.orderId, shipmentId }),
      };
    } catch (err) {
      throw ApplicationFailure.create({
        type: FailureType.shipmentUnrecorded,
        message: `shipment ${shipmentId} was made but not recorded: ${(err as Error).message ?? String(err)}`,
        nonRetryable: true,
        details: [shipmentId],
        cause: err instanceof Error ? err : undefined,
      });
    }
  }

  return {
    /**
     * Records a placement or cancellation: claim the event id, compare versions, write the row — one transaction.
     * With `reportOutcome` (where this runs as a local activity) it then reports the store's outcome itself, once the
     * transaction committed.
     */
    async recordOrderEvent(event: OrderEvent, opts: { reportOutcome?: boolean } = {}): Promise<StoredOrder> {
      return recordEvent(event, opts.reportOutcome ?? false);
    },

    /**
     * An order's first placement and its shipment in one local activity, the whole of an order that goes well: the
     * placement is recorded (and its outcome reported) as recordOrderEvent does; when the store then holds the order
     * placed and pending, it is shipped and the shipment recorded as shipAndRecordOrder does. A refusal of the record
     * is thrown; anything that stops the shipment (a warehouse that fails or refuses, a record that fails after it
     * shipped) is not: the answer then carries the record alone, and the workflow ships through its own path under the
     * same key, where every such failure has its handling (and the warehouse's idempotency keeps it to one shipment).
     */
    async placeAndShip(event: OrderEvent, input: ShipInput): Promise<PlacedAndShipped> {
      const stored = await recordEvent(event, true);
      if (stored.status !== 'pending' || !stored.placed) return { stored };
      try {
        return { stored, shipped: await shipAndRecord(input) };
      } catch (err) {
        if (err instanceof ApplicationFailure && err.type === FailureType.warehouseWaiting)
          return { stored, waiting: err.details![0] as ShipmentWaitDetails };
        logger.info(
          { ...attemptFields(input), err: (err as Error).message },
          'quick shipment did not finish; the workflow ships the order',
        );
        return { stored };
      }
    },

    /** markShipped above: a shipment shipAndRecordOrder could not record, recorded under the store's own policy. */
    async markOrderShipped(input: { tenantId: string; orderId: string; shipmentId: string }): Promise<StoredOrder> {
      return markShipped(input);
    },

    /**
     * Ships, then records the shipment (markOrderShipped), in one activity. A cancellation that reached the activity
     * before the record leaves the order unrecorded (the workflow records the cancellation and recalls the shipment).
     * A failure to record after the warehouse shipped is not retried here — the warehouse policy is bounded and would
     * hold a shipped order as failed — but returned as a non-retryable `ShipmentUnrecorded` carrying the shipment id,
     * which the workflow records through the store's own policy.
     */
    async shipAndRecordOrder(input: ShipInput): Promise<RecordedShipment> {
      return shipAndRecord(input);
    },

    /**
     * Holds the order as failed with the reason once shipping gave up. The claim is per attempt: the first failure
     * keeps the key it always had (`failed/<tenant>/<order>`), the failure after retry n claims `…/<n>`, so a
     * retried order can be held as failed again.
     */
    async markOrderFailed(input: {
      tenantId: string;
      orderId: string;
      reason: string;
      retry?: number;
    }): Promise<StoredOrder> {
      const key = `failed/${input.tenantId}/${input.orderId}${input.retry ? `/${input.retry}` : ''}`;
      logger.warn({ ...attemptFields(input), reason: input.reason }, 'holding order as failed');
      const stored = await claimThen(input.tenantId, input.orderId, key, (tx, change) =>
        recordFailed(tx, input.tenantId, input.orderId, input.reason, change),
      );
      if (stored.outcome === 'applied' && stored.status === 'failed') metrics?.ordersHeldFailed.inc();
      return stored;
    },

    /**
     * An operator's retry of a failed order (the workflow's retryShipment update): failed → pending in the store,
     * failure_reason cleared, the reason, time and count recorded. Claimed per retry (`retry/<tenant>/<order>/<n>`),
     * so a repeated attempt of one retry applies once; another status is returned as it is (stale).
     */
    async reopenFailedOrder(input: {
      tenantId: string;
      orderId: string;
      retry: number;
      reason: string;
      by?: string;
    }): Promise<StoredOrder> {
      logger.info({ ...attemptFields(input), reason: input.reason, by: input.by }, 'retrying a failed order');
      const key = retryActionId(input.tenantId, input.orderId, input.retry);
      return claimThen(
        input.tenantId,
        input.orderId,
        key,
        (tx, change) => reopenFailed(tx, input.tenantId, input.orderId, input.reason, input.by, change),
        { causationId: key },
      );
    },

    /** The order as the store holds it, for a repair run to start from; null when the store holds no such order. */
    async loadOrder(input: { tenantId: string; orderId: string }): Promise<StoredOrderDetail | null> {
      logger.info(attemptFields(input), 'loading the order from the store');
      return permanentAsFailure(() =>
        inTenantTransaction(
          db,
          input.tenantId,
          async (tx) => (await loadOrderDetail(tx, input.tenantId, input.orderId)) ?? null,
        ).catch((err: unknown) => {
          throw classifySqlError(err, `load ${input.tenantId}/${input.orderId}`);
        }),
      );
    },

    /**
     * Holds a cancelled order as recall-failed: the warehouse refused for good to recall its shipment. Claimed per
     * refusal (`recall-failed/<tenant>/<order>/<n>`), so a refusal after a resolution's retried recall is held again.
     */
    async markRecallFailed(input: {
      tenantId: string;
      orderId: string;
      reason: string;
      attempt: number;
    }): Promise<StoredOrder> {
      const key = `recall-failed/${input.tenantId}/${input.orderId}/${input.attempt}`;
      logger.warn(
        { ...attemptFields(input), reason: input.reason },
        'the warehouse refused the recall; holding the order as recall-failed',
      );
      const stored = await claimThen(input.tenantId, input.orderId, key, (tx, change) =>
        recordRecallFailed(tx, input.tenantId, input.orderId, input.reason, change),
      );
      if (stored.outcome === 'applied' && stored.status === 'recall-failed') metrics?.ordersRecallFailed.inc();
      return stored;
    },

    /**
     * An operator's resolution of a recall-failed order (the resolveRecall update): recall-failed → cancelled, with
     * the action, reason and who asked. Claimed per refusal it resolves (`resolve/<tenant>/<order>/<n>`).
     */
    async resolveRecallFailed(input: {
      tenantId: string;
      orderId: string;
      failures: number;
      action: RecallResolution;
      reason: string;
      by?: string;
    }): Promise<StoredOrder> {
      logger.info(
        { ...attemptFields(input), action: input.action, reason: input.reason, by: input.by },
        'resolving a recall-failed order',
      );
      const key = resolveActionId(input.tenantId, input.orderId, input.failures);
      const resolution = {
        action: input.action,
        reason: input.reason,
        ...(input.by !== undefined ? { by: input.by } : {}),
      };
      return claimThen(
        input.tenantId,
        input.orderId,
        key,
        (tx, change) => resolveRecallFailed(tx, input.tenantId, input.orderId, resolution, change),
        { causationId: key },
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
      logger.warn(
        { ...attemptFields(event), errorClass: error.name, err: error.message },
        'dead-lettering an event the workflow refused',
      );
      if (!deps.deadLetters)
        throw ApplicationFailure.nonRetryable(
          'this worker has no dead-letter topic configured',
          FailureType.deadLetterUnavailable,
        );
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
  };
}

export type OrderActivities = ReturnType<typeof createActivities>;
