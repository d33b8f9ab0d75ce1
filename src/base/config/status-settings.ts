/**
 * Status events out: the output topic, the relay that publishes the outbox to it (a part of the worker), and the
 * schedule that prunes sent rows.
 */
import { z } from 'zod';
import { booleanFlag, duration, nonEmpty, positiveInt } from './fields.js';

const rows = (max: number) =>
  z.coerce
    .number({ invalid_type_error: `a whole number 1–${max}` })
    .int(`a whole number 1–${max}`)
    .min(1, `a whole number 1–${max}`)
    .max(max, `a whole number 1–${max}`);

export const statusSchema = {
  /** Output topic of the fulfilment status events (docs/schema/fulfilment-status.v1.schema.json). */
  STATUS_TOPIC: nonEmpty.default('fulfilment.status'),
  /** Partitions `fulfilment provision` gives the status topic (creating it, or growing it when it has fewer). */
  STATUS_TOPIC_PARTITIONS: positiveInt.default(6),
  /**
   * Whether this worker runs the status relay. Every worker that does stands by for the lead of STATUS_TOPIC; one at a
   * time publishes. A worker with `false` still writes the outbox (its rows wait for a relay).
   */
  STATUS_RELAY: booleanFlag.default('true'),
  /** Outbox rows the relay publishes per Kafka request (and marks sent per statement), 1–1000. */
  STATUS_RELAY_BATCH: rows(1000).default(100),
  /**
   * Milliseconds between an idle relay's looks for rows it was not notified of (a notification wakes it at once), and
   * between a standby's tries to lead; also how often the lag metric is read. At least 50.
   */
  STATUS_RELAY_POLL_MS: z.coerce
    .number({ invalid_type_error: 'milliseconds ≥ 50' })
    .int('milliseconds ≥ 50')
    .min(50, 'milliseconds ≥ 50')
    .default(1000),
  /**
   * Milliseconds a relay woken by a commit waits before it reads, so the rows committed meanwhile go out in one request
   * and one mark (0–1000; 0: each wake reads at once). Adds at most this much to a status event's delay.
   */
  STATUS_RELAY_GATHER_MS: z.coerce
    .number({ invalid_type_error: 'milliseconds 0–1000' })
    .int('milliseconds 0–1000')
    .min(0, 'milliseconds 0–1000')
    .max(1000, 'milliseconds 0–1000')
    .default(50),
  /** Days a sent outbox row is kept (what `fulfilment status tail` can show), then pruned. */
  STATUS_OUTBOX_RETENTION_DAYS: positiveInt.default(7),
  /** How often the status-outbox retention schedule runs (30m, 1h, 1d; at least 1m); 0: this worker leaves it alone. */
  STATUS_OUTBOX_PRUNE_INTERVAL: duration.default('1h'),
  /** Sent rows deleted per call of prune_status_outbox (one short transaction each), 1–10000. */
  STATUS_OUTBOX_PRUNE_BATCH: rows(10_000).default(1000),
  /** Id of the Temporal Schedule that prunes the status outbox: one per deployment. */
  STATUS_OUTBOX_PRUNE_SCHEDULE_ID: nonEmpty.default('fulfilment-status-outbox-retention'),
};
