/**
 * The late path as an order starter takes it (order-starter.ts): events whose order's run has closed — one order's, as
 * the bridge delivers them together — are recorded through the store in one transaction
 * (src/adapters/store/order-events.ts recordLateEvents), and the outcome the store decided for each is reported like
 * any other (logged and counted, src/base/outcomes.ts) once that transaction has committed; the events from the first
 * that needs a run on are handed back.
 */
import type { OutcomeReport } from '../../vocabulary/order.js';
import { recordLateEvents, type StoreTarget } from '../../adapters/store/order-events.js';
import type { LateEventRecorder } from './order-starter.js';

export function createLateEventRecorder(
  target: StoreTarget,
  report?: (outcome: OutcomeReport) => void,
): LateEventRecorder {
  return async (events) => {
    const batch = await recordLateEvents(target, events);
    for (const { event, stored } of batch.recorded)
      report?.({ event, outcome: stored.outcome, layer: 'store', detail: "its order's run had closed" });
    return batch;
  };
}
