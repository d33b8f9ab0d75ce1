/**
 * Reading what an activity failed with, for both workflow types: its type and reason, whether any retry could fix
 * it, and the quick-then-durable fallback every effect takes. Deterministic code only (bundled into the sandbox).
 */
import { ActivityFailure, ApplicationFailure, isCancellation } from '@temporalio/workflow';
import { FailureType, type ShipmentWaitDetails } from '../src/vocabulary/order.js';

/** The ApplicationFailure an activity failed with: the cause of its ActivityFailure, or (a local activity's) itself. */
export function applicationFailure(err: unknown): ApplicationFailure | undefined {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) return err.cause;
  return err instanceof ApplicationFailure ? err : undefined;
}

/** True for a refusal no retry can fix (a non-retryable ApplicationFailure). */
export function isNonRetryable(err: unknown): boolean {
  return applicationFailure(err)?.nonRetryable === true;
}

/** The error type an activity failed with (the ApplicationFailure's type), else the error's name. */
export function failureType(err: unknown): string {
  return applicationFailure(err)?.type || (err instanceof Error ? err.name : 'Error');
}

/** The failure's message and up to three of its causes', joined: what a note or a dead letter says. */
export function failureReason(err: unknown): string {
  let e: unknown = err;
  const parts: string[] = [];
  while (e instanceof Error && parts.length < 4) {
    parts.push(e.message);
    e = (e as Error & { cause?: unknown }).cause;
  }
  return parts.filter(Boolean).join(': ') || 'unknown failure';
}

/** The shipment id of a shipment the warehouse made but the store did not record (ShipmentUnrecorded), if `err` is one. */
export function unrecordedShipmentId(err: unknown): string | undefined {
  const failure = applicationFailure(err);
  if (failure?.type !== FailureType.shipmentUnrecorded) return undefined;
  const [id] = failure.details ?? [];
  return typeof id === 'string' ? id : undefined;
}

/**
 * An effect as a local activity first; when its quick attempts gave up on a transient failure (or ran out of time),
 * the same effect as an activity with the full policy. Refusals and cancellations are thrown.
 */
export async function quickThenDurable<T>(quick: () => Promise<T>, durable: () => Promise<T>): Promise<T> {
  try {
    return await quick();
  } catch (err) {
    if (isNonRetryable(err) || isCancellation(err)) throw err;
    return durable();
  }
}

/** Why an order that is not failed cannot be retried. */
export function notFailed(tenantId: string, orderId: string, status: string): string {
  return `order ${tenantId}/${orderId} is ${status}, not failed: only an order held as failed can be retried`;
}

/** What a WarehouseWaiting failure says (the warehouse down for everyone, or shipping paused), if `err` is one. */
export function shipmentWait(err: unknown): ShipmentWaitDetails | undefined {
  const failure = applicationFailure(err);
  if (failure?.type !== FailureType.warehouseWaiting) return undefined;
  const [details] = failure.details ?? [];
  const d = details as Partial<ShipmentWaitDetails> | undefined;
  if (typeof d?.since !== 'string' || typeof d.reason !== 'string') return undefined;
  const seconds = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined);
  const deadlineSeconds = seconds(d.deadlineSeconds);
  const recheckSeconds = seconds(d.recheckSeconds);
  return {
    since: d.since,
    reason: d.reason,
    ...(d.for === 'pause' || d.for === 'outage' ? { for: d.for } : {}),
    ...(deadlineSeconds !== undefined ? { deadlineSeconds } : {}),
    ...(recheckSeconds !== undefined ? { recheckSeconds } : {}),
    ...(typeof d.unrecorded === 'string' ? { unrecorded: d.unrecorded } : {}),
  };
}
