/**
 * The workflows' activity options — timeouts and Temporal retry policies of every activity and local activity they
 * schedule, and how long an order is held before an effect is tried again — as data, beside the workflows that use
 * them. Temporal's duration strings; the warehouse's policy is src/vocabulary/warehouse-retry.ts, from which the
 * shipment activity's own jittered delays derive too. Deterministic data only (bundled into the workflow sandbox).
 */
import { WAREHOUSE_RETRY } from '../src/vocabulary/warehouse-retry.js';

/** Short activity effects (PostgreSQL, the DLQ topic): retried through a dependency restart, about 15 minutes in all. */
export const SHORT_EFFECT_ACTIVITY = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 35,
  },
} as const;

/**
 * The warehouse call: long-running and heartbeating. Retries are bounded (then the order is held as failed); each
 * next delay is set by the activity (WAREHOUSE_RETRY_*, half jitter), the policy's interval being the fallback.
 */
export const WAREHOUSE_ACTIVITY = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '20 seconds',
  retry: {
    initialInterval: `${WAREHOUSE_RETRY.initialDelayMs} milliseconds`,
    backoffCoefficient: WAREHOUSE_RETRY.backoffCoefficient,
    maximumInterval: `${WAREHOUSE_RETRY.maxDelayMs} milliseconds`,
    maximumAttempts: WAREHOUSE_RETRY.attempts,
  },
} as const;

/**
 * Short PostgreSQL effects as local activities (the cheaper order shape): a few quick attempts inside the workflow
 * task, about 3 s in all; when they give up on a transient failure the effect runs as an activity under
 * SHORT_EFFECT_ACTIVITY, so a database restart never holds a workflow task open.
 */
export const LOCAL_STORE_EFFECT = {
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '2 seconds',
    maximumAttempts: 5,
  },
} as const;

/**
 * The quick shipment (the order workflow's first attempt to ship, a local activity inside the workflow task): one
 * attempt, and the warehouse has 3 s to answer it; any failure but a refusal moves the shipment to the heartbeating
 * activity under WAREHOUSE_ACTIVITY (same key, so a shipment the quick attempt made is returned, never made twice).
 * Short enough that a slow warehouse never holds a workflow task near its timeout (10 s).
 */
export const QUICK_SHIPMENT = {
  startToCloseTimeout: '3 seconds',
  retry: { maximumAttempts: 1 },
} as const;

/** After an effect's own policy gave up on a transient failure, the workflow holds the order this long and tries again. */
export const HOLD_BEFORE_RETRYING = '5 minutes';

/**
 * The dedupe ledger's retention run (activities/ledger-pruning.ts): batches of short deletes, heartbeating after
 * each; a retry resumes the counts from the last heartbeat. When the attempts run out the run fails, and the
 * schedule's next run starts over.
 */
export const LEDGER_PRUNE_ACTIVITY = {
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 10 },
} as const;

/** The status outbox's retention activity: the same bounds as the ledger's. */
export const STATUS_OUTBOX_PRUNE_ACTIVITY = LEDGER_PRUNE_ACTIVITY;
