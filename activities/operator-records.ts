/**
 * Operators' actions on a held order, as its run or a repair run applies them (workflows/operator-actions.ts): the
 * order read from the store for a repair run to start from, a failed order reopened for a retry, a recall-failed order
 * resolved. Each change is claimed per action, so a repeated attempt of one action applies once.
 */
import type { RecallResolution, StoredOrder, StoredOrderDetail } from '../src/vocabulary/order.js';
import { inTenantTransaction } from '../src/adapters/store/db.js';
import { loadOrderDetail, reopenFailed, resolveRecallFailed } from '../src/adapters/store/fulfilments.js';
import { classifySqlError } from '../src/adapters/store/sql-errors.js';
import { resolveActionId, retryActionId } from '../src/adapters/status-events/event.js';
import { attemptFields, permanentAsFailure } from './attempt.js';
import type { ActivityDeps } from './deps.js';
import { claimer } from './recording.js';

export function createOperatorActivities(deps: ActivityDeps) {
  const { db, logger } = deps;
  const claimThen = claimer(deps);

  return {
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
  };
}
