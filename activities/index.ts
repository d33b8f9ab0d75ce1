/**
 * The order's activities, built by a factory over their dependencies so tests can pass fakes, one file per concern:
 * recording (the order's events and the store effects of its fulfilment, recording.ts), shipping and waiting (the
 * warehouse's calls and waits, shipping.ts and warehouse-waits.ts), operators' actions (operator-records.ts) and dead
 * letters (dead-letters.ts); createActivities composes them into the one set the workflows proxy (OrderActivities),
 * whose names the workflows' histories record.
 * Every effect on PostgreSQL is one transaction that claims its key in `processed_events` first and applies
 * the effect second: a concurrent or repeated attempt loses at the claim and reads back the stored truth. A status
 * change the effect makes writes its event into the outbox in that same transaction, with the claim key (the basis
 * of the event's id), its cause and the trace context of the attempt that commits it.
 */
import { createDeadLetterActivities } from './dead-letters.js';
import type { ActivityDeps } from './deps.js';
import { createOperatorActivities } from './operator-records.js';
import { createRecordingActivities } from './recording.js';
import { createShippingActivities } from './shipping.js';

export type { ActivityDeps } from './deps.js';
export type { RefusedEvent } from './dead-letters.js';
export { jitteredDelayMs, type PlacedAndShipped, type RecordedShipment, type ShipInput } from './shipping.js';
export { UNRECORDED_WAIT_RECHECK_SECONDS } from './warehouse-waits.js';

export function createActivities(deps: ActivityDeps) {
  const recording = createRecordingActivities(deps);
  return {
    ...recording,
    ...createShippingActivities(deps, recording),
    ...createOperatorActivities(deps),
    ...createDeadLetterActivities(deps),
  };
}

export type OrderActivities = ReturnType<typeof createActivities>;
