/**
 * The retry and backoff policies of the service's own code, as data, in one place (the workflows' activity options
 * live beside them: workflows/activity-options.ts). Delays are milliseconds unless the name says otherwise.
 * Transient failures are always retried with jitter and a cap; permanent ones never (see src/base/errors.ts).
 */

import { WAREHOUSE_RETRY } from '../vocabulary/warehouse-retry.js';

/** A transient-failure backoff: half-jittered, doubling from `initialDelayMs`, capped at `maxDelayMs`, no attempt limit. */
export interface TransientRetry {
  initialDelayMs: number;
  maxDelayMs: number;
}

/** The bridge's per-partition gates (deliver, dead-letter, commit) and its consumer restarts. */
export const BRIDGE_RETRY: TransientRetry = { initialDelayMs: 200, maxDelayMs: 30_000 };

/** The status relay's rounds after Kafka or PostgreSQL failed (src/adapters/status-events/relay.ts): the rows wait meanwhile. */
export const STATUS_RELAY_RETRY: TransientRetry = { initialDelayMs: 250, maxDelayMs: 15_000 };

/**
 * The longest one status-relay send may take (src/adapters/status-events/relay.ts): kafkajs's own request timeout (30
 * s) and a retry fit in it; past it the round fails as a Kafka failure and the relay sends through a new producer.
 */
export const STATUS_RELAY_SEND_DEADLINE_MS = 60_000;

/** Start-up waits for a dependency that is down (src/base/startup.ts); decorrelated jitter. */
export const STARTUP_RETRY: TransientRetry = { initialDelayMs: 500, maxDelayMs: 10_000 };

/**
 * kafkajs's own retries of one request or connection (300 ms doubling to 5 s, ±20 % jitter), measured against the
 * brokers' session timeout (broker.session.timeout.ms, 9 s in KRaft): a broker that dies without a word keeps its
 * leaderships, and the group coordinator role, until that timeout fences it; the new leader is elected at once after.
 * `requests` — 7 retries, about 19 s (15 s at the least with jitter), twice the session timeout — is for producers,
 * admin and commits: a send or commit in flight when its leader dies rides out the election, and only a longer
 * failure reaches the caller's gate. `consumer` — 10 retries, about 34 s — lets the bridge's consumer ride out a
 * broker restart and a coordinator move while keeping its group membership (its own session timeout is 30 s).
 */
export const KAFKA_RETRY = { initialRetryTime: 300, maxRetryTime: 5_000, requests: 7, consumer: 10 } as const;

/**
 * A redelivery's delivery of one event (src/cli/redeliver/redeliver.ts): at most `attempts` in all, delays doubling from
 * `initialDelayMs` to `maxDelayMs` with decorrelated jitter; then the redelivery stops with its progress committed.
 */
export const REDELIVERY_RETRY = { initialDelayMs: 250, maxDelayMs: 10_000, attempts: 8 } as const;

/** The bridge's Temporal client: few in-client attempts (outages belong to the gate), reconnect backoff capped at 5 s. */
export const BRIDGE_TEMPORAL_RPC = {
  maxAttempts: 3,
  initialReconnectBackoffMs: 500,
  maxReconnectBackoffMs: 5_000,
} as const;

/**
 * Jittered delays of the shipment activity when none are configured: doubling from `initialDelayMs`, never above
 * `maxDelayMs` — the warehouse retry policy's (src/vocabulary/warehouse-retry.ts).
 */
export const SHIPMENT_BACKOFF: TransientRetry = {
  initialDelayMs: WAREHOUSE_RETRY.initialDelayMs,
  maxDelayMs: WAREHOUSE_RETRY.maxDelayMs,
};
