/** The one place an order event's decided outcome is logged and counted. */
import { eventIds, type OutcomeReport } from '../vocabulary/order.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';

/** The metrics an outcome counts. */
export type OutcomeMetrics = Pick<Metrics, 'duplicatesSuppressed' | 'eventsProcessed' | 'processingDelay'>;

/**
 * Logs an event's outcome and counts it: the `reportOutcome` local activity, the recording activity itself, the
 * workflow's `outcomes` sink and the bridge's late path (an event whose run had closed) all report through this one
 * function, so `fulfilment_events_processed_total` counts every event's outcome once, wherever it was decided.
 */
export function createOutcomeReporter(deps: {
  logger: Logger;
  metrics?: OutcomeMetrics;
}): (report: OutcomeReport) => void {
  const { logger, metrics } = deps;
  return (report) => {
    const { event, outcome } = report;
    metrics?.eventsProcessed.inc({ type: event.type, outcome });
    if (outcome === 'duplicate') metrics?.duplicatesSuppressed.inc({ layer: report.layer ?? 'workflow' });
    if (outcome === 'applied') {
      const delay = (Date.now() - Date.parse(event.occurredAt)) / 1000;
      if (Number.isFinite(delay) && delay >= 0) metrics?.processingDelay.observe({ type: event.type }, delay);
    }
    logger.info(
      {
        ...eventIds(event),
        outcome,
        detail: report.detail,
      },
      'order event decided',
    );
  };
}
