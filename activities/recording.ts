/**
 * Recording: the order's events and the store effects of its fulfilment (shipped, failed, recall-failed), each one
 * transaction that claims its key in `processed_events` first and applies the effect second.
 */
import type { OrderEvent, StoredOrder } from '../src/vocabulary/order.js';
import { createOutcomeReporter } from '../src/base/outcomes.js';
import type { Tx } from '../src/adapters/store/db.js';
import { recordFailed, recordRecallFailed, recordShipped } from '../src/adapters/store/fulfilments.js';
import {
  claimThen as claimInStore,
  recordOrderEvent as recordInStore,
  type ChangeCause,
} from '../src/adapters/store/order-events.js';
import type { ChangeContext } from '../src/adapters/status-events/outbox.js';
import { attemptFields, permanentAsFailure } from './attempt.js';
import type { ActivityDeps } from './deps.js';

/**
 * Claim-then-effect for `key` (src/adapters/store/order-events.ts claimThen); a permanent refusal becomes a
 * non-retryable failure. `cause`: the input event or operator action behind the change.
 */
export type ClaimThen = (
  tenantId: string,
  orderId: string,
  key: string,
  effect: (tx: Tx, change: ChangeContext) => Promise<StoredOrder>,
  cause?: ChangeCause,
) => Promise<StoredOrder>;

/** The claim-then-effect of the store behind `deps`, writing status changes' events for its status topic. */
export function claimer(deps: Pick<ActivityDeps, 'db' | 'statusTopic'>): ClaimThen {
  const target = { db: deps.db, statusTopic: deps.statusTopic };
  return (tenantId, orderId, key, effect, cause = {}) =>
    permanentAsFailure(() => claimInStore(target, { tenantId, orderId }, key, effect, cause));
}

export function createRecordingActivities(deps: ActivityDeps) {
  const { logger, metrics } = deps;
  const report = createOutcomeReporter({ logger, metrics });
  const target = { db: deps.db, statusTopic: deps.statusTopic };
  const claimThen = claimer(deps);

  return {
    /**
     * Records a placement or cancellation: claim the event id, compare versions, write the row — one transaction.
     * With `reportOutcome` (where this runs as a local activity) it then reports the store's outcome itself, once the
     * transaction committed.
     */
    async recordOrderEvent(event: OrderEvent, opts: { reportOutcome?: boolean } = {}): Promise<StoredOrder> {
      logger.info(attemptFields(event), 'recording order event');
      const stored = await permanentAsFailure(() => recordInStore(target, event));
      if (opts.reportOutcome) report({ event, outcome: stored.outcome, layer: 'store' });
      return stored;
    },

    /**
     * Marks the order shipped (claim `shipped/...` first); also a shipment shipAndRecordOrder could not record,
     * recorded under the store's own policy. A cancelled order is left cancelled and returned as is.
     */
    async markOrderShipped(input: { tenantId: string; orderId: string; shipmentId: string }): Promise<StoredOrder> {
      logger.info({ ...attemptFields(input), shipmentId: input.shipmentId }, 'marking order shipped');
      return claimThen(input.tenantId, input.orderId, `shipped/${input.tenantId}/${input.orderId}`, (tx, change) =>
        recordShipped(tx, input.tenantId, input.orderId, input.shipmentId, change),
      );
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
  };
}

/** What the shipping activities record through: the event's record and the shipment's. */
export type RecordingActivities = ReturnType<typeof createRecordingActivities>;
