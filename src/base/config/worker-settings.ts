/** The worker: the warehouse it ships through, the order workflow's settings, its task slots, pollers and cache. */
import { z } from 'zod';
import { atLeastTwo, nonEmpty, port, positiveInt, url, versionName, type FieldsOf } from './fields.js';
import { WAREHOUSE_RETRY } from '../../vocabulary/warehouse-retry.js';

export const workerSchema = {
  /** Base URL of the warehouse HTTP service that ships orders. */
  WAREHOUSE_URL: url(['http:', 'https:']).default('http://127.0.0.1:18080'),
  /** Port the local warehouse service listens on when this project runs it. */
  WAREHOUSE_PORT: port.default(18080),
  /** Interface the local warehouse service listens on (0.0.0.0 in containers). */
  WAREHOUSE_HOST: nonEmpty.default('127.0.0.1'),
  /** Consecutive transient warehouse failures that open its circuit breaker. */
  WAREHOUSE_BREAKER_FAILURES: positiveInt.default(5),
  /** Milliseconds the warehouse circuit stays open before one probe is let through. */
  WAREHOUSE_BREAKER_HALF_OPEN_MS: positiveInt.default(10_000),
  /**
   * How long (ms) one warehouse call may take; past it the call fails as a timeout, a dependency failure (the breaker
   * and the brownout rule count it). The shipment heartbeats while its call is out, so a call may outlast the heartbeat
   * timeout (20 s); keep it well under the shipment activity's start-to-close timeout (5 minutes). Default 30 s.
   */
  WAREHOUSE_TIMEOUT_MS: positiveInt.default(30_000),
  /**
   * Warehouse calls one worker makes at once, across every tenant (src/base/tenants/weighted-slots.ts): a call waits
   * for a slot, and while tenants have calls waiting each gets slots in proportion to its weight (TENANT_WEIGHTS); a
   * tenant alone may use them all. Calls come from the shipment and recall activities (at most
   * WORKER_MAX_CONCURRENT_ACTIVITIES) and the quick shipment (a local activity); below the activity slots, calls queue
   * here, where the share decides whose goes next. A waiting call holds its activity's slot and heartbeats. Default 50.
   */
  WAREHOUSE_MAX_CONCURRENT_CALLS: positiveInt.default(50),
  /**
   * The brownout rule (src/adapters/warehouse/brownout.ts): a dependency failure is the warehouse's, not the order's —
   * the order waits as in an outage instead of spending an attempt — when, over this worker's warehouse calls of the
   * last WAREHOUSE_BROWNOUT_WINDOW_SECONDS (or its last WAREHOUSE_BROWNOUT_MIN_CALLS however old, when the window holds
   * fewer), at least WAREHOUSE_BROWNOUT_FAILURE_PERCENT % failed (5xx, timeout, unreachable), and the failures were of
   * at least WAREHOUSE_BROWNOUT_MIN_ORDERS different shipments (one order failing alone never counts as the warehouse);
   * and before the worker has made WAREHOUSE_BROWNOUT_MIN_CALLS calls (too few to judge on). While the warehouse
   * answers every other tenant (their calls of the window at least WAREHOUSE_BROWNOUT_MIN_CALLS, under
   * WAREHOUSE_BROWNOUT_FAILURE_PERCENT % failed), a failure is judged by the same figures on its own tenant's calls.
   * Defaults 30 s, 10 calls, 10 %, 3 orders.
   */
  WAREHOUSE_BROWNOUT_WINDOW_SECONDS: positiveInt.default(30),
  WAREHOUSE_BROWNOUT_MIN_CALLS: positiveInt.default(10),
  WAREHOUSE_BROWNOUT_FAILURE_PERCENT: positiveInt.max(100, 'a whole number 1–100').default(10),
  WAREHOUSE_BROWNOUT_MIN_ORDERS: positiveInt.default(3),
  /**
   * How long (seconds) an order's shipment may wait for a warehouse that is down for everyone (its circuit open)
   * before the order is held as failed with that reason, counted from its first such wait. Read by the worker whose
   * attempt found the warehouse down, and kept by the order from then on. Time an operator's pause holds the order
   * does not count: a pause holds its orders for as long as it is in force, and a wait after it starts the count
   * anew. When the deadline passes, the order tries the warehouse once more and is held as failed only if that try
   * finds it still down. Default a day.
   */
  ORDER_SHIPMENT_DEADLINE_SECONDS: positiveInt.default(86_400),
  /**
   * A waiting order that nothing woke for this long (seconds, ±20 % so that orders spread) tries the warehouse again
   * by itself: the bound on a wake-up that never came (the resumer's signal lost, the order's wait row lost). A try
   * that finds the circuit still open costs no warehouse request. Default 300.
   */
  ORDER_WAIT_RECHECK_SECONDS: positiveInt.default(300),
  /**
   * How long (seconds) a resumer's release of a waiting order holds it: an order released that neither waited again
   * nor left `pending` within it is released — woken — again, the lease doubling with each release up to 15 minutes
   * (migration 010); a value above 900 is honoured as it is, undoubled.
   * Longer than a shipment attempt usually takes, so that orders trying the warehouse are rarely woken twice (which is
   * harmless: the shipment's key). 1–3600. Default 60.
   */
  WAKE_LEASE_SECONDS: positiveInt.max(3600, 'a whole number of seconds from 1 to 3600').default(60),
  /**
   * While orders wait for the warehouse and this worker has not seen it answer since it failed, the shipment resumer
   * wakes the oldest waiting order once per this many seconds, as the probe: its shipment is the one request the
   * warehouse gets from the resumer. At least the breaker's half-open time, so that the probe reaches it. Default 15.
   */
  WAREHOUSE_PROBE_SECONDS: positiveInt.default(15),
  /** Waiting orders the resumer wakes per second, oldest first, once the warehouse answers again (per worker). */
  WAREHOUSE_RESUME_PER_SECOND: positiveInt.default(20),
  /**
   * The delays between an order's own shipment attempts (the warehouse answers others, fails for this order): doubling
   * from WAREHOUSE_RETRY_INITIAL_MS to WAREHOUSE_RETRY_MAX_MS, half-jittered; the policy's attempts in all, then the
   * order is held as failed. Defaults: the warehouse retry policy's (src/vocabulary/warehouse-retry.ts).
   */
  WAREHOUSE_RETRY_INITIAL_MS: positiveInt.default(WAREHOUSE_RETRY.initialDelayMs),
  WAREHOUSE_RETRY_MAX_MS: positiveInt.default(WAREHOUSE_RETRY.maxDelayMs),
  /** How long (seconds) a cancellation that arrived before its placement waits for it. Default 1 hour. */
  CANCEL_GRACE_SECONDS: positiveInt.default(3600),
  /**
   * How long (seconds) an order's run stays open after it settled. Default 0: the run closes in the task that settled
   * it. A later event gets the same recorded outcome either way — once the run has closed, the bridge records it
   * through the store (src/roles/bridge/late-events.ts), and one that leaves work for the order (a cancellation of a
   * failed order, an operator's retry) is handed to a run started from the store — so a linger only keeps the status
   * query and operator updates on the same run. Each second of linger costs every order a timer and a workflow task.
   */
  ORDER_LINGER_SECONDS: z.coerce
    .number({ invalid_type_error: 'a whole number of seconds ≥ 0' })
    .int()
    .min(0)
    .default(0),
  /**
   * Continue an order's workflow as new once its history has this many events (unset: only when Temporal suggests
   * it, at about 10,000 events). Keeps histories short for long-lived orders; state and pending events carry over.
   */
  ORDER_CONTINUE_AS_NEW_AFTER_EVENTS: z.coerce
    .number({ invalid_type_error: 'a whole number of events ≥ 10' })
    .int('a whole number of events ≥ 10')
    .min(10, 'a whole number of events ≥ 10')
    .optional(),
  /** How long (ms) a stopping worker lets running activities finish before cancelling them. Default 10 s. */
  WORKER_SHUTDOWN_GRACE_MS: z.coerce
    .number({ invalid_type_error: 'milliseconds ≥ 0' })
    .int('milliseconds ≥ 0')
    .min(0, 'milliseconds ≥ 0')
    .default(10_000),
  /** Workflow tasks the worker runs at once (Temporal's maxConcurrentWorkflowTaskExecutions), at least 2. */
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: atLeastTwo.default(40),
  /** Activities (the shipment, compensation, dead letters, fallbacks of store effects) the worker runs at once. */
  WORKER_MAX_CONCURRENT_ACTIVITIES: positiveInt.default(100),
  /** Local activities (the store effects of an order) the worker runs at once. */
  WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: positiveInt.default(100),
  /** Order workflows kept in the worker's sticky cache (each replayed from its history when evicted); 0 turns it off. */
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce
    .number({ invalid_type_error: 'a whole number ≥ 0' })
    .int('a whole number ≥ 0')
    .min(0, 'a whole number ≥ 0')
    .default(1000),
  /** Concurrent workflow-task polls, at least 2, at most WORKER_MAX_CONCURRENT_WORKFLOW_TASKS. */
  WORKER_WORKFLOW_TASK_POLLERS: atLeastTwo.default(10),
  /** Concurrent activity-task polls, at most WORKER_MAX_CONCURRENT_ACTIVITIES. */
  WORKER_ACTIVITY_TASK_POLLERS: positiveInt.default(10),
  /**
   * The worker deployment (Temporal Worker Deployment Versioning) this worker runs a version of. Default: the task
   * queue's name, one deployment per task queue. Letters, digits, `-` and `_`.
   */
  WORKER_DEPLOYMENT_NAME: versionName.optional(),
  /**
   * This worker's version in its deployment. Default: the build's — what `npm run build` stamped in dist/build-id
   * (BUILD_ID at build time, else the git commit, else the workflow bundle's hash); run from sources, the git commit
   * (with `-modified` when the checkout has changes). Orders start on the deployment's current version and finish on
   * the version they started on (docs/changing-the-workflow.md).
   */
  WORKER_BUILD_ID: versionName.optional(),
  /**
   * How a new version takes new orders: `all-at-once` (default) — a version that was never current nor ramping
   * becomes current when its first worker has finished starting, before any order ran on it (orders already running
   * stay on theirs; a version rolled back from or ramped is not made current by its workers); `manual` — only a
   * deployment's first version becomes current by itself, later ones wait for `fulfilment deployment ramp|current`.
   */
  WORKER_VERSION_ROLLOUT: z
    .enum(['all-at-once', 'manual'], { message: 'all-at-once or manual' })
    .default('all-at-once'),
  /** How often (seconds) the worker counts the orders held for a person (failed, recall-failed) for the metrics. */
  WORKER_ATTENTION_POLL_SECONDS: positiveInt.default(30),
  /**
   * How often (seconds) the worker checks every version of its deployment for live workers and counts the open runs
   * pinned to those without (fulfilment_orders_pinned_without_workers).
   */
  WORKER_VERSION_CHECK_SECONDS: positiveInt.default(30),
};

/** What this concern's variables parse to: its checks below read these. */
type Config = FieldsOf<typeof workerSchema>;

/** The Temporal worker refuses more pollers than task slots; said here, naming both variables. */
export function workerTuningProblems(c: Partial<Config>): string[] {
  const pairs = [
    ['WORKER_WORKFLOW_TASK_POLLERS', 'WORKER_MAX_CONCURRENT_WORKFLOW_TASKS'],
    ['WORKER_ACTIVITY_TASK_POLLERS', 'WORKER_MAX_CONCURRENT_ACTIVITIES'],
  ] as const;
  return pairs.flatMap(([pollers, slots]) =>
    c[pollers] !== undefined && c[slots] !== undefined && c[pollers] > c[slots]
      ? [
          `${pollers}=${c[pollers]} is more than ${slots}=${c[slots]}: expected at most ${c[slots]} pollers (a poll needs a free task slot)`,
        ]
      : [],
  );
}
