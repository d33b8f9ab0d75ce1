/**
 * Everything the bridge keeps and does for one assigned partition: the offset tracker, the last offset committed in
 * this generation, the backoff gates of each dependency, the parked state, and the read-ahead window — the records
 * read and not yet finished, run through their lanes (lanes.ts) across as many fetched batches as the window holds.
 * A fetched batch is only read into the window: its handler returns at once, so kafkajs fetches on for every
 * partition while records run, and a partition whose window is full is paused until records finish.
 *
 * Rules a reader must not break:
 * - only the contiguous prefix of finished records is committed, and only in the generation the records were read
 *   in: a join (resetGeneration) forgets the window at once, before any later commit could be sent, and the broker
 *   refuses a commit from a member whose generation is over — so a revoked partition's offset never moves under its
 *   new owner;
 * - a partition that cannot make progress (a gate backing off) is parked — paused, its window stopped and, once the
 *   records running settled, forgotten past the commit position — and resumed, from the oldest unfinished record,
 *   when the gate lets the next probe through. Nothing a fetched batch's handler does waits out a backoff: kafkajs
 *   fetches nothing for any partition until every batch of the previous fetch returned;
 * - what was not finished when the window is forgotten is refetched from the oldest unfinished record (a seek);
 * - a commit that failed is owed until one succeeds: the committer keeps trying it through the commit gate, with or
 *   without new records, so an idle partition does not keep an outage's failed commit.
 */
import type { PartitionBatch } from '../../adapters/kafka/consumer-supervisor.js';
import { MembershipLost } from '../../adapters/kafka/records.js';
import { DependencyUnavailableError } from '../../base/errors.js';
import { Abandoned, sleepOrAbandon, type BackoffGate } from './backoff-gate.js';
import { LaneWindow } from './lanes.js';
import type { PartitionControl, PartitionGates, PartitionRunOptions } from './partition-contract.js';
import { OffsetTracker } from './offset-tracker.js';
import { classify, laneKey, type PartitionContext, type RecordInPartition } from './record-pipeline.js';

/** A read-ahead window of one generation, and what abandons its waits. */
interface Window {
  lanes: LaneWindow<RecordInPartition>;
  leave: AbortController;
}

export class PartitionRun {
  readonly tracker = new OffsetTracker();
  /** Last offset this member committed, in the current generation. */
  committed: string | undefined;
  /** The records read and not finished, while the partition flows. */
  private window: Window | undefined;
  /** A stopped window whose running records are settling (parked, stopping, or after a failure). */
  private windingDown: Promise<void> | undefined;
  /** The latest batch of this generation: commits are made through it. */
  private batch: PartitionBatch | undefined;
  /** Offset of the next record to read into the window; undefined: whatever the fetch brings. */
  private nextRead: bigint | undefined;
  /** Bumped by every join: work of an older generation changes nothing here. */
  private generation = 0;
  /** Aborted when the generation ends or the bridge stops: the committer's waits. */
  private generationLeave = new AbortController();
  private committer: Promise<void> | undefined;
  private resumeTimer: NodeJS.Timeout | undefined;
  /** Paused because a gate backs off. */
  private paused = false;
  /** Paused because the window is full. */
  private held = false;
  /** The partition is no longer this member's: nothing is scheduled any more. */
  private disposed = false;
  /** An unexpected error from a record's run: thrown by the next batch handed in, so the consumer restarts. */
  private failure: { error: unknown } | undefined;

  constructor(
    readonly partition: number,
    readonly gates: PartitionGates,
    private readonly control: PartitionControl,
    private readonly opts: PartitionRunOptions,
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

  /** The records read and not finished, oldest first. */
  *unfinished(): Generator<RecordInPartition> {
    if (this.window) yield* this.window.lanes.unfinished();
  }

  /**
   * Reads one fetched batch into the window and returns at once: its records start as the window and the delivery
   * slots let them, and finish after this returns. Throws a failure an earlier record's run met (a bug), so that
   * the consumer restarts.
   */
  accept(batch: PartitionBatch): void {
    if (this.failure) {
      const { error } = this.failure;
      this.failure = undefined;
      throw error;
    }
    // Parked or stopping: nothing is read; the partition is fetched again from its oldest unfinished record.
    if (this.paused || this.windingDown || this.opts.stopping.aborted) return;
    this.batch = batch;
    const fresh = batch.records.filter((r) => this.nextRead === undefined || BigInt(r.offset) >= this.nextRead);
    if (fresh.length > 0) {
      const { partition } = this;
      const records = fresh.map((record) => {
        this.tracker.begin(record.offset, Number(record.timestamp));
        return { record, topic: batch.topic, partition, classified: classify(record, batch.topic, partition) };
      });
      this.nextRead = BigInt(fresh.at(-1)!.offset) + 1n;
      batch.resolve(this.nextRead.toString());
      (this.window ??= this.openWindow()).lanes.append(records);
      this.holdIfFull();
    }
    this.commitWhileOwed();
  }

  private openWindow(): Window {
    const { opts, tracker } = this;
    const generation = this.generation;
    const leave = new AbortController();
    const ctx: PartitionContext = { gates: this.gates, signal: AbortSignal.any([leave.signal, opts.stopping]) };
    const group = coalescing(opts, ctx);
    const lanes: LaneWindow<RecordInPartition> = new LaneWindow<RecordInPartition>({
      keyOf: laneKey,
      bytesOf: (r) => r.record.value?.length ?? 0,
      readAhead: opts.readAhead,
      run: (r) => settled(opts.process(r, ctx)),
      ...(group ? { group } : {}),
      onFinished: (r) => {
        if (generation !== this.generation) return;
        const position = tracker.finish(r.record.offset);
        if (position !== undefined && this.window?.lanes === lanes) this.holdIfFull();
      },
      onFailure: (error) => {
        if (generation !== this.generation) return;
        opts.log.error(
          { partition: this.partition, err: (error as Error).message },
          'a record failed unexpectedly; the partition is read again from its oldest unfinished record',
        );
        this.failure = { error };
        this.windDown(() => this.resumeNow());
      },
    });
    return { lanes, leave };
  }

  /** Pauses fetching while the window is full, resumes it once it has room. */
  private holdIfFull(): void {
    const full = this.window?.lanes.full ?? false;
    if (full && !this.held) {
      this.held = true;
      if (!this.paused) this.control.pause(this.partition);
    } else if (!full && this.held) {
      this.held = false;
      if (!this.paused) this.control.resume(this.partition);
    }
  }

  /**
   * Stops the window, lets its running records settle, commits the finished prefix once, and forgets the rest:
   * fetching starts again from the oldest unfinished record. `then` runs when that is done.
   */
  private windDown(then: () => void): void {
    const w = this.window;
    this.window = undefined;
    this.held = false;
    if (!w) {
      if (!this.windingDown) then();
      return;
    }
    w.leave.abort();
    w.lanes.stop();
    const generation = this.generation;
    this.windingDown = (async () => {
      await w.lanes.idle();
      if (generation !== this.generation) return;
      await this.commitPrefix(this.generationLeave.signal, true).catch((err: unknown) => this.onCommitError(err));
      const from = this.tracker.forgetUnfinished();
      if (from !== undefined) this.nextRead = BigInt(from);
    })().finally(() => {
      this.windingDown = undefined;
      if (generation === this.generation) then();
    });
  }

  /**
   * Settles for a stop: nothing more starts, running records finish, the finished prefix is committed once. On the way
   * out nothing waits for Kafka: the final commit is one attempt (none while the commit gate backs off), and a
   * wind-down or committer retrying a commit gives up — what was not committed is read again by the partition's next
   * owner, and the dedupe absorbs it. (Waiting instead held a stop until its deadline whenever the group's coordinator
   * was down and the consumer had given up on it.)
   */
  async settle(): Promise<void> {
    const w = this.window;
    this.window = undefined;
    if (w) {
      w.leave.abort();
      w.lanes.stop();
      await w.lanes.idle();
    }
    this.generationLeave.abort();
    if (w) await this.commitPrefix(this.generationLeave.signal, true).catch((err: unknown) => this.onCommitError(err));
    await this.windingDown;
    await this.committer;
  }

  /**
   * Commits the finished prefix every `commitIntervalMs` while records are read and unfinished or a commit is owed;
   * ends when neither holds (the next batch starts it again), or the generation ends.
   */
  private commitWhileOwed(): void {
    if (this.committer || !this.batch) return;
    const signal = this.generationLeave.signal;
    this.committer = (async () => {
      while (!signal.aborted && (this.window?.lanes.span || this.windingDown || this.owedCommit() !== undefined)) {
        try {
          await sleepOrAbandon(this.opts.commitIntervalMs, signal);
          await this.commitPrefix(signal, false);
        } catch (err) {
          this.onCommitError(err);
          if (err instanceof Abandoned || err instanceof MembershipLost) return;
        }
      }
    })().finally(() => (this.committer = undefined));
  }

  private onCommitError(err: unknown): void {
    if (err instanceof Abandoned) return;
    // A generation that is over: kafkajs rejoins by itself at its next heartbeat, and the join forgets this window.
    if (err instanceof MembershipLost)
      this.opts.log.info({ partition: this.partition, reason: err.message }, 'group membership is changing');
    else this.opts.log.warn({ partition: this.partition, err: (err as Error).message }, 'offset commit failed');
  }

  /**
   * Commits the finished prefix through the commit gate, when it moved past what was committed. `final` makes one
   * attempt only: a member whose generation is over is refused, never waited for.
   */
  private async commitPrefix(signal: AbortSignal, final: boolean): Promise<void> {
    const position = this.tracker.commitPosition();
    const batch = this.batch;
    if (
      !batch ||
      position === undefined ||
      (this.committed !== undefined && BigInt(position) <= BigInt(this.committed))
    )
      return;
    const generation = this.generation;
    await this.gates.commit.run(
      () => {
        // Checked just before sending: a join since then forgot what this commit was for, or another commit of the
        // same position (the committer's, a wind-down's) went through while this one waited for the gate.
        if (generation !== this.generation) throw new Abandoned('generation ended');
        if (this.committed !== undefined && BigInt(position) <= BigInt(this.committed)) return Promise.resolve();
        return batch.commit(position).catch((err: unknown) => {
          if (err instanceof MembershipLost) throw err;
          throw new DependencyUnavailableError(`offset commit failed: ${(err as Error).message}`, { cause: err });
        });
      },
      signal,
      { firstAttempt: final },
    );
    if (generation !== this.generation) return;
    if (this.committed === undefined || BigInt(position) > BigInt(this.committed)) this.committed = position;
  }

  /** A gate closed: stop fetching and wind the window down; its unfinished records are refetched later. */
  park(): void {
    if (!this.paused) {
      this.paused = true;
      if (!this.held) this.control.pause(this.partition);
    }
    if (this.window) this.windDown(() => this.scheduleResume());
    else if (!this.windingDown) this.scheduleResume();
  }

  /** Resumes now if healthy, else when the slowest gate lets its probe through. */
  private scheduleResume(): void {
    if (!this.paused || this.disposed) return;
    clearTimeout(this.resumeTimer);
    this.resumeTimer = setTimeout(() => this.resumeNow(), this.remainingMs());
    this.resumeTimer.unref();
  }

  /**
   * A new generation: offsets tracked so far may now belong to another member, so the window is forgotten at once
   * (its running records settle, their ends change nothing). A commit or dead letter that failed in the old
   * generation is no longer owed — its records are refetched from the group's offset, or were handled by their owner
   * in between — so those two gates forget their failing spell: otherwise an idle partition, with nothing left to
   * probe them, would stay unready and reported parked long after Kafka took writes again. The delivery gate keeps
   * backing off: a rebalance says nothing about Temporal. A partition parked only by those gates resumes now.
   */
  resetGeneration(): void {
    this.generation += 1;
    this.generationLeave.abort();
    this.generationLeave = new AbortController();
    if (this.window) {
      this.window.leave.abort();
      this.window.lanes.stop();
      this.window = undefined;
    }
    this.windingDown = undefined;
    this.failure = undefined;
    this.tracker.reset();
    this.committed = undefined;
    this.batch = undefined;
    this.nextRead = undefined;
    if (this.held) {
      this.held = false;
      if (!this.paused) this.control.resume(this.partition);
    }
    this.gates.commit.forget();
    this.gates.deadLetter.forget();
    this.scheduleResume();
  }

  /**
   * The partition is now another member's: the run ends, and a pause it set on the consumer is lifted. The consumer
   * keeps a partition's pause across assignments (kafkajs's subscription state), so a partition revoked while parked
   * or held would otherwise stay paused — never fetched again, silently — once it is assigned to this member again.
   */
  handOver(): void {
    const pausedHere = this.paused || this.held;
    this.dispose();
    if (pausedHere) this.control.resume(this.partition);
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.resumeTimer);
    this.generationLeave.abort();
    if (this.window) {
      this.window.leave.abort();
      this.window.lanes.stop();
    }
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
    if (this.nextRead !== undefined) this.control.seek(this.partition, this.nextRead.toString());
    this.control.resume(this.partition);
    this.commitWhileOwed();
  }
}

/** A record left unfinished on purpose (Abandoned) stops its lane (false); anything else is a bug and stops the window. */
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
function coalescing(opts: PartitionRunOptions, ctx: PartitionContext) {
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
