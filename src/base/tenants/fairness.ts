/**
 * An order's Temporal priority: its tenant is the fairness key and the tenant's weight (src/base/tenants/weights.ts)
 * its fairness weight, so a Temporal whose task queues dispatch fairly (matching.enableFairness, docs/deploying.md)
 * hands out the tasks of tenants with work waiting in proportion to their weights instead of in arrival order.
 *
 * Rules a reader must not break:
 * - every start of an order's run carries it (the bridge's, a repair run's): a run started without it is dispatched
 *   under the empty key, beside every tenant's;
 * - the workflow sets no priority of its own: Temporal dispatches each activity it schedules, and the run it
 *   continues as new, under the run's priority (server 1.32: the activity's own, absent, is merged over the run's).
 */
import type { Priority } from '@temporalio/common';
import type { TenantWeightOf } from './weights.js';

/** The priority every run of `tenantId`'s orders starts with. */
export function orderPriority(tenantId: string, weightOf: TenantWeightOf): Priority {
  return { fairnessKey: tenantId, fairnessWeight: weightOf(tenantId) };
}
