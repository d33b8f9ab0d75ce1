/**
 * The order's PostgreSQL effects as the workflows call them: a local activity first — a marker in the workflow
 * task's completion, no round trip — and, when its few quick attempts gave up on a transient failure, the same
 * effect as an activity under the full policy (a database restart outlasts a workflow task). Refusals
 * (non-retryable failures) and cancellations are thrown. Deterministic code only (bundled into the sandbox).
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { OrderActivities } from '../activities/index.js';
import { LOCAL_STORE_EFFECT, SHORT_EFFECT_ACTIVITY } from './activity-options.js';
import { NON_RETRYABLE_FAILURES } from '../src/vocabulary/order.js';
import { quickThenDurable } from './activity-failures.js';

const nonRetryable = { nonRetryableErrorTypes: [...NON_RETRYABLE_FAILURES] };

/** PostgreSQL effects (and the DLQ topic) as activities: retried through a dependency restart (about 15 minutes in all). */
export const storePolicy = { ...SHORT_EFFECT_ACTIVITY, retry: { ...SHORT_EFFECT_ACTIVITY.retry, ...nonRetryable } };
export const store = proxyActivities<OrderActivities>(storePolicy);

/** PostgreSQL effects as local activities: a few quick attempts inside the workflow task, then `store` takes over. */
export const localStorePolicy = { ...LOCAL_STORE_EFFECT, retry: { ...LOCAL_STORE_EFFECT.retry, ...nonRetryable } };
const localStore = proxyLocalActivities<OrderActivities>(localStorePolicy);

/** The store effects the workflows run this way. */
export type StoreEffect =
  | 'recordOrderEvent'
  | 'markOrderShipped'
  | 'markOrderFailed'
  | 'reopenFailedOrder'
  | 'loadOrder'
  | 'markRecallFailed'
  | 'resolveRecallFailed';
type Result<K extends StoreEffect> = Awaited<ReturnType<OrderActivities[K]>>;
type Proxy<K extends StoreEffect> = { executeWithOptions(options: object, args: unknown[]): Promise<Result<K>> };

/** Runs store effect `name` with `args`, shown in the history as `summary`: local first, the activity when that gave up. */
export function storeEffect<K extends StoreEffect>(
  name: K,
  summary: string,
  ...args: Parameters<OrderActivities[K]>
): Promise<Result<K>> {
  const quick = localStore[name] as unknown as Proxy<K>;
  const durable = store[name] as unknown as Proxy<K>;
  return quickThenDurable(
    () => quick.executeWithOptions({ ...localStorePolicy, summary }, args),
    () => durable.executeWithOptions({ ...storePolicy, summary }, args),
  );
}
