/**
 * Shipping: the warehouse calls of an order's fulfilment — the shipment (with its record, and with the placement's
 * record in the quick path of an order that goes well) and the recall that compensates it. A warehouse down for
 * everyone, or shipping paused, is answered as a wait (warehouse-waits.ts).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { halfJitterGenerator } from 'cockatiel';
import { SHIPMENT_BACKOFF, type TransientRetry } from '../src/base/retry-policies.js';
import {
  FailureType,
  type OrderEvent,
  type OrderLine,
  type ShipmentWaitDetails,
  type StoredOrder,
} from '../src/vocabulary/order.js';
import { DependencyUnavailableError, WarehouseOutageError } from '../src/base/errors.js';
import { attemptFields, permanentAsFailure } from './attempt.js';
import type { ActivityDeps } from './deps.js';
import type { RecordingActivities } from './recording.js';
import { waiting } from './warehouse-waits.js';

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

/** The records a shipment makes: the placement's (placeAndShip) and the shipment's. */
type Records = Pick<RecordingActivities, 'recordOrderEvent' | 'markOrderShipped'>;

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

/**
 * Asks the warehouse to ship, heartbeating while it waits; the key makes a repeat return the first shipment.
 * A transient failure asks Temporal for a jittered next delay, so orders failing together retry apart.
 */
async function ship(deps: ActivityDeps, input: ShipInput): Promise<string> {
  const ctx = Context.current();
  const pause = input.waitOnOutage ? await deps.pauses?.pauseFor(input.tenantId) : undefined;
  if (pause)
    throw await waiting(
      deps,
      input,
      `shipping paused${pause.tenantId ? ` for tenant ${pause.tenantId}` : ''} by ${pause.pausedBy} at ${pause.pausedAt.toISOString()}: ${pause.reason}`,
      'pause',
    );
  deps.logger.info(attemptFields(input), 'asking the warehouse to ship');
  // A local activity has no heartbeat (its workflow task is its liveness): only the activity heartbeats.
  const timer = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), deps.heartbeatMs ?? 2000);
  try {
    const receipt = await permanentAsFailure(() =>
      deps.warehouse.ship(input.key, input, ctx.cancellationSignal).catch(async (err: unknown) => {
        if (err instanceof WarehouseOutageError && input.waitOnOutage)
          throw await waiting(deps, input, err.message, 'outage');
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

/** ship, then markOrderShipped; see shipAndRecordOrder. */
async function shipAndRecord(deps: ActivityDeps, records: Records, input: ShipInput): Promise<RecordedShipment> {
  const shipmentId = await ship(deps, input);
  const ctx = Context.current();
  if (ctx.cancellationSignal.aborted) throw new CancelledFailure('the shipment was cancelled before it was recorded');
  try {
    return {
      shipmentId,
      stored: await records.markOrderShipped({ tenantId: input.tenantId, orderId: input.orderId, shipmentId }),
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

/**
 * What the warehouse is asked to ship: the lines and address the store holds (its answer's placement), which differ
 * from the event's when the store kept an order's lines (an event not newer than the row's, e.g. a redelivered earlier
 * placement meeting a row left pending). An answer without a placement (none recorded) leaves `input` as it is.
 */
function storedLines(input: ShipInput, stored: StoredOrder): ShipInput {
  if (!stored.placement) return input;
  const { shippingAddress: _event, ...rest } = input;
  const { lines, shippingAddress } = stored.placement;
  return { ...rest, lines, ...(shippingAddress ? { shippingAddress } : {}) };
}

/** The shipping activities, recording through `records` (the recording activities). */
export function createShippingActivities(deps: ActivityDeps, records: Records) {
  const { logger } = deps;
  return {
    /**
     * An order's first placement and its shipment in one local activity, the whole of an order that goes well: the
     * placement is recorded (and its outcome reported) as recordOrderEvent does; when the store then holds the order
     * placed and pending, it is shipped and the shipment recorded as shipAndRecordOrder does. A refusal of the record
     * is thrown; anything that stops the shipment (a warehouse that fails or refuses, a record that fails after it
     * shipped) is not: the answer then carries the record alone, and the workflow ships through its own path under the
     * same key, where every such failure has its handling (and the warehouse's idempotency keeps it to one shipment).
     */
    async placeAndShip(event: OrderEvent, input: ShipInput): Promise<PlacedAndShipped> {
      const stored = await records.recordOrderEvent(event, { reportOutcome: true });
      if (stored.status !== 'pending' || !stored.placed) return { stored };
      try {
        return { stored, shipped: await shipAndRecord(deps, records, storedLines(input, stored)) };
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

    /**
     * Ships, then records the shipment (markOrderShipped), in one activity. A cancellation that reached the activity
     * before the record leaves the order unrecorded (the workflow records the cancellation and recalls the shipment).
     * A failure to record after the warehouse shipped is not retried here — the warehouse policy is bounded and would
     * hold a shipped order as failed — but returned as a non-retryable `ShipmentUnrecorded` carrying the shipment id,
     * which the workflow records through the store's own policy.
     */
    async shipAndRecordOrder(input: ShipInput): Promise<RecordedShipment> {
      return shipAndRecord(deps, records, input);
    },

    /**
     * Compensation: recalls the shipment made under `key`, if any. Idempotent. Its call waits for a warehouse slot as
     * a shipment's does, and gives its place up when the activity is cancelled.
     */
    async recallShipment(input: { key: string }): Promise<boolean> {
      logger.info(attemptFields(input), 'recalling shipment');
      return permanentAsFailure(() => deps.warehouse.cancel(input.key, Context.current().cancellationSignal));
    },
  };
}
