/**
 * One partition's state with real backoff gates, on fake timers (Date included): a batch is read into the window and
 * its handler returns at once; a full window pauses fetching until records finish; parking pauses the partition,
 * winds the window down and resumes it, from its oldest unfinished record, when the slowest gate lets its probe
 * through; a commit owed after a failure is made without a new batch; a join forgets the window. The partition's
 * runs on Kafka are covered on the real stack (rebalance, partition-isolation, outage and tenant-shares tests).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  Abandoned,
  BackoffGate,
  DEFAULT_TRANSIENT_RETRY,
  type TransientRetry,
} from '../../../../src/roles/bridge/backoff-gate.js';
import type { PartitionControl, PartitionRunOptions } from '../../../../src/roles/bridge/partition-contract.js';
import { PartitionRun } from '../../../../src/roles/bridge/partition-run.js';
import { DependencyUnavailableError } from '../../../../src/base/errors.js';
import type { PartitionBatch } from '../../../../src/adapters/kafka/consumer-supervisor.js';
import { createLogger } from '../../../../src/base/log.js';

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

/** Records whose processing the test settles: each waits until `finish(offset)` or its signal aborts (Abandoned). */
function records() {
  const running = new Map<string, { resolve: () => void }>();
  const processed: string[] = [];
  const process: PartitionRunOptions['process'] = (r, ctx) =>
    new Promise((resolve, reject) => {
      processed.push(r.record.offset);
      const abandon = () => {
        running.delete(r.record.offset);
        reject(new Abandoned('abandoned'));
      };
      if (ctx.signal.aborted) return abandon();
      ctx.signal.addEventListener('abort', abandon, { once: true });
      running.set(r.record.offset, { resolve: () => resolve('accepted') });
    });
  return {
    process,
    processed,
    running: () => [...running.keys()],
    async finish(...offsets: number[]) {
      for (const o of offsets) {
        running.get(String(o))!.resolve();
        running.delete(String(o));
      }
      await vi.advanceTimersByTimeAsync(0);
    },
  };
}

function setup(opts: { commitRetry?: TransientRetry; readAhead?: number } = {}) {
  const ctl = control();
  // As in the bridge: any gate backing off parks the partition.
  const park = () => state.park();
  const gates = {
    deliver: gate(DEFAULT_TRANSIENT_RETRY, park),
    deadLetter: gate(DEFAULT_TRANSIENT_RETRY, park),
    commit: gate(opts.commitRetry, park),
  };
  const recs = records();
  const runOptions: PartitionRunOptions = {
    readAhead: { records: opts.readAhead ?? 100, bytes: 1_000_000 },
    commitIntervalMs: 1_000,
    stopping: new AbortController().signal,
    process: recs.process,
    log: createLogger('silent'),
  };
  const state = new PartitionRun(
    PARTITION,
    { deliver: gates.deliver.gate, deadLetter: gates.deadLetter.gate, commit: gates.commit.gate },
    ctl.c,
    runOptions,
  );
  return { state, ctl, gates, recs };
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

/** A fetched batch of `offsets` whose commits fail while `kafka.failCommits` is true. */
function fakeBatch(
  offsets: number[],
  kafka: { failCommits: boolean; commits: string[]; resolved?: string[] },
): PartitionBatch {
  return {
    topic: 't',
    partition: PARTITION,
    records: offsets.map((o) => ({
      key: null,
      value: Buffer.from('{}'),
      offset: String(o),
      timestamp: String(1_000 + o),
    })),
    resolve: (next) => kafka.resolved?.push(next),
    async commit(nextOffset) {
      if (kafka.failCommits) throw new Error('The coordinator is not available');
      kafka.commits.push(nextOffset);
    },
    heartbeat: () => Promise.resolve(),
    isCurrent: () => true,
  };
}

const healthyKafka = () => ({ failCommits: false, commits: [] as string[], resolved: [] as string[] });

describe('PartitionRun: reading ahead across batches', () => {
  it("a batch's handler returns at once; the next batch's records start beside the first's unfinished ones", async () => {
    const { state, recs } = setup();
    const kafka = healthyKafka();
    state.accept(fakeBatch([10, 11], kafka));
    await vi.advanceTimersByTimeAsync(0);
    expect(kafka.resolved).toEqual(['12']);
    state.accept(fakeBatch([12, 13], kafka));
    await vi.advanceTimersByTimeAsync(0);
    expect(recs.running().sort()).toEqual(['10', '11', '12', '13']);
    // A refetch of what was read already is not read twice.
    state.accept(fakeBatch([12, 13, 14], kafka));
    await vi.advanceTimersByTimeAsync(0);
    expect(recs.processed.sort()).toEqual(['10', '11', '12', '13', '14']);
    // Only the contiguous finished prefix is committed.
    await recs.finish(11, 12);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(kafka.commits).toEqual([]);
    await recs.finish(10);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(kafka.commits).toEqual(['13']);
  });

  it('a full window pauses fetching until the oldest records finish, then resumes it', async () => {
    const { state, ctl, recs } = setup({ readAhead: 3 });
    const kafka = healthyKafka();
    state.accept(fakeBatch([10, 11, 12, 13], kafka));
    await vi.advanceTimersByTimeAsync(0);
    expect(recs.running().sort()).toEqual(['10', '11', '12']);
    expect(ctl.calls).toEqual([`pause ${PARTITION}`]);
    await recs.finish(11);
    expect(ctl.calls).toEqual([`pause ${PARTITION}`]);
    await recs.finish(10);
    expect(recs.running().sort()).toEqual(['12', '13']);
    expect(ctl.calls).toEqual([`pause ${PARTITION}`, `resume ${PARTITION}`]);
  });
});

describe('PartitionRun: parking, resuming and generations', () => {
  it('handed over to another member while parked or held, it lifts its pause: the consumer keeps pauses across assignments', async () => {
    // Parked (a gate backing off), then revoked before the probe: the pause must not outlive the run.
    const parked = setup();
    parked.state.accept(fakeBatch([10, 11], healthyKafka()));
    await vi.advanceTimersByTimeAsync(0);
    releases.push(parked.gates.deliver.release);
    await parked.gates.deliver.fail();
    expect(parked.ctl.calls).toEqual([`pause ${PARTITION}`]);
    parked.state.handOver();
    expect(parked.ctl.calls).toEqual([`pause ${PARTITION}`, `resume ${PARTITION}`]);
    // Nothing more once handed over: no resume timer fires later.
    await vi.advanceTimersByTimeAsync(120_000);
    expect(parked.ctl.calls).toEqual([`pause ${PARTITION}`, `resume ${PARTITION}`]);

    // Held (its window full), then revoked.
    const held = setup({ readAhead: 2 });
    held.state.accept(fakeBatch([10, 11, 12], healthyKafka()));
    await vi.advanceTimersByTimeAsync(0);
    expect(held.ctl.calls).toEqual([`pause ${PARTITION}`]);
    held.state.handOver();
    expect(held.ctl.calls).toEqual([`pause ${PARTITION}`, `resume ${PARTITION}`]);

    // Neither: nothing to lift.
    const flowing = setup();
    flowing.state.accept(fakeBatch([10], healthyKafka()));
    await vi.advanceTimersByTimeAsync(0);
    flowing.state.handOver();
    expect(flowing.ctl.calls).toEqual([]);
  });

  it('parking pauses the partition once, however often it is parked, and abandons the running records', async () => {
    const { state, ctl, recs } = setup();
    state.accept(fakeBatch([10, 11], healthyKafka()));
    await vi.advanceTimersByTimeAsync(0);
    state.park();
    state.park();
    state.park();
    await vi.advanceTimersByTimeAsync(0);
    expect(ctl.c.pause).toHaveBeenCalledTimes(1);
    expect(ctl.c.pause).toHaveBeenCalledWith(PARTITION);
    expect(recs.running()).toEqual([]);
  });

  it('a parked partition is resumed from its oldest unfinished record, the finished prefix committed first', async () => {
    const { state, ctl, recs } = setup();
    const kafka = healthyKafka();
    state.accept(fakeBatch([10, 11, 12], kafka));
    await vi.advanceTimersByTimeAsync(0);
    await recs.finish(10, 12);
    state.park();
    await vi.advanceTimersByTimeAsync(0);
    expect(kafka.commits).toEqual(['11']);
    expect(ctl.calls).toEqual([`pause ${PARTITION}`, `seek ${PARTITION} 11`, `resume ${PARTITION}`]);
    // A batch fetched meanwhile while parked would have been ignored; the refetch from 11 is read again.
    state.accept(fakeBatch([11, 12], kafka));
    await vi.advanceTimersByTimeAsync(0);
    expect(recs.running().sort()).toEqual(['11', '12']);
  });

  it('a gate closing parks the partition through its backoff event, and the partition reports backing off', async () => {
    const { state, ctl, gates } = setup();
    state.accept(fakeBatch([10], healthyKafka()));
    expect(state.backingOff).toBe(false);
    releases.push(gates.deliver.release);
    await gates.deliver.fail();
    expect(state.backingOff).toBe(true);
    releases.push(gates.commit.release);
    await gates.commit.fail();
    expect(ctl.c.pause).toHaveBeenCalledTimes(1);
  });

  it('a batch handed in while parked is not read: its records are refetched on resume', async () => {
    const { state, recs, gates } = setup();
    releases.push(gates.deliver.release);
    await gates.deliver.fail();
    state.accept(fakeBatch([10], healthyKafka()));
    await vi.advanceTimersByTimeAsync(0);
    expect(recs.processed).toEqual([]);
  });

  it('a parked partition resumes exactly when the gate lets its probe through', async () => {
    const { ctl, gates } = setup();
    const delay = await gates.deliver.fail();
    // The failing caller gives up: nothing probes the gate before the partition resumes.
    await gates.deliver.release();
    await vi.advanceTimersByTimeAsync(30);
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
    const { ctl, gates } = setup({ commitRetry: { initialDelayMs: 4000, maxDelayMs: 30_000 } });
    const fast = await gates.deliver.fail();
    const slow = await gates.commit.fail();
    await gates.deliver.release();
    await gates.commit.release();
    expect(slow).toBeGreaterThan(fast);
    await vi.advanceTimersByTimeAsync(fast);
    expect(ctl.c.resume).not.toHaveBeenCalled();
    const left = gates.commit.gate.remainingMs();
    await vi.advanceTimersByTimeAsync(left - 1);
    expect(ctl.c.resume).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
  });

  it('a partition parked by hand with healthy gates is resumed on the next tick, and can be parked again', async () => {
    const { state, ctl } = setup();
    for (let i = 1; i <= 3; i += 1) {
      state.park();
      await vi.advanceTimersByTimeAsync(0);
      expect(ctl.c.pause).toHaveBeenCalledTimes(i);
      expect(ctl.c.resume).toHaveBeenCalledTimes(i);
    }
  });

  it('dispose() cancels a pending resume, and with nothing pending is harmless', async () => {
    const { state, ctl, gates } = setup();
    state.dispose();
    releases.push(gates.deliver.release);
    await gates.deliver.fail();
    state.dispose();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ctl.c.resume).not.toHaveBeenCalled();
  });

  it('resetGeneration() forgets the window, the tracked offsets and the committed offset of the old generation', async () => {
    const { state, recs } = setup();
    const kafka = healthyKafka();
    state.accept(fakeBatch([10, 11], kafka));
    await vi.advanceTimersByTimeAsync(0);
    await recs.finish(10);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(state.committed).toBe('11');

    state.resetGeneration();
    expect(state.committed).toBeUndefined();
    expect(state.tracker.commitPosition()).toBeUndefined();
    expect([...state.unfinished()]).toEqual([]);
    // The old generation's running record was abandoned; nothing of it is committed any more.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(kafka.commits).toEqual(['11']);
    // Offsets below the old commit position are read again (they may come back from another member's position).
    state.accept(fakeBatch([5], kafka));
    await vi.advanceTimersByTimeAsync(0);
    expect(recs.running()).toEqual(['5']);
  });
});

describe('PartitionRun: a new generation while Kafka refused its writes', () => {
  it('a commit or dead letter that failed in the old generation is forgotten with it: not parked, and resumed now', async () => {
    const { state, ctl, gates } = setup({ commitRetry: { initialDelayMs: 20_000, maxDelayMs: 60_000 } });
    await gates.commit.fail();
    await gates.deadLetter.fail();
    await gates.commit.release();
    await gates.deadLetter.release();
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
    await gates.deliver.fail();
    await gates.deliver.release();
    const remaining = gates.deliver.gate.remainingMs();
    state.resetGeneration();
    expect(state.backingOff).toBe(true);
    await vi.advanceTimersByTimeAsync(remaining - 1);
    expect(ctl.c.resume).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(ctl.c.resume).toHaveBeenCalledTimes(1);
  });
});

describe('PartitionRun: settling for a stop', () => {
  it('while Kafka refuses commits and the partition is parked, a stop settles at once: it waits for no backoff', async () => {
    const { state, recs } = setup();
    const kafka = { failCommits: true, commits: [] as string[], resolved: [] as string[] };
    state.accept(fakeBatch([10, 11, 12], kafka));
    await vi.advanceTimersByTimeAsync(0);
    await recs.finish(10, 11, 12);
    // The committer's attempt fails: the commit gate backs off and the partition parks, its wind-down's commit waiting.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(state.backingOff).toBe(true);
    let settled = false;
    void state.settle().then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(10);
    expect(settled).toBe(true);
    // Nothing was committed: the next owner reads 10–12 again, and the dedupe absorbs them.
    expect(kafka.commits).toEqual([]);
    expect(state.owedCommit()).toBe('13');
  });

  it('with a healthy gate, a stop makes its final commit once, and settles though Kafka refuses it', async () => {
    const { state, recs } = setup();
    const kafka = healthyKafka();
    state.accept(fakeBatch([10, 11, 12], kafka));
    await vi.advanceTimersByTimeAsync(0);
    await recs.finish(10, 11);
    kafka.failCommits = true;
    let settled = false;
    void state.settle().then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(10);
    expect(settled).toBe(true);
    expect(kafka.commits).toEqual([]);
    // Record 12 was running: abandoned by the stop, it is not part of what is owed.
    expect(state.owedCommit()).toBe('12');
  });

  it('with Kafka taking writes, the stop commits the finished prefix', async () => {
    const { state, recs } = setup();
    const kafka = healthyKafka();
    state.accept(fakeBatch([10, 11, 12], kafka));
    await vi.advanceTimersByTimeAsync(0);
    await recs.finish(10, 11);
    await state.settle();
    expect(kafka.commits).toEqual(['12']);
  });
});

describe('PartitionRun: a commit owed after a failure', () => {
  it('an idle partition owing a commit makes it once Kafka takes it, without a new batch or processing anything again', async () => {
    const { state, ctl, recs } = setup();
    const kafka = { failCommits: true, commits: [] as string[], resolved: [] as string[] };

    // Records 10–12 are handed over, but Kafka is down: the commit fails, the partition parks.
    state.accept(fakeBatch([10, 11, 12], kafka));
    await vi.advanceTimersByTimeAsync(0);
    await recs.finish(10, 11, 12);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(kafka.commits).toEqual([]);
    expect(state.owedCommit()).toBe('13');
    expect(state.backingOff).toBe(true);
    expect(ctl.calls[0]).toBe(`pause ${PARTITION}`);

    // Kafka is back; nothing new arrives. The owed commit goes through when the commit gate lets its probe through.
    kafka.failCommits = false;
    await vi.advanceTimersByTimeAsync(state.gates.commit.remainingMs() + 1_000);
    expect(kafka.commits).toEqual(['13']);
    expect(state.owedCommit()).toBeUndefined();
    expect(state.backingOff).toBe(false);
    expect(state.parkedForMs()).toBe(0);
    expect(recs.processed.sort()).toEqual(['10', '11', '12']);
    expect(ctl.calls.at(-1)).toBe(`resume ${PARTITION}`);
  });

  it('owes nothing once the commit went through, nor in a new generation', () => {
    const { state } = setup();
    state.tracker.begin('10', 1);
    state.tracker.finish('10');
    expect(state.owedCommit()).toBe('11');
    state.committed = '11';
    expect(state.owedCommit()).toBeUndefined();
    state.tracker.begin('11', 2);
    state.tracker.finish('11');
    state.resetGeneration();
    expect(state.owedCommit()).toBeUndefined();
  });
});
