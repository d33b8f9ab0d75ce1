/** What every order activity does around its work: a permanent error made non-retryable, one log line per attempt. */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { PermanentError } from '../src/base/errors.js';

/** Permanent errors become non-retryable ApplicationFailures, so Temporal does not retry a business refusal. */
export async function permanentAsFailure<T>(work: () => Promise<T>): Promise<T> {
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
export function attemptFields(input: object): Record<string, unknown> {
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
