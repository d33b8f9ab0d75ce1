/**
 * Every retry and backoff policy of the service, as data, in one place. Delays are milliseconds unless the
 * name says otherwise; Temporal policies use its duration strings. Transient failures are always retried with
 * jitter and a cap; permanent ones never (see src/errors.ts).
 *
 * Rule a reader must not break: this module imports nothing, so the workflow bundle can read it too.
 */

/** A transient-failure backoff: half-jittered, doubling from `initialDelayMs`, capped at `maxDelayMs`, no attempt limit. */
export interface TransientRetry {
  initialDelayMs: number;
  maxDelayMs: number;
}

/** The bridge's per-partition gates (deliver, dead-letter, commit) and its consumer restarts. */
export const BRIDGE_RETRY: TransientRetry = { initialDelayMs: 200, maxDelayMs: 30_000 };

/** The status relay's rounds after Kafka or PostgreSQL failed (src/worker/status-relay.ts): the rows wait meanwhile. */
export const STATUS_RELAY_RETRY: TransientRetry = { initialDelayMs: 250, maxDelayMs: 15_000 };

/** Start-up waits for a dependency that is down (src/startup.ts); decorrelated jitter. */
export const STARTUP_RETRY: TransientRetry = { initialDelayMs: 500, maxDelayMs: 10_000 };

/**
 * kafkajs's own retries of one request or connection (300 ms doubling to 5 s, ±20 % jitter). `requests` (about
 * 10 s) is for producers, admin and commits, whose failures then reach a gate; `consumer` (about 30 s) lets the
 * bridge's consumer ride out a broker restart while keeping its group membership.
 */
export const KAFKA_RETRY = { initialRetryTime: 300, maxRetryTime: 5_000, requests: 5, consumer: 10 } as const;

/**
 * A replay's delivery of one event (src/cli/replay/replay.ts): at most `attempts` in all, delays doubling from
 * `initialDelayMs` to `maxDelayMs` with decorrelated jitter; then the replay stops with its progress committed.
 */
export const REPLAY_RETRY = { initialDelayMs: 250, maxDelayMs: 10_000, attempts: 8 } as const;

/** The bridge's Temporal client: few in-client attempts (outages belong to the gate), reconnect backoff capped at 5 s. */
export const BRIDGE_TEMPORAL_RPC = {
  maxAttempts: 3,
  initialReconnectBackoffMs: 500,
  maxReconnectBackoffMs: 5_000,
} as const;

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
 * next delay is set by the activity (SHIPMENT_BACKOFF, half jitter), the policy's interval being the fallback.
 */
export const WAREHOUSE_ACTIVITY = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 8 },
} as const;

/** Jittered delays of the shipment activity: doubling from `initialDelayMs`, never above `maxDelayMs`. */
export const SHIPMENT_BACKOFF: TransientRetry = { initialDelayMs: 2_000, maxDelayMs: 60_000 };

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

/** Outcome reporting, a local activity: cheap, a few quick attempts, never holding the order up. */
export const REPORTING_LOCAL_ACTIVITY = {
  startToCloseTimeout: '5 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '2 seconds',
    maximumAttempts: 3,
  },
} as const;

/** After an effect's own policy gave up on a transient failure, the workflow holds the order this long and tries again. */
export const HOLD_BEFORE_RETRYING = '5 minutes';

/**
 * The dedupe ledger's retention run (activities/ledger-retention.ts): batches of short deletes, heartbeating after
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
