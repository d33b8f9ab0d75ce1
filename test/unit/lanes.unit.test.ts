/**
 * Per-order lanes: every record's `run` is settled by the test, one decision at a time; between decisions the
 * test drains all pending promise jobs (one setImmediate turn: nothing here waits on timers or I/O), so what
 * started and what did not is decided by the code under test alone, never by timing.
 */
import { describe, expect, it } from 'vitest';
import { laneFor, runInLanes } from '../../src/bridge/lanes.js';
import { track } from '../support/promises.js';

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

/** `n` order keys that land in `n` different lanes out of `lanes`. */
function keysInDistinctLanes(n: number, lanes: number): string[] {
  const byLane = new Map<number, string>();
  for (let i = 0; byLane.size < n; i += 1) {
    const key = `acme/o-${i}`;
    const lane = laneFor(key, lanes);
    if (!byLane.has(lane)) byLane.set(lane, key);
  }
  return [...byLane.values()];
}

const records = (keys: string[]): Rec[] => keys.map((key, index) => ({ index, key }));

/**
 * Runs `items` through runInLanes with a `run` the test settles, checking the rules at every start:
 * one record per key at a time, a key's records in offset order, no more running than lanes, and no start
 * `maxInFlight` or more records past the oldest unfinished one.
 */
function harness(items: Rec[], opts: { lanes: number; maxInFlight: number; signal?: AbortSignal }) {
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
    lanes: opts.lanes,
    maxInFlight: opts.maxInFlight,
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
      const h = harness(records(keys), { lanes: 8, maxInFlight: 100 });
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
    const h = harness(records(Array(5).fill('acme/o-1')), { lanes: 8, maxInFlight: 100 });
    for (let i = 0; i < 5; i += 1) {
      await settle();
      expect(h.startedIndexes()).toEqual(Array.from({ length: i + 1 }, (_, j) => j));
      h.finish(i);
    }
    await settle();
    expect(h.state.state).toBe('fulfilled');
  });

  it('different orders run side by side: one slow order does not hold up the others', async () => {
    const [slow, a, b, c] = keysInDistinctLanes(4, 4);
    const h = harness(records([slow!, a!, b!, c!, a!, b!, c!, a!]), { lanes: 4, maxInFlight: 100 });
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

  it('never runs more records at once than there are lanes, and does use every lane', async () => {
    for (const lanes of [1, 2, 3, 5]) {
      for (let seed = 1; seed <= 10; seed += 1) {
        const random = prng(seed * 100 + lanes);
        const keys = Array.from({ length: 40 }, (_, i) => `acme/o-${i}`);
        const h = harness(records(keys), { lanes, maxInFlight: 1000 });
        await finishAllRandomly(h, random);
        expect(h.maxConcurrent, `lanes ${lanes} seed ${seed}`).toBeLessThanOrEqual(lanes);
        expect(h.violations).toEqual([]);
      }
      const h = harness(records(keysInDistinctLanes(lanes, lanes)), { lanes, maxInFlight: 1000 });
      await settle();
      expect(h.maxConcurrent).toBe(lanes);
      await finishAllRandomly(h, prng(lanes));
    }
  });

  it('a record waits while it is maxInFlight records past the oldest unfinished one, and starts once that finishes', async () => {
    const [slow, fast] = keysInDistinctLanes(2, 2);
    const h = harness(records([slow!, fast!, fast!, fast!, fast!, fast!]), { lanes: 2, maxInFlight: 3 });
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

  it('with maxInFlight 1 the partition runs strictly one record at a time in offset order, whatever the lanes', async () => {
    const keys = keysInDistinctLanes(4, 4);
    const h = harness(records([...keys, ...keys]), { lanes: 4, maxInFlight: 1 });
    for (let i = 0; i < 8; i += 1) {
      await settle();
      expect(h.running()).toEqual([i]);
      h.finish(i);
    }
    await settle();
    expect(h.state.state).toBe('fulfilled');
  });

  it('the window holds at every start over random keys, lanes, windows and finish orders', async () => {
    for (let seed = 1; seed <= 60; seed += 1) {
      const random = prng(seed);
      const maxInFlight = [1, 2, 3, 5, 8][seed % 5]!;
      const lanes = 1 + (seed % 6);
      const keys = Array.from({ length: 40 }, () => `t/o-${Math.floor(random() * 7)}`);
      const h = harness(records(keys), { lanes, maxInFlight });
      const order = await finishAllRandomly(h, random);
      const label = `seed ${seed} lanes ${lanes} maxInFlight ${maxInFlight}`;
      expect(h.violations, label).toEqual([]);
      expect(h.state.state, label).toBe('fulfilled');
      expect(h.maxConcurrent, label).toBeLessThanOrEqual(Math.min(lanes, maxInFlight));
      // onFinished: once per record, in the order they finished.
      expect(h.finishedReported, label).toEqual(order);
      expect(new Set(h.finishedReported).size, label).toBe(keys.length);
    }
  });

  it('onFinished is called once per finished record, as it finishes, and not for running or abandoned ones', async () => {
    const [a, b] = keysInDistinctLanes(2, 2);
    const h = harness(records([a!, b!, a!, b!]), { lanes: 2, maxInFlight: 10 });
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
    const [a, b] = keysInDistinctLanes(2, 2);
    const h = harness(records([a!, b!, a!, b!, b!]), { lanes: 2, maxInFlight: 10 });
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
    const [a, b] = keysInDistinctLanes(2, 2);
    const h = harness(records([a!, b!, b!, b!]), { lanes: 2, maxInFlight: 2 });
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
    const [a, b, c] = keysInDistinctLanes(3, 3);
    const h = harness(records([a!, b!, c!, a!, b!, c!]), { lanes: 3, maxInFlight: 10 });
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
    const [a, b] = keysInDistinctLanes(2, 2);
    const h = harness(records([a!, b!]), { lanes: 2, maxInFlight: 10 });
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
        lanes: 2,
        maxInFlight: 10,
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
    const [a, b] = keysInDistinctLanes(2, 2);
    const leave = new AbortController();
    const h = harness(records([a!, b!, a!, b!, b!]), { lanes: 2, maxInFlight: 10, signal: leave.signal });
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
    const [a, b] = keysInDistinctLanes(2, 2);
    const leave = new AbortController();
    const h = harness(records([a!, b!, b!]), { lanes: 2, maxInFlight: 2, signal: leave.signal });
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
    const h = harness(records(['a', 'b', 'c']), { lanes: 3, maxInFlight: 3, signal: leave.signal });
    await settle();
    expect(h.started).toEqual([]);
    expect(h.state.state).toBe('fulfilled');
  });

  it('an empty partition returns at once', async () => {
    const h = harness([], { lanes: 4, maxInFlight: 4 });
    await settle();
    expect(h.state.state).toBe('fulfilled');
  });
});

describe('laneFor', () => {
  it('is stable and always an integer lane in [0, lanes)', () => {
    const random = prng(7);
    const keys = [
      '',
      'a',
      'acme/o-1',
      'tenant.with:odd_chars-1/order-99',
      'é\u{1F600}',
      'x'.repeat(10_000),
      ...Array.from({ length: 2000 }, () => `t${Math.floor(random() * 1e9)}/o-${Math.floor(random() * 1e9)}`),
    ];
    const bad: string[] = [];
    for (const lanes of [1, 2, 3, 7, 8, 64]) {
      for (const key of keys) {
        const lane = laneFor(key, lanes);
        if (!Number.isInteger(lane) || lane < 0 || lane >= lanes) bad.push(`${key.slice(0, 20)} → ${lane} of ${lanes}`);
        if (laneFor(key, lanes) !== lane) bad.push(`${key.slice(0, 20)} unstable`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('spreads orders over the lanes', () => {
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 8000; i += 1) counts[laneFor(`acme/o-${i}`, 8)]! += 1;
    for (const n of counts) expect(n).toBeGreaterThan(500);
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
      lanes: 1,
      maxInFlight: opts.maxInFlight,
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

  it('takes neighbours of one key together, in offset order, never past another key or the group limit', async () => {
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

  it('an abandoned group leaves every record of it unfinished and stops the lane', async () => {
    const finished: number[] = [];
    const ran: number[][] = [];
    await runInLanes<Rec>({
      items: records(['a', 'a', 'b']),
      lanes: 1,
      maxInFlight: 100,
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
    expect(ran).toEqual([[0, 1]]);
    expect(finished).toEqual([]);
  });
});
