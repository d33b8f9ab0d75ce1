/** The bridge: its lanes, deliveries and coalescing, eager starts, fetch bounds and session. */
import { z } from 'zod';
import { booleanFlag, positiveInt } from './fields.js';

export const bridgeSchema = {
  /**
   * No longer used: every order read has a lane of its own, and the delivery slots (BRIDGE_MAX_DELIVERIES) bound the
   * calls in flight. Still accepted, so that a deployment that sets it starts.
   */
  BRIDGE_LANES: positiveInt.optional(),
  /**
   * Signal-with-start calls one bridge has in flight at once, over all its partitions; while more wait, a freed one
   * goes to the tenant whose turn it is by the tenants' weights (TENANT_WEIGHTS).
   */
  BRIDGE_MAX_DELIVERIES: positiveInt.default(32),
  /**
   * Most events of one order, queued together in its lane, that the bridge hands over in one signal (a list on the
   * orderEvent signal, at most 256 KiB of them): a burst on one order costs a workflow task per signal, not per event.
   * 1 hands every event over alone, as itself, which workers of every version read.
   */
  BRIDGE_COALESCE_MAX_EVENTS: positiveInt.default(100),
  /**
   * Where one process runs both roles: the bridge starts an order's run with eager workflow start on the worker's
   * own connection (workflow.start with the events in its input; Temporal hands the first task straight to this
   * worker), and signals runs that exist. Ignored by a bridge-only process.
   */
  BRIDGE_EAGER_START: booleanFlag.default('true'),
  /**
   * How long a record that only its order's workflow refuses (Temporal: RESOURCE_EXHAUSTED, BUSY_WORKFLOW) is retried
   * alone, in its lane, before it is dead-lettered with the reason; the partition's other orders flow meanwhile.
   */
  BRIDGE_RECORD_RETRY_BUDGET_SECONDS: positiveInt.default(300),
  /**
   * How long a partition may stay parked behind a failing dependency (Temporal, Kafka) before it is logged as an
   * error and FulfilmentPartitionParked fires (fulfilment_bridge_partition_parked_seconds above this). Parking
   * itself has no end: an outage for everyone is waited out, never dead-lettered.
   */
  BRIDGE_PARKED_BUDGET_SECONDS: positiveInt.default(300),
  /** Kafka consumer session timeout, milliseconds: how long a crashed bridge holds its partitions. */
  BRIDGE_SESSION_TIMEOUT_MS: z.coerce
    .number({ invalid_type_error: 'milliseconds, 6000–300000' })
    .int()
    .min(6000, 'milliseconds, 6000–300000')
    .max(300_000, 'milliseconds, 6000–300000')
    .default(30_000),
  /**
   * Per partition, most records the bridge reads ahead: a record may start only within this many records of the
   * oldest unfinished one (and within BRIDGE_READ_AHEAD_BYTES). Finished records behind a slow one cannot be
   * committed, so this bounds what a crash redelivers, and it is how far past one tenant's backlog the bridge reads
   * to reach other tenants' orders.
   */
  BRIDGE_READ_AHEAD_RECORDS: positiveInt.optional(),
  /** The former name of BRIDGE_READ_AHEAD_RECORDS, still read when that is not set. */
  BRIDGE_MAX_IN_FLIGHT: positiveInt.optional(),
  /** Per partition, most bytes of record values the bridge reads ahead (from the oldest unfinished record on). */
  BRIDGE_READ_AHEAD_BYTES: positiveInt.default(4 * 1024 * 1024),
  /** Tenants named in the bridge's per-tenant metrics (the busiest); the rest are labelled `other`. */
  BRIDGE_TENANT_METRIC_LABELS: positiveInt.default(20),
  /** Most bytes the bridge fetches per partition at a time (kafkajs maxBytesPerPartition); bounds its memory. */
  BRIDGE_MAX_BYTES_PER_PARTITION: positiveInt.default(131_072),
  /** Most bytes one fetch of the bridge returns over all its partitions (kafkajs maxBytes); bounds its memory. */
  BRIDGE_MAX_BYTES: positiveInt.default(524_288),
};
