/**
 * Per-order lanes over the read-ahead window: every record's `run` is settled by the test, one decision at a time; between decisions the
 * test drains all pending promise jobs (one setImmediate turn: nothing here waits on timers or I/O), so what
 * started and what did not is decided by the code under test alone, never by timing.
 */
import { describe, expect, it } from 'vitest';
import { LaneWindow, runInLanes } from '../../../../src/roles/bridge/lanes.js';
import { track } from '../../../support/promises.js';

interface Rec {
  index: number;
  key: string;
}

/** Lets every pending promise job run (a full microtask drain). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A deterministic PRNG (mulberry32), so a failing seed can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` different orders (each has a lane of its own). */
function distinctKeys(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `acme/o-${i}`);
}

const records = (keys: string[]): Rec[] => keys.map((key, index) => ({ index, key }));

/**
 * Runs `items` through runInLanes with a `run` the test settles, checking the rules at every start:
 * one record per key at a time, a key's records in offset order, and no start `maxInFlight` or more records past
 * the oldest unfinished one (the read-ahead's record bound).
 */
function harness(items: Rec[], opts: { maxInFlight: number; signal?: AbortSignal }) {
  const started: { rec: Rec; d: PromiseWithResolvers<boolean>; outcome?: 'finished' | 'abandoned' | 'failed' }[] = [];
  const finishedByTest = new Set<number>();
  const running = new Set<number>();
  const runningKeys = new Set<string>();
  const lastStartedOfKey = new Map<string, number>();
  const finishedReported: number[] = [];
  const violations: string[] = [];
  let maxConcurrent = 0;

  const oldestUnfinished = () => {
    let i = 0;
    while (finishedByTest.has(i)) i += 1;
    return i;
  };

  const done = runInLanes<Rec>({
    items,
    readAhead: { records: opts.maxInFlight },
    keyOf: (r) => r.key,
    signal: opts.signal ?? new AbortController().signal,
    onFinished: (r) => finishedReported.push(r.index),
    run: (rec) => {
      if (runningKeys.has(rec.key)) violations.push(`record ${rec.index} started while another of ${rec.key} ran`);
      const last = lastStartedOfKey.get(rec.key);
      if (last !== undefined && last > rec.index)
        violations.push(`record ${rec.index} of ${rec.key} started after record ${last}`);
      if (rec.index - oldestUnfinished() >= opts.maxInFlight) {
        violations.push(
          `record ${rec.index} started ${rec.index - oldestUnfinished()} past the oldest unfinished (${oldestUnfinished()})`,
        );
      }
      lastStartedOfKey.set(rec.key, rec.index);
      running.add(rec.index);
      runningKeys.add(rec.key);
      maxConcurrent = Math.max(maxConcurrent, running.size);
      const d = Promise.withResolvers<boolean>();
      started.push({ rec, d });
      return d.promise;
    },
  });
  const state = track(done);

  const entry = (index: number) => {
    const e = started.find((s) => s.rec.index === index);
    if (!e) throw new Error(`record ${index} has not started`);
    if (e.outcome) throw new Error(`record ${index} already settled`);
    running.delete(index);
    runningKeys.delete(e.rec.key);
    return e;
  };
  return {
    done,
    state,
    started,
    finishedReported,
    violations,
    get maxConcurrent() {
      return maxConcurrent;
    },
    /** Indexes in the order they started. */
    startOrder: () => started.map((s) => s.rec.index),
    /** Indexes started so far, ascending (lanes start in no promised order relative to each other). */
    startedIndexes: () => started.map((s) => s.rec.index).sort((x, y) => x - y),
    running: () => started.filter((s) => !s.outcome).map((s) => s.rec.index),
    finish(index: number) {
      const e = entry(index);
      e.outcome = 'finished';
      finishedByTest.add(index);
      e.d.resolve(true);
    },
    abandon(index: number) {
      const e = entry(index);
      e.outcome = 'abandoned';
      e.d.resolve(false);
    },
    fail(index: number, error: unknown) {
      const e = entry(index);
      e.outcome = 'failed';
      e.d.reject(error);
    },
  };
}

/** Finishes running records in a random order until runInLanes returns; returns the finish order. */
async function finishAllRandomly(h: ReturnType<typeof harness>, random: () => number): Promise<number[]> {
  const order: number[] = [];
  for (;;) {
    await settle();
    if (h.state.state !== 'pending') return order;
    const running = h.running();
    if (running.length === 0)
      throw new Error(`runInLanes is stuck: nothing running, started ${h.startedIndexes().join(',')}`);
    const pick = running[Math.floor(random() * running.length)]!;
    order.push(pick);
    h.finish(pick);
  }
}

describe('runInLanes', () => {
  it("one order's records run one at a time, in offset order, whatever order the others finish in", async () => {
    for (let seed = 1; seed <= 30; seed += 1) {
      const random = prng(seed);
      const keys = Array.from({ length: 30 }, () => `acme/o-${Math.floor(random() * 4)}`);
      const h = harness(records(keys), { maxInFlight: 100 });
      await finishAllRandomly(h, random);
      expect(h.state.state, `seed ${seed}`).toBe('fulfilled');
      expect(h.violations, `seed ${seed}`).toEqual([]);
      for (const key of new Set(keys)) {
        const starts = h.startOrder().filter((i) => keys[i] === key);
        expect(starts, `seed ${seed} key ${key}`).toEqual(keys.flatMap((k, i) => (k === key ? [i] : [])));
      }
    }
  });

  it('a single order never overlaps itself: each record starts only after the one before it finished', async () => {
    const h = harness(records(Array(5).fill('acme/o-1')), { maxInFlight: 100 });
    for (let i = 0; i < 5; i += 1) {
      await settle();
      expect(h.startedIndexes()).toEqual(Array.from({ length: i + 1 }, (_, j) => j));
      h.finish(i);
    }
    await settle();
    expect(h.state.state).toBe('fulfilled');
  });

  it('different orders run side by side: one slow order does not hold up the others', async () => {
    const [slow, a, b, c] = distinctKeys(4);
    const h = harness(records([slow!, a!, b!, c!, a!, b!, c!, a!]), { maxInFlight: 100 });
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1, 2, 3]);
    expect(h.maxConcurrent).toBe(4);
    // The others drain completely while the slow one is still running.
    for (const i of [1, 2, 3, 4, 5, 6, 7]) {
      await settle();
      h.finish(i);
    }
    await settle();
    expect(h.startedIndexes()).toHaveLength(8);
    expect(h.state.state).toBe('pending');
    h.finish(0);
    await settle();
    expect(h.state.state).toBe('fulfilled');
    expect(h.violations).toEqual([]);
  });

  it('every order has a lane of its own: all orders within the read-ahead run at once', async () => {
    const h = harness(records(distinctKeys(40)), { maxInFlight: 1000 });
    await settle();
    expect(h.maxConcurrent).toBe(40);
    await finishAllRandomly(h, prng(3));
    expect(h.violations).toEqual([]);
  });

  it('a record waits while it is maxInFlight records past the oldest unfinished one, and starts once that finishes', async () => {
    const [slow, fast] = distinctKeys(2);
    const h = harness(records([slow!, fast!, fast!, fast!, fast!, fast!]), { maxInFlight: 3 });
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1]);
    h.finish(1);
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1, 2]);
    h.finish(2);
    await settle();
    // Record 3 is 3 past the oldest unfinished (0): it must wait, however long record 0 takes.
    expect(h.startedIndexes()).toEqual([0, 1, 2]);
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1, 2]);
    h.finish(0);
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1, 2, 3]);
    for (const i of [3, 4, 5]) {
      h.finish(i);
      await settle();
    }
    expect(h.state.state).toBe('fulfilled');
    expect(h.violations).toEqual([]);
  });

  it('with maxInFlight 1 the partition runs strictly one record at a time in offset order, whatever the keys', async () => {
    const keys = distinctKeys(4);
    const h = harness(records([...keys, ...keys]), { maxInFlight: 1 });
    for (let i = 0; i < 8; i += 1) {
      await settle();
      expect(h.running()).toEqual([i]);
      h.finish(i);
    }
    await settle();
    expect(h.state.state).toBe('fulfilled');
  });

  it('the window holds at every start over random keys, windows and finish orders', async () => {
    for (let seed = 1; seed <= 60; seed += 1) {
      const random = prng(seed);
      const maxInFlight = [1, 2, 3, 5, 8][seed % 5]!;
      const keys = Array.from({ length: 40 }, () => `t/o-${Math.floor(random() * 7)}`);
      const h = harness(records(keys), { maxInFlight });
      const order = await finishAllRandomly(h, random);
      const label = `seed ${seed} maxInFlight ${maxInFlight}`;
      expect(h.violations, label).toEqual([]);
      expect(h.state.state, label).toBe('fulfilled');
      expect(h.maxConcurrent, label).toBeLessThanOrEqual(maxInFlight);
      // onFinished: once per record, in the order they finished.
      expect(h.finishedReported, label).toEqual(order);
      expect(new Set(h.finishedReported).size, label).toBe(keys.length);
    }
  });

  it('onFinished is called once per finished record, as it finishes, and not for running or abandoned ones', async () => {
    const [a, b] = distinctKeys(2);
    const h = harness(records([a!, b!, a!, b!]), { maxInFlight: 10 });
    await settle();
    expect(h.finishedReported).toEqual([]);
    h.finish(1);
    await settle();
    expect(h.finishedReported).toEqual([1]);
    h.finish(3);
    await settle();
    expect(h.finishedReported).toEqual([1, 3]);
    h.abandon(0);
    await settle();
    expect(h.finishedReported).toEqual([1, 3]);
    expect(h.state.state).toBe('fulfilled');
  });

  it('an abandoned record stops its lane and anything new in other lanes; the running ones finish first', async () => {
    const [a, b] = distinctKeys(2);
    const h = harness(records([a!, b!, a!, b!, b!]), { maxInFlight: 10 });
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1]);
    h.abandon(0);
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1]);
    // Record 1 is still running: runInLanes does not return before it settles.
    expect(h.state.state).toBe('pending');
    h.finish(1);
    await settle();
    expect(h.finishedReported).toEqual([1]);
    expect(h.startedIndexes()).toEqual([0, 1]);
    expect(h.state.state).toBe('fulfilled');
  });

  it('an abandoned record also releases a lane that was waiting for the window', async () => {
    const [a, b] = distinctKeys(2);
    const h = harness(records([a!, b!, b!, b!]), { maxInFlight: 2 });
    await settle();
    h.finish(1);
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1]); // record 2 waits for record 0
    h.abandon(0);
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1]);
    expect(h.state.state).toBe('fulfilled');
  });

  it('an error from run is rethrown only after every running record settled, and nothing new starts meanwhile', async () => {
    const [a, b, c] = distinctKeys(3);
    const h = harness(records([a!, b!, c!, a!, b!, c!]), { maxInFlight: 10 });
    await settle();
    const boom = new Error('unexpected');
    h.fail(0, boom);
    await settle();
    expect(h.state.state).toBe('pending');
    h.finish(1);
    await settle();
    expect(h.state.state).toBe('pending');
    h.abandon(2);
    await settle();
    expect(h.state.state).toBe('rejected');
    expect(h.state.error).toBe(boom);
    expect(h.startedIndexes()).toEqual([0, 1, 2]);
    expect(h.finishedReported).toEqual([1]);
    await expect(h.done).rejects.toBe(boom);
  });

  it('the first of several errors is the one rethrown', async () => {
    const [a, b] = distinctKeys(2);
    const h = harness(records([a!, b!]), { maxInFlight: 10 });
    await settle();
    const first = new Error('first');
    h.fail(1, first);
    await settle();
    h.fail(0, new Error('second'));
    await expect(h.done).rejects.toBe(first);
  });

  it('a run that throws synchronously is treated like one that rejects', async () => {
    const boom = new Error('sync');
    const started: number[] = [];
    const items = records(['acme/o-1', 'acme/o-1']);
    await expect(
      runInLanes({
        items,
        readAhead: { records: 10 },
        keyOf: (r) => r.key,
        onFinished: () => {},
        signal: new AbortController().signal,
        run: (r) => {
          started.push(r.index);
          throw boom;
        },
      }),
    ).rejects.toBe(boom);
    expect(started).toEqual([0]);
  });

  it('aborting the signal starts nothing more; running records finish and runInLanes returns', async () => {
    const [a, b] = distinctKeys(2);
    const leave = new AbortController();
    const h = harness(records([a!, b!, a!, b!, b!]), { maxInFlight: 10, signal: leave.signal });
    await settle();
    h.finish(1);
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1, 3]);
    leave.abort();
    await settle();
    expect(h.state.state).toBe('pending');
    h.finish(3);
    await settle();
    expect(h.state.state).toBe('pending');
    h.finish(0);
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1, 3]);
    expect(h.finishedReported).toEqual([1, 3, 0]);
    expect(h.state.state).toBe('fulfilled');
  });

  it('aborting releases a lane that was waiting for the window', async () => {
    const [a, b] = distinctKeys(2);
    const leave = new AbortController();
    const h = harness(records([a!, b!, b!]), { maxInFlight: 2, signal: leave.signal });
    await settle();
    h.finish(1);
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1]);
    leave.abort();
    await settle();
    // Record 0 is abandoned by its own run (it saw the same signal).
    h.abandon(0);
    await settle();
    expect(h.startedIndexes()).toEqual([0, 1]);
    expect(h.state.state).toBe('fulfilled');
  });

  it('an already aborted signal starts nothing', async () => {
    const leave = new AbortController();
    leave.abort();
    const h = harness(records(['a', 'b', 'c']), { maxInFlight: 3, signal: leave.signal });
    await settle();
    expect(h.started).toEqual([]);
    expect(h.state.state).toBe('fulfilled');
  });

  it('an empty partition returns at once', async () => {
    const h = harness([], { maxInFlight: 4 });
    await settle();
    expect(h.state.state).toBe('fulfilled');
  });
});

describe('groups of one order (coalescing)', () => {
  /** Runs `keys` in one lane with `group` limits; every record finishes at once. The groups `run` was handed. */
  async function groups(
    keys: string[],
    opts: { max: number; maxInFlight: number; fits?: (g: readonly Rec[], next: Rec) => boolean },
  ) {
    const runs: number[][] = [];
    const finished: number[] = [];
    await runInLanes<Rec>({
      items: records(keys),
      readAhead: { records: opts.maxInFlight },
      keyOf: (r) => r.key,
      signal: new AbortController().signal,
      run: async (r) => {
        runs.push([r.index]);
        return true;
      },
      onFinished: (r) => finished.push(r.index),
      group: {
        max: opts.max,
        fits: opts.fits ?? (() => true),
        run: async (rs) => {
          runs.push(rs.map((r) => r.index));
          return true;
        },
      },
    });
    return { runs, finished };
  }

  it("takes one key's queued records together, in offset order, never past the group limit", async () => {
    const { runs, finished } = await groups(['a', 'a', 'a', 'b', 'a', 'a', 'a', 'a', 'a'], {
      max: 3,
      maxInFlight: 100,
    });
    expect(runs).toEqual([[0, 1, 2], [3], [4, 5, 6], [7, 8]]);
    expect(finished).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('a group never reaches past the window, and stops where `fits` says the next record would not fit', async () => {
    expect((await groups(['a', 'a', 'a', 'a', 'a'], { max: 10, maxInFlight: 2 })).runs).toEqual([[0, 1], [2, 3], [4]]);
    expect(
      (await groups(['a', 'a', 'a', 'a', 'a'], { max: 10, maxInFlight: 100, fits: (g) => g.length < 2 })).runs,
    ).toEqual([[0, 1], [2, 3], [4]]);
  });

  it('an abandoned group leaves every record of it unfinished and stops the window', async () => {
    const finished: number[] = [];
    const ran: number[][] = [];
    await runInLanes<Rec>({
      items: records(['a', 'a', 'b']),
      readAhead: { records: 100 },
      keyOf: (r) => r.key,
      signal: new AbortController().signal,
      run: async (r) => {
        ran.push([r.index]);
        return true;
      },
      onFinished: (r) => finished.push(r.index),
      group: {
        max: 10,
        fits: () => true,
        run: async (rs) => {
          ran.push(rs.map((r) => r.index));
          return false;
        },
      },
    });
    // b's record, another order's, had started beside the group and finishes; nothing starts after the abandon.
    expect(ran).toEqual([[0, 1], [2]]);
    expect(finished).toEqual([2]);
  });
});

describe('the read-ahead window across fetches', () => {
  /** A window whose runs the test settles; records are `{ index, key, bytes }`. */
  function window(opts: { records: number; bytes: number; gate?: (r: Rec & { bytes: number }) => boolean }) {
    const runs = new Map<number, PromiseWithResolvers<boolean>>();
    const finished: number[] = [];
    const failures: unknown[] = [];
    const w = new LaneWindow<Rec & { bytes: number }>({
      keyOf: (r) => r.key,
      bytesOf: (r) => r.bytes,
      readAhead: { records: opts.records, bytes: opts.bytes },
      ...(opts.gate ? { gate: opts.gate } : {}),
      run: (r) => {
        const d = Promise.withResolvers<boolean>();
        runs.set(r.index, d);
        return d.promise;
      },
      onFinished: (r) => finished.push(r.index),
      onFailure: (e) => failures.push(e),
    });
    let next = 0;
    return {
      w,
      runs,
      finished,
      failures,
      /** Appends records of these keys and sizes, as one fetch. */
      fetch: (recs: [key: string, bytes: number][]) =>
        w.append(recs.map(([key, bytes]) => ({ index: next++, key, bytes }))),
      started: () => [...runs.keys()].sort((a, b) => a - b),
      finish: async (i: number) => {
        runs.get(i)!.resolve(true);
        await settle();
      },
    };
  }

  it('records of a later fetch start beside a backlog, within the record bound, and are held past it', async () => {
    const h = window({ records: 4, bytes: 1_000_000 });
    h.fetch([
      ['slow', 1],
      ['slow', 1],
    ]);
    h.fetch([
      ['a', 1],
      ['b', 1],
      ['c', 1],
    ]);
    await settle();
    // 0 runs (1 waits behind it in its lane); 2 and 3 are within 4 of the oldest unfinished (0); 4 is not.
    expect(h.started()).toEqual([0, 2, 3]);
    expect(h.w.full).toBe(true);
    expect(h.w.span).toBe(5);
    await h.finish(0);
    expect(h.started()).toEqual([0, 1, 2, 3, 4]);
    // Four from the oldest unfinished (1) through the last read: as many as it may hold, until 1 finishes.
    expect(h.w.full).toBe(true);
    await h.finish(2);
    expect(h.w.full).toBe(true);
    await h.finish(1);
    expect(h.w.full).toBe(false);
  });

  it('the byte bound holds a record whose bytes from the oldest unfinished through it exceed it; the oldest always starts', async () => {
    const h = window({ records: 100, bytes: 10 });
    h.fetch([
      ['big', 50],
      ['a', 4],
      ['b', 4],
    ]);
    await settle();
    // The oldest starts whatever its size; a and b are 54 and 58 bytes from it, past 10.
    expect(h.started()).toEqual([0]);
    expect(h.w.full).toBe(true);
    await h.finish(0);
    expect(h.started()).toEqual([0, 1, 2]);
    h.fetch([['c', 4]]);
    await settle();
    // c would make 12 bytes from the oldest unfinished (a): it waits for a.
    expect(h.started()).toEqual([0, 1, 2]);
    await h.finish(1);
    expect(h.started()).toEqual([0, 1, 2, 3]);
  });

  it('the gate is part of the one predicate: a record it holds starts when it lets it and recheck() is called', async () => {
    let open = false;
    const h = window({ records: 100, bytes: 1_000_000, gate: (r) => open || r.key !== 'held' });
    h.fetch([
      ['held', 1],
      ['free', 1],
      ['held', 1],
    ]);
    await settle();
    expect(h.started()).toEqual([1]);
    expect(h.w.mayStart(0)).toBe(false);
    open = true;
    h.w.recheck();
    await settle();
    expect(h.started()).toEqual([0, 1]);
    await h.finish(0);
    // The held key's second record joins its lane's turn now that the gate lets it.
    expect(h.started()).toEqual([0, 1, 2]);
  });

  it('lists what is read and unfinished, oldest first, and an error stops it and is reported once', async () => {
    const h = window({ records: 100, bytes: 1_000_000 });
    h.fetch([
      ['a', 1],
      ['b', 1],
      ['c', 1],
    ]);
    await settle();
    await h.finish(1);
    expect([...h.w.unfinished()].map((r) => r.index)).toEqual([0, 2]);
    h.runs.get(0)!.reject(new Error('bug'));
    h.runs.get(2)!.reject(new Error('another'));
    await settle();
    expect(h.failures).toHaveLength(1);
    expect(h.w.isStopped).toBe(true);
    h.fetch([['d', 1]]);
    await settle();
    expect(h.started()).toEqual([0, 1, 2]);
    await h.w.idle();
  });
});
