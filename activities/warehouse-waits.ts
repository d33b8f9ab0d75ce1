/** Waiting for the warehouse: the shipping activities' answer when the warehouse is down for everyone or paused. */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FailureType, type ShipmentWaitDetails } from '../src/vocabulary/order.js';
import { recordWait, type WaitingFor } from '../src/adapters/store/shipment-waits.js';
import { attemptFields } from './attempt.js';
import type { ActivityDeps } from './deps.js';

/** How soon (seconds) a run whose wait the store could not record checks again by itself, at most. */
export const UNRECORDED_WAIT_RECHECK_SECONDS = 30;
/** Why a wait is not recorded when the store holds the order otherwise: the run is behind the store, which wins. */
const NOT_PENDING = 'the store does not hold the order pending: no wait to record';

/** The order whose shipment waits (a ShipInput): logged with its attempt. */
export interface WaitingOrder {
  tenantId: string;
  orderId: string;
  /** The run has waited since then (ISO 8601) and was woken: a wait the store no longer holds is restored from it. */
  waitingSince?: string;
}

/**
 * The shipment waits: the warehouse is down for everyone, or shipping is paused. The wait is recorded on the order's
 * row (where the resumer finds it) and returned as a non-retryable WarehouseWaiting failure, so Temporal spends no
 * attempt on it and the workflow waits to be woken. A store that cannot record it does not spend an attempt either:
 * the order waits all the same, unrecorded, and its run tries again by itself within 30 s — it waits for the store
 * as the rest of the service does. A wait the store had lost (the run says it waited, the row holds no wait) is
 * recorded again from the run's time, and counted.
 */
export async function waiting(
  deps: ActivityDeps,
  input: WaitingOrder,
  reason: string,
  waitingFor: WaitingFor,
): Promise<ApplicationFailure> {
  const { logger, metrics } = deps;
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
    details = (await recordedWait(deps, input, reason, waitingFor)) ?? unrecorded(NOT_PENDING, 'not-pending');
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
  deps: ActivityDeps,
  input: WaitingOrder,
  reason: string,
  waitingFor: WaitingFor,
): Promise<ShipmentWaitDetails | undefined> {
  const { logger, metrics } = deps;
  const recorded = await recordWait(deps.db, {
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
