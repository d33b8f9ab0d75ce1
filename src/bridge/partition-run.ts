/**
 * Everything the bridge keeps and does for one assigned partition across its batches: the offset tracker, the
 * last offset committed in this generation, the backoff gates of each dependency, the parked state, and the run
 * of one fetched batch — records through their lanes, heartbeats, periodic and final commits, revocation.
 *
 * Rules a reader must not break:
 * - only the contiguous prefix of finished records is committed, through the batch (its generation), so a
 *   revoked partition's offset never moves under its new owner;
 * - a partition that cannot make progress (a gate backing off) is parked — paused and its batch ended — and
 *   resumed when the gate lets the next probe through. Its batch never waits out a backoff: kafkajs fetches
 *   nothing for any partition until every batch of the previous fetch returned, so it would stall the others;
 * - what was not finished when a batch ends is forgotten here and refetched from the last resolved offset;
 * - a commit that failed is owed until one succeeds, and only a batch can make it: when the partition resumes owing
 *   one, it is rewound to its last finished record so that a batch comes even when nothing new arrived (the record
 *   is skipped, not processed again). Otherwise an idle partition would keep an outage's failed commit — its group
 *   lagging, its commit gate failing and so reported parked — until its next record.
 */
import type { PartitionBatch } from '../kafka/consumer-supervisor.js';
import { MembershipLost } from '../kafka/records.js';
import { DependencyUnavailableError } from '../errors.js';
import type { Logger } from '../log.js';
import { Abandoned, sleepOrAbandon, type BackoffGate } from './backoff-gate.js';
import { runInLanes } from './lanes.js';
import { OffsetTracker } from './offset-tracker.js';
import {
  classify,
  laneKey,
  type PartitionContext,
  type RecordInPartition,
  type RecordOutcome,
} from './record-pipeline.js';

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

export interface BatchRunOptions {
  /** Concurrent lanes; one order's records always share a lane. */
  lanes: number;
  /** Most records past the oldest unfinished one that may be started. */
  maxInFlight: number;
  /** How often the finished prefix is committed while the batch runs, milliseconds. */
  commitIntervalMs: number;
  /** How often the batch heartbeats, milliseconds. */
  heartbeatIntervalMs: number;
  /** Aborted when the bridge stops: nothing more is started, waits are abandoned. */
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

export class PartitionRun {
  readonly tracker = new OffsetTracker();
  /** Last offset this member committed, in the current generation. */
  committed: string | undefined;
  /** Ends the running batch's work early (set while a batch runs). */
  private batchLeave: AbortController | undefined;
  private resumeTimer: NodeJS.Timeout | undefined;
  private paused = false;

  constructor(
    readonly partition: number,
    readonly gates: PartitionGates,
    private readonly control: PartitionControl,
  ) {}

  /** True while any gate is backing off. */
  get backingOff(): boolean {
    return Object.values(this.gates).some((g: BackoffGate) => g.backingOff);
  }

  /** Milliseconds this partition has been held up by a failing dependency without a break; 0 while it flows. */
  parkedForMs(now = Date.now()): number {
    return Math.max(...Object.values(this.gates).map((g: BackoffGate) => g.failingForMs(now)));
  }

  /** Milliseconds until every gate lets its next probe through; 0 when all may run now. */
  private remainingMs(): number {
    return Math.max(...Object.values(this.gates).map((g: BackoffGate) => g.remainingMs()));
  }

  /**
   * Runs one fetched batch: every record through its lane, the finished prefix committed every
   * `commitIntervalMs` and once more at the end. Resolves when every started record settled; throws
   * MembershipLost (after settling) when the group is rebalancing, so the consumer rejoins at once.
   */
  async runBatch(batch: PartitionBatch, opts: BatchRunOptions): Promise<void> {
    const { tracker, partition } = this;
    const log = opts.log;
    const records = this.beginRecords(batch);

    // `leave` stops starting records and ends backoff waits: the bridge stops, the partition is revoked or parked,
    // or the consumer stopped this run. Records already handed to Temporal finish; the rest are refetched.
    const leave = new AbortController();
    let lost: MembershipLost | undefined;
    const loseMembership = (err: MembershipLost) => {
      if (!lost)
        log.info(
          { partition, reason: err.message },
          'group membership is changing; settling in-flight records and leaving the batch',
        );
      lost ??= err;
      leave.abort();
    };
    const onStopping = () => leave.abort();
    opts.stopping.addEventListener('abort', onStopping, { once: true });
    this.beginBatch(leave);
    // A batch fetched just before its partition was parked must not wait out the backoff here.
    if (this.backingOff && this.remainingMs() > 0) this.park();

    const ticker = keepMembership(batch, leave, loseMembership, opts.heartbeatIntervalMs);

    const commitPrefix = (signal: AbortSignal, final: boolean) => this.commitPrefix(batch, signal, final);
    const onCommitError = (err: unknown) => {
      if (err instanceof Abandoned) return;
      if (err instanceof MembershipLost) loseMembership(err);
      else log.warn({ partition, err: (err as Error).message }, 'offset commit failed');
    };

    const lanesDone = new AbortController();
    const periodic = commitPeriodically(
      AbortSignal.any([lanesDone.signal, leave.signal]),
      opts.commitIntervalMs,
      commitPrefix,
      onCommitError,
    );

    const ctx: PartitionContext = { gates: this.gates, signal: leave.signal };
    const group = coalescing(opts, ctx);
    let failure: { error: unknown } | undefined;
    try {
      await runInLanes({
        items: records,
        lanes: opts.lanes,
        maxInFlight: opts.maxInFlight,
        keyOf: laneKey,
        signal: leave.signal,
        run: (r) => settled(opts.process(r, ctx)),
        ...(group ? { group } : {}),
        onFinished: (r) => {
          const position = tracker.finish(r.record.offset);
          if (position !== undefined) batch.resolve(position);
        },
      });
    } catch (error) {
      failure = { error };
    } finally {
      lanesDone.abort();
      await periodic;
      // The final commit is attempted even when leaving; a member whose generation is over is refused by the
      // broker, so this can never move a revoked partition's offset under its new owner.
      await commitPrefix(leave.signal, true).catch(onCommitError);
      clearInterval(ticker);
      opts.stopping.removeEventListener('abort', onStopping);
      if (tracker.inFlight > 0) tracker.reset();
      this.endBatch();
    }
    if (failure) throw failure.error;
    if (lost && !opts.stopping.aborted) throw lost;
  }

  /**
   * The batch's records this run has not finished yet, each begun in the tracker and classified. Records this member
   * already finished in this generation come back only to carry an owed commit (resumeNow).
   */
  private beginRecords(batch: PartitionBatch): RecordInPartition[] {
    const { tracker, partition } = this;
    const finished = tracker.commitPosition();
    const fresh =
      finished === undefined
        ? batch.records
        : batch.records.filter((record) => BigInt(record.offset) >= BigInt(finished));
    return fresh.map((record) => {
      tracker.begin(record.offset, Number(record.timestamp));
      return { record, topic: batch.topic, partition, classified: classify(record, batch.topic, partition) };
    });
  }

  /**
   * Commits the finished prefix through the commit gate, when it moved past what was committed. `final` (the batch's
   * last commit) makes one attempt only: a member whose generation is over is refused, never waited for.
   */
  private async commitPrefix(batch: PartitionBatch, signal: AbortSignal, final: boolean): Promise<void> {
    const position = this.tracker.commitPosition();
    if (position === undefined || (this.committed !== undefined && BigInt(position) <= BigInt(this.committed))) return;
    await this.gates.commit.run(
      () =>
        batch.commit(position).catch((err: unknown) => {
          if (err instanceof MembershipLost) throw err;
          throw new DependencyUnavailableError(`offset commit failed: ${(err as Error).message}`, { cause: err });
        }),
      signal,
      { firstAttempt: final },
    );
    if (this.committed === undefined || BigInt(position) > BigInt(this.committed)) this.committed = position;
  }

  /** A batch begins: `leave` is aborted if this partition is parked while it runs. */
  beginBatch(leave: AbortController): void {
    this.batchLeave = leave;
  }

  /** A gate closed: stop fetching and wind the running batch down; its unfinished records are refetched later. */
  park(): void {
    if (!this.paused) {
      this.paused = true;
      this.control.pause(this.partition);
    }
    this.batchLeave?.abort();
  }

  /** The batch ended: resume now if healthy, else when the slowest gate lets its probe through. */
  endBatch(): void {
    this.batchLeave = undefined;
    if (!this.paused) return;
    clearTimeout(this.resumeTimer);
    this.resumeTimer = setTimeout(() => this.resumeNow(), this.remainingMs());
    this.resumeTimer.unref();
  }

  /**
   * A new generation: offsets tracked so far may now belong to another member. A commit or dead letter that failed
   * in the old generation is no longer owed — the records it was for are refetched from the group's offset, or were
   * handled by the member that owned them in between — so those two gates forget their failing spell: otherwise an
   * idle partition, with nothing left to probe them, would keep the bridge unready and the partition reported parked
   * long after Kafka took writes again (the group just re-formed, so its coordinator answers). The delivery gate keeps
   * backing off: a rebalance says nothing about Temporal, and refetched records probe it as before. A partition parked
   * only by those gates resumes now.
   */
  resetGeneration(): void {
    this.tracker.reset();
    this.committed = undefined;
    this.gates.commit.forget();
    this.gates.deadLetter.forget();
    if (this.paused && !this.batchLeave) this.endBatch();
  }

  dispose(): void {
    clearTimeout(this.resumeTimer);
  }

  /** The commit position this member reached and has not managed to commit in this generation, if any. */
  owedCommit(): string | undefined {
    const position = this.tracker.commitPosition();
    return position !== undefined && (this.committed === undefined || BigInt(position) > BigInt(this.committed))
      ? position
      : undefined;
  }

  private resumeNow(): void {
    this.paused = false;
    const owed = this.owedCommit();
    if (owed !== undefined) this.control.seek(this.partition, (BigInt(owed) - 1n).toString());
    this.control.resume(this.partition);
  }
}

/**
 * Heartbeats the group while a batch runs, and leaves the batch when it is no longer current or the membership is
 * being lost (a rebalance); the interval is cleared by the caller.
 */
function keepMembership(
  batch: PartitionBatch,
  leave: AbortController,
  loseMembership: (err: MembershipLost) => void,
  heartbeatIntervalMs: number,
): NodeJS.Timeout {
  return setInterval(
    () => {
      if (!batch.isCurrent()) leave.abort();
      batch.heartbeat().catch((err: unknown) => {
        if (err instanceof MembershipLost) loseMembership(err);
      });
    },
    Math.min(1_000, heartbeatIntervalMs),
  );
}

/** Commits the finished prefix every `intervalMs` until `signal` aborts, the commit is abandoned or membership lost. */
async function commitPeriodically(
  signal: AbortSignal,
  intervalMs: number,
  commitPrefix: (signal: AbortSignal, final: boolean) => Promise<void>,
  onCommitError: (err: unknown) => void,
): Promise<void> {
  while (!signal.aborted) {
    try {
      await sleepOrAbandon(intervalMs, signal);
      await commitPrefix(signal, false);
    } catch (err) {
      onCommitError(err);
      if (err instanceof Abandoned || err instanceof MembershipLost) return;
    }
  }
}

/** A record left unfinished on purpose (Abandoned) stops its lane (false); anything else is a bug and stops the batch. */
function settled(work: Promise<unknown>): Promise<boolean> {
  return work.then(
    () => true,
    (err: unknown) => {
      if (err instanceof Abandoned) return false;
      throw err;
    },
  );
}

/** How one lane's queued records are handed over together (one order's events in one signal), when coalescing is on. */
function coalescing(opts: BatchRunOptions, ctx: PartitionContext) {
  const { processGroup, coalesce } = opts;
  if (!processGroup || !coalesce || coalesce.maxEvents <= 1) return undefined;
  return {
    max: coalesce.maxEvents,
    fits: (taken: readonly RecordInPartition[], next: RecordInPartition) =>
      taken.reduce((bytes, r) => bytes + (r.record.value?.length ?? 0), next.record.value?.length ?? 0) <=
      coalesce.maxBytes,
    run: (rs: RecordInPartition[]) => settled(processGroup(rs, ctx)),
  };
}
