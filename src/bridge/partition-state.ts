/**
 * What the bridge keeps for one assigned partition across its batches: the offset tracker, the last committed
 * offset of this generation, the backoff gates of each dependency, and the parked state.
 *
 * Rule a reader must not break: a partition that cannot make progress (a gate backing off) is parked — paused
 * and its batch ended — and resumed when the gate lets the next probe through. Its batch must never stay
 * waiting inside kafkajs's batch handler: kafkajs fetches nothing for any partition of this consumer until
 * every batch of the previous fetch has returned, so one waiting batch would stall every other partition.
 */
import type { BackoffGate } from './backoff-gate.js';
import { OffsetTracker } from './offset-tracker.js';

/** The dependencies one partition's records go through, each behind its own gate. */
export interface PartitionGates {
  deliver: BackoffGate;
  deadLetter: BackoffGate;
  commit: BackoffGate;
}

export interface PartitionControl {
  pause(partition: number): void;
  resume(partition: number): void;
}

export class PartitionState {
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
    const wait = Math.max(...Object.values(this.gates).map((g: BackoffGate) => g.remainingMs()));
    clearTimeout(this.resumeTimer);
    this.resumeTimer = setTimeout(() => this.resumeNow(), wait);
    this.resumeTimer.unref();
  }

  /** A new generation: offsets tracked so far may now belong to another member. */
  resetGeneration(): void {
    this.tracker.reset();
    this.committed = undefined;
  }

  dispose(): void {
    clearTimeout(this.resumeTimer);
  }

  private resumeNow(): void {
    this.paused = false;
    this.control.resume(this.partition);
  }
}
