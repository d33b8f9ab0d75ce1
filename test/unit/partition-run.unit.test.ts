/**
 * One partition's state with real backoff gates, on fake timers (Date included): parking pauses the partition
 * and winds its batch down; ending the batch schedules the resume for when the slowest gate lets its probe
 * through; a partition that resumes owing a commit is rewound so that a batch carries it. The batch run itself is
 * covered on the real stack (rebalance, partition-isolation and outage tests), except for that rewound batch.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Abandoned, BackoffGate, DEFAULT_TRANSIENT_RETRY, type TransientRetry } from '../../src/bridge/backoff-gate.js';
import { PartitionRun, type BatchRunOptions, type PartitionControl } from '../../src/bridge/partition-run.js';
import type { RecordInPartition } from '../../src/bridge/record-pipeline.js';
import { DependencyUnavailableError } from '../../src/errors.js';
import type { PartitionBatch } from '../../src/kafka/consumer-supervisor.js';
import { createLogger } from '../../src/log.js';

const PARTITION = 4;

function control() {
  const calls: string[] = [];
  const c: PartitionControl = {
    pause: vi.fn((p: number) => calls.push(`pause ${p}`)),
    resume: vi.fn((p: number) => calls.push(`resume ${p}`)),
    seek: vi.fn((p: number, offset: string) => calls.push(`seek ${p} ${offset}`)),
  };
  return { c, calls };
}

/** A real gate, its backoff delays recorded, and a way to make it back off (one transient failure). */
function gate(retry: TransientRetry = DEFAULT_TRANSIENT_RETRY, onBackoff?: () => void) {
  const delays: number[] = [];
  const g = new BackoffGate(retry, {
    onRetry: () => {},
    onBackoff: (_err, delayMs) => {
      delays.push(delayMs);
      onBackoff?.();
    },
  });
  const leave = new AbortController();
  const pending: Promise<unknown>[] = [];
  return {
    gate: g,
    delays,
    /** One call that fails transiently: the gate closes; the caller then waits until `release()`. */
    async fail(): Promise<number> {
      pending.push(
        g.run(() => Promise.reject(new DependencyUnavailableError('down')), leave.signal).catch((e: unknown) => e),
      );
      await vi.advanceTimersByTimeAsync(0);
      return delays.at(-1)!;
    },
    /** The failing callers give up, then a call succeeds once the gate lets it: the gate opens again. */
    async succeed(): Promise<void> {
      leave.abort();
      await vi.advanceTimersByTimeAsync(0);
      const run = g.run(() => Promise.resolve('ok'), new AbortController().signal);
      await vi.advanceTimersByTimeAsync(g.remainingMs());
      await run;
    },
    async release(): Promise<void> {
      leave.abort();
      await vi.advanceTimersByTimeAsync(0);
      for (const e of await Promise.all(pending)) expect(e).toBeInstanceOf(Abandoned);
    },
  };
}

function setup(opts: { commitRetry?: TransientRetry } = {}) {
  const ctl = control();
  // As in the bridge: any gate backing off parks the partition.
  const park = () => state.park();
  const gates = {
    deliver: gate(DEFAULT_TRANSIENT_RETRY, park),
    deadLetter: gate(DEFAULT_TRANSIENT_RETRY, park),
    commit: gate(opts.commitRetry, park),
  };
  const state = new PartitionRun(
    PARTITION,
    { deliver: gates.deliver.gate, deadLetter: gates.deadLetter.gate, commit: gates.commit.gate },
    ctl.c,
  );
  return { state, ctl, gates };
}

let releases: (() => Promise<void>)[] = [];

beforeEach(() => {
  vi.useFakeTimers();
  releases = [];
});
afterEach(async () => {
  for (const r of releases) await r();
  vi.useRealTimers();
});

describe('PartitionRun: parking, resuming and generations', () => {
  it('parking pauses the partition once, however often it is parked, and aborts the running batch', async () => {
    const { state, ctl } = setup();
    const batch = new AbortController();
    state.beginBatch(batch);
    expect(batch.signal.aborted).toBe(false);
    state.park();
    state.park();
    state.park();
    expect(ctl.c.pause).toHaveBeenCalledTimes(1);
    expect(ctl.c.pause).toHaveBeenCalledWith(PARTITION);
    expect(batch.signal.aborted).toBe(true);
    expect(ctl.c.resume).not.toHaveBeenCalled();
  });

  it('a gate closing parks the partition through its backoff event, and the partition reports backing off', async () => {
    const { state, ctl, gates } = setup();
    const batch = new AbortController();
    state.beginBatch(batch);
    expect(state.backingOff).toBe(false);
    releases.push(gates.deliver.release);
    await gates.deliver.fail();
    expect(state.backingOff).toBe(true);
    expect(batch.signal.aborted).toBe(true);
    releases.push(gates.commit.release);
    await gates.commit.fail();
    expect(ctl.c.pause).toHaveBeenCalledTimes(1);
  });

  it('parking between batches pauses the partition, and the next batch is not aborted by that earlier park', async () => {
    const { state, ctl } = setup();
    state.park();
    expect(ctl.c.pause).toHaveBeenCalledTimes(1);
    state.endBatch();
    await vi.advanceTimersByTimeAsync(0);
    const next = new AbortController();
    state.beginBatch(next);
    expect(next.signal.aborted).toBe(false);
  });

  it('ending the batch while a gate backs off resumes the partition exactly when that gate lets its probe through', async () => {
    const { state, ctl, gates } = setup();
    state.beginBatch(new AbortController());
    releases.push(gates.deliver.release);
    const delay = await gates.deliver.fail();
    await vi.advanceTimersByTimeAsync(30);
    state.endBatch();
    const remaining = gates.deliver.gate.remainingMs();
    expect(remaining).toBe(delay - 30);
    await vi.advanceTimersByTimeAsync(remaining - 1);
    expect(ctl.c.resume).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
    expect(ctl.c.resume).toHaveBeenCalledWith(PARTITION);
    expect(ctl.calls).toEqual([`pause ${PARTITION}`, `resume ${PARTITION}`]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
  });

  it('with several gates backing off it waits for the slowest one', async () => {
    // The commit gate's first delay is 2–4 s; the deliver gate's is 100–200 ms.
    const { state, ctl, gates } = setup({ commitRetry: { initialDelayMs: 4000, maxDelayMs: 30_000 } });
    state.beginBatch(new AbortController());
    releases.push(gates.deliver.release, gates.commit.release);
    const fast = await gates.deliver.fail();
    const slow = await gates.commit.fail();
    expect(slow).toBeGreaterThan(fast);
    state.endBatch();
    await vi.advanceTimersByTimeAsync(fast);
    expect(ctl.c.resume).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(slow - fast - 1);
    expect(ctl.c.resume).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
  });

  it('ending the batch of a parked partition whose gates are healthy again resumes it at once (a 0 ms timer)', async () => {
    const { state, ctl, gates } = setup();
    state.beginBatch(new AbortController());
    releases.push(gates.deliver.release);
    await gates.deliver.fail();
    await gates.deliver.succeed();
    expect(state.backingOff).toBe(false);
    state.endBatch();
    await vi.advanceTimersByTimeAsync(0);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
    expect(ctl.c.resume).toHaveBeenCalledWith(PARTITION);
  });

  it('a partition that was parked by hand with healthy gates is resumed on the next tick', async () => {
    const { state, ctl } = setup();
    state.beginBatch(new AbortController());
    state.park();
    state.endBatch();
    await vi.advanceTimersByTimeAsync(0);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
  });

  it('ending the batch of a partition that was never parked resumes nothing', async () => {
    const { state, ctl } = setup();
    const batch = new AbortController();
    state.beginBatch(batch);
    state.endBatch();
    await vi.runAllTimersAsync();
    expect(ctl.c.resume).not.toHaveBeenCalled();
    expect(ctl.c.pause).not.toHaveBeenCalled();
    expect(batch.signal.aborted).toBe(false);
  });

  it('after a resume the partition can be parked and resumed again', async () => {
    const { state, ctl } = setup();
    for (let i = 1; i <= 3; i += 1) {
      const batch = new AbortController();
      state.beginBatch(batch);
      state.park();
      expect(batch.signal.aborted).toBe(true);
      state.endBatch();
      await vi.advanceTimersByTimeAsync(0);
      expect(ctl.c.pause).toHaveBeenCalledTimes(i);
      expect(ctl.c.resume).toHaveBeenCalledTimes(i);
    }
    // And a batch after the resume that ends normally resumes nothing more.
    state.beginBatch(new AbortController());
    state.endBatch();
    await vi.runAllTimersAsync();
    expect(ctl.c.resume).toHaveBeenCalledTimes(3);
  });

  it('ending a second batch before the resume replaces the pending resume instead of adding one', async () => {
    const { state, ctl, gates } = setup();
    state.beginBatch(new AbortController());
    releases.push(gates.deliver.release);
    await gates.deliver.fail();
    state.endBatch();
    state.beginBatch(new AbortController());
    state.endBatch();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
  });

  it('dispose() cancels a pending resume', async () => {
    const { state, ctl, gates } = setup();
    state.beginBatch(new AbortController());
    releases.push(gates.deliver.release);
    await gates.deliver.fail();
    state.endBatch();
    state.dispose();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ctl.c.resume).not.toHaveBeenCalled();
  });

  it('dispose() with nothing pending is harmless', () => {
    const { state, ctl } = setup();
    state.dispose();
    state.dispose();
    expect(ctl.calls).toEqual([]);
  });

  it('resetGeneration() forgets the tracked offsets and the committed offset of the old generation', () => {
    const { state } = setup();
    state.tracker.begin('10', 1);
    state.tracker.begin('11', 2);
    expect(state.tracker.finish('10')).toBe('11');
    state.committed = '11';
    expect(state.tracker.inFlight).toBe(1);

    state.resetGeneration();
    expect(state.committed).toBeUndefined();
    expect(state.tracker.commitPosition()).toBeUndefined();
    expect(state.tracker.inFlight).toBe(0);
    expect(state.tracker.oldestPendingTimestamp()).toBeUndefined();
    // Offsets below the old commit position are tracked again (they may come back from another member's position).
    state.tracker.begin('5', 3);
    expect(state.tracker.finish('5')).toBe('6');
  });
});

describe('PartitionRun: a new generation while Kafka refused its writes', () => {
  it('a commit or dead letter that failed in the old generation is forgotten with it: not parked, and resumed now', async () => {
    const { state, ctl, gates } = setup({ commitRetry: { initialDelayMs: 20_000, maxDelayMs: 60_000 } });
    state.beginBatch(new AbortController());
    releases.push(gates.commit.release, gates.deadLetter.release);
    await gates.commit.fail();
    await gates.deadLetter.fail();
    state.endBatch();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(state.parkedForMs()).toBeGreaterThanOrEqual(5_000);
    expect(ctl.c.resume).not.toHaveBeenCalled();

    // The group re-forms (a rebalance after the coordinator moved): nothing of the old generation is owed any more.
    state.resetGeneration();
    expect([state.backingOff, state.parkedForMs()]).toEqual([false, 0]);
    await vi.advanceTimersByTimeAsync(0);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
    expect(ctl.c.seek).not.toHaveBeenCalled();
    // The old resume timer was replaced, not added to.
    await vi.advanceTimersByTimeAsync(120_000);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
  });

  it('the delivery gate keeps backing off across a generation (a rebalance says nothing about Temporal)', async () => {
    const { state, ctl, gates } = setup();
    state.beginBatch(new AbortController());
    releases.push(gates.deliver.release);
    await gates.deliver.fail();
    state.endBatch();
    const remaining = gates.deliver.gate.remainingMs();
    state.resetGeneration();
    expect(state.backingOff).toBe(true);
    await vi.advanceTimersByTimeAsync(remaining - 1);
    expect(ctl.c.resume).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
  });
});

/** A fetched batch of `offsets` whose commits fail while `failCommits` is true. */
function fakeBatch(offsets: number[], state: { failCommits: boolean; commits: string[] }): PartitionBatch {
  return {
    topic: 't',
    partition: PARTITION,
    records: offsets.map((o) => ({
      key: null,
      value: Buffer.from('{}'),
      offset: String(o),
      timestamp: String(1_000 + o),
    })),
    resolve: () => {},
    async commit(nextOffset) {
      if (state.failCommits) throw new Error('The coordinator is not available');
      state.commits.push(nextOffset);
    },
    heartbeat: () => Promise.resolve(),
    isCurrent: () => true,
  };
}

describe('PartitionRun: a commit owed after a failure', () => {
  it('an idle partition that resumes owing a commit is rewound to its last finished record, and the batch that brings it back commits without processing it again', async () => {
    const { state, ctl } = setup();
    const processed: string[] = [];
    const opts: BatchRunOptions = {
      lanes: 2,
      maxInFlight: 10,
      commitIntervalMs: 60_000,
      heartbeatIntervalMs: 3_000,
      stopping: new AbortController().signal,
      process: async (r: RecordInPartition) => {
        processed.push(r.record.offset);
        return 'accepted';
      },
      log: createLogger('silent'),
    };
    const kafka = { failCommits: true, commits: [] as string[] };

    // Records 10–12 are handed over, but Kafka is down: the batch's final commit fails, the partition parks.
    await state.runBatch(fakeBatch([10, 11, 12], kafka), opts);
    expect([...processed].sort()).toEqual(['10', '11', '12']);
    expect(kafka.commits).toEqual([]);
    expect(state.owedCommit()).toBe('13');
    expect(state.backingOff).toBe(true);
    expect(ctl.calls).toEqual([`pause ${PARTITION}`]);

    // Kafka is back; nothing new arrives. Once the commit gate lets its probe through, the partition is rewound to
    // its last finished record before it is resumed.
    kafka.failCommits = false;
    await vi.advanceTimersByTimeAsync(state.gates.commit.remainingMs());
    expect(ctl.calls).toEqual([`pause ${PARTITION}`, `seek ${PARTITION} 12`, `resume ${PARTITION}`]);

    // The refetched record is skipped; the newer one is processed; the batch commits past both.
    await state.runBatch(fakeBatch([12, 13], kafka), opts);
    expect([...processed].sort()).toEqual(['10', '11', '12', '13']);
    expect(kafka.commits).toEqual(['14']);
    expect(state.owedCommit()).toBeUndefined();
    expect(state.backingOff).toBe(false);
    expect(state.parkedForMs()).toBe(0);
  });

  it('owes nothing once the commit went through, nor in a new generation: resuming then seeks nothing', async () => {
    const { state, ctl } = setup();
    state.tracker.begin('10', 1);
    state.tracker.finish('10');
    expect(state.owedCommit()).toBe('11');
    state.committed = '11';
    expect(state.owedCommit()).toBeUndefined();
    state.tracker.begin('11', 2);
    state.tracker.finish('11');
    state.resetGeneration();
    expect(state.owedCommit()).toBeUndefined();
    state.park();
    state.endBatch();
    await vi.advanceTimersByTimeAsync(0);
    expect(ctl.calls).toEqual([`pause ${PARTITION}`, `resume ${PARTITION}`]);
  });
});
