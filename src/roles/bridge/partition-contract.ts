/**
 * What a partition's run (partition-run.ts) is given by the bridge: the gates its records pass, the consumer's controls
 * over its partition, and its options (read-ahead, commit interval, the records' path).
 */
import type { Logger } from '../../base/log.js';
import type { BackoffGate } from './backoff-gate.js';
import type { PartitionContext, RecordInPartition, RecordOutcome } from './record-pipeline.js';

/** The dependencies one partition's records go through, each behind its own gate. */
export interface PartitionGates {
  deliver: BackoffGate;
  deadLetter: BackoffGate;
  commit: BackoffGate;
}

export interface PartitionControl {
  pause(partition: number): void;
  resume(partition: number): void;
  /** The next fetch of `partition` starts at `offset`. */
  seek(partition: number, offset: string): void;
}

export interface PartitionRunOptions {
  /** Per partition, most records and bytes from the oldest unfinished record through one that may start. */
  readAhead: { records: number; bytes: number };
  /** How often the finished prefix is committed while records are read and unfinished, milliseconds. */
  commitIntervalMs: number;
  /** Aborted when the bridge stops: nothing more is read or started, waits are abandoned. */
  stopping: AbortSignal;
  /** One record's path (record-pipeline.ts processRecord with its dependencies). */
  process(r: RecordInPartition, ctx: PartitionContext): Promise<RecordOutcome>;
  /**
   * One order's events queued together in a lane, handed over in one call (record-pipeline.ts processOrderEvents);
   * with `coalesce`, at most `maxEvents` records whose values add up to at most `maxBytes`. Absent: one at a time.
   */
  processGroup?(rs: RecordInPartition[], ctx: PartitionContext): Promise<RecordOutcome[]>;
  coalesce?: { maxEvents: number; maxBytes: number };
  log: Logger;
}
