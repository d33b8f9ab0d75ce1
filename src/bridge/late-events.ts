/**
 * The late path as an order starter takes it (order-starter.ts): an event whose order's run has closed is recorded
 * through the store (src/store/order-events.ts recordLateEvent), and the outcome the store decided is reported like
 * any other (logged and counted, src/outcomes.ts), or the event is handed back because it needs a run.
 */
import type { OutcomeReport } from '../order.js';
import { recordLateEvent, type StoreTarget } from '../store/order-events.js';
import type { LateEventRecorder } from './order-starter.js';

export function createLateEventRecorder(
  target: StoreTarget,
  report?: (outcome: OutcomeReport) => void,
): LateEventRecorder {
  return async (event) => {
    const record = await recordLateEvent(target, event);
    if (record.kind === 'recorded')
      report?.({ event, outcome: record.stored.outcome, layer: 'store', detail: "its order's run had closed" });
    return record;
  };
}
