/**
 * The partition backoff gate and its delays, on fake timers (Date included): every outcome is decided by the
 * simulated clock and explicitly settled promises, never by real time.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  Abandoned,
  BackoffGate,
  DEFAULT_TRANSIENT_RETRY,
  DelaySequence,
  maxAttemptsWithin,
  sleepOrAbandon,
  type GateEvents,
  type TransientRetry,
} from '../../../../src/roles/bridge/backoff-gate.js';
import { DependencyUnavailableError, MalformedEventError } from '../../../../src/base/errors.js';
import { track } from '../../../support/promises.js';

/** A dependency whose every call is settled by the test; records who called and when (fake clock). */
function dependency() {
  const calls: { caller: string; at: number; d: PromiseWithResolvers<string> }[] = [];
  const work = (caller: string) => () => {
    const d = Promise.withResolvers<string>();
    calls.push({ caller, at: Date.now(), d });
    return d.promise;
  };
  return { calls, work };
}

function recorder() {
  const backoffs: { error: Error; delayMs: number }[] = [];
  const retries: Error[] = [];
  const events: GateEvents = {
    onBackoff: (error, delayMs) => backoffs.push({ error, delayMs }),
    onRetry: (error) => retries.push(error),
  };
  return { backoffs, retries, events };
}

/** Drains every pending promise job (the fake clock does not move). */
const flush = () => vi.advanceTimersByTimeAsync(0);
const advance = (ms: number) => vi.advanceTimersByTimeAsync(ms);

/** The un-jittered step k: min(maxDelay, initialDelay·2^k). */
const ceilOf = (k: number, retry: TransientRetry = DEFAULT_TRANSIENT_RETRY) =>
  Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** k);

const down = () => new DependencyUnavailableError('temporal unreachable');

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('BackoffGate', () => {
  it('a healthy gate runs every call at once, side by side, and hands back its value', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    const signal = new AbortController().signal;
    const runs = ['a', 'b', 'c'].map((c) => track(gate.run(work(c), signal)));
    await flush();
    expect(calls.map((c) => c.caller)).toEqual(['a', 'b', 'c']);
    calls.forEach((c) => c.d.resolve(`done-${c.caller}`));
    await flush();
    expect(runs.map((r) => r.value)).toEqual(['done-a', 'done-b', 'done-c']);
    expect(rec.backoffs).toEqual([]);
    expect(rec.retries).toEqual([]);
    expect(gate.backingOff).toBe(false);
    expect(gate.remainingMs()).toBe(0);
  });

  it('the first transient failure closes the gate: onBackoff once with the delay, and new callers wait it out', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    const signal = new AbortController().signal;
    const a = track(gate.run(work('a'), signal));
    await flush();
    const error = down();
    calls[0]!.d.reject(error);
    await flush();

    expect(rec.backoffs).toHaveLength(1);
    expect(rec.backoffs[0]!.error).toBe(error);
    const delay = rec.backoffs[0]!.delayMs;
    expect(delay).toBeGreaterThanOrEqual(ceilOf(0) / 2);
    expect(delay).toBeLessThanOrEqual(ceilOf(0));
    expect(rec.retries).toEqual([error]);
    expect(gate.backingOff).toBe(true);
    expect(gate.remainingMs()).toBe(delay);
    expect(a.state).toBe('pending');

    const b = track(gate.run(work('b'), signal));
    const c = track(gate.run(work('c'), signal));
    await advance(delay - 1);
    expect(calls).toHaveLength(1);
    expect(gate.remainingMs()).toBe(1);
    expect([a.state, b.state, c.state]).toEqual(['pending', 'pending', 'pending']);
    expect(rec.backoffs).toHaveLength(1);
  });

  it('after the delay exactly one caller probes while the others keep waiting, however long the probe takes', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    const signal = new AbortController().signal;
    const runs = ['a', 'b', 'c', 'd'].map((c) => track(gate.run(work(c), signal)));
    await flush();
    // All four were in flight on a healthy gate; they fail together. Only the first closes the gate: the others
    // join the same wait rather than starting steps of their own.
    for (const c of calls) c.d.reject(down());
    await flush();
    expect(rec.backoffs).toHaveLength(1);
    expect(rec.retries).toHaveLength(4);
    const delay = rec.backoffs[0]!.delayMs;

    await advance(delay);
    expect(calls).toHaveLength(5);
    expect(gate.remainingMs()).toBe(0);
    await advance(10 * 60_000);
    expect(calls).toHaveLength(5);
    expect(runs.every((r) => r.state === 'pending')).toBe(true);
  });

  it('a failed probe starts the next, longer step; still only one probe per step', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    const signal = new AbortController().signal;
    track(gate.run(work('a'), signal));
    track(gate.run(work('b'), signal));
    track(gate.run(work('c'), signal));
    await flush();
    calls[0]!.d.reject(down());
    await flush();

    for (let k = 0; k < 8; k += 1) {
      expect(rec.backoffs).toHaveLength(k + 1);
      const delay = rec.backoffs[k]!.delayMs;
      expect(delay).toBeGreaterThanOrEqual(ceilOf(k) / 2);
      expect(delay).toBeLessThanOrEqual(ceilOf(k));
      if (k > 0) expect(delay).toBeGreaterThan(rec.backoffs[k - 1]!.delayMs);
      const before = calls.length;
      await advance(delay - 1);
      expect(calls).toHaveLength(before);
      await advance(1);
      expect(calls).toHaveLength(before + 1);
      calls[before]!.d.reject(down());
      await flush();
    }
    expect(gate.backingOff).toBe(true);
  });

  it('a successful probe opens the gate for every waiter at once and starts the delays again from the first', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    const signal = new AbortController().signal;
    const runs = ['a', 'b', 'c'].map((c) => track(gate.run(work(c), signal)));
    await flush();
    calls[0]!.d.reject(down());
    calls[1]!.d.reject(down());
    calls[2]!.d.reject(down());
    await flush();
    // Three failed steps: the delay is now at least 400 ms.
    for (let k = 0; k < 3; k += 1) {
      await advance(rec.backoffs[k]!.delayMs);
      calls.at(-1)!.d.reject(down());
      await flush();
    }
    expect(rec.backoffs[3]!.delayMs).toBeGreaterThanOrEqual(ceilOf(3) / 2);

    await advance(rec.backoffs[3]!.delayMs);
    const probe = calls.at(-1)!;
    const probeCount = calls.length;
    probe.d.resolve('up again');
    await flush();
    expect(gate.backingOff).toBe(false);
    expect(gate.remainingMs()).toBe(0);
    // The two callers that were waiting start at once, on the same tick.
    expect(calls).toHaveLength(probeCount + 2);
    expect(new Set(calls.slice(probeCount).map((c) => c.caller))).toEqual(
      new Set(['a', 'b', 'c'].filter((c) => c !== probe.caller)),
    );
    calls.slice(probeCount).forEach((c) => c.d.resolve(`ok-${c.caller}`));
    await flush();
    expect(runs.every((r) => r.state === 'fulfilled')).toBe(true);
    expect(runs.find((_, i) => ['a', 'b', 'c'][i] === probe.caller)!.value).toBe('up again');

    // The next outage starts again from the first step.
    track(gate.run(work('e'), signal));
    await flush();
    calls.at(-1)!.d.reject(down());
    await flush();
    expect(rec.backoffs).toHaveLength(5);
    expect(rec.backoffs[4]!.delayMs).toBeLessThanOrEqual(ceilOf(0));
  });

  it('a non-transient error is thrown to its caller at once and leaves a healthy gate open', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    const signal = new AbortController().signal;
    for (const error of [new MalformedEventError('bad', 'type'), new Error('bug'), new TypeError('x is undefined')]) {
      const run = track(gate.run(work('a'), signal));
      await flush();
      calls.at(-1)!.d.reject(error);
      await flush();
      expect(run.state).toBe('rejected');
      expect(run.error).toBe(error);
      expect(gate.backingOff).toBe(false);
    }
    expect(calls).toHaveLength(3);
    expect(rec.backoffs).toEqual([]);
    expect(rec.retries).toEqual([]);
    const next = track(gate.run(work('b'), signal));
    await flush();
    expect(calls).toHaveLength(4);
    calls[3]!.d.resolve('fine');
    await flush();
    expect(next.value).toBe('fine');
  });

  it('a probe that fails with a non-transient error is thrown to its caller; the gate stays closed and the next waiter probes', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    const signal = new AbortController().signal;
    const runs = new Map(['a', 'b'].map((c) => [c, track(gate.run(work(c), signal))]));
    await flush();
    calls[0]!.d.reject(down());
    calls[1]!.d.reject(down());
    await flush();
    await advance(rec.backoffs[0]!.delayMs);
    expect(calls).toHaveLength(3);
    const first = calls[2]!;
    const error = new MalformedEventError('bad', 'orderId');
    first.d.reject(error);
    await flush();
    expect(runs.get(first.caller)!.error).toBe(error);
    expect(gate.backingOff).toBe(true);
    expect(rec.backoffs).toHaveLength(1);
    expect(calls).toHaveLength(4);
    expect(calls[3]!.caller).not.toBe(first.caller);
  });

  it('aborting the signal makes waiting callers reject with Abandoned without an attempt, and only those', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    const leave = { a: new AbortController(), b: new AbortController(), c: new AbortController() };
    const a = track(gate.run(work('a'), leave.a.signal));
    await flush();
    calls[0]!.d.reject(down());
    await flush();
    const b = track(gate.run(work('b'), leave.b.signal));
    const c = track(gate.run(work('c'), leave.c.signal));
    await flush();

    // b waits for the delay to pass.
    leave.b.abort();
    await flush();
    expect(b.state).toBe('rejected');
    expect(b.error).toBeInstanceOf(Abandoned);
    expect(calls).toHaveLength(1);

    // After the delay one of a and c probes; the other waits behind the probe and is abandoned from there.
    await advance(rec.backoffs[0]!.delayMs);
    expect(calls).toHaveLength(2);
    const probe = calls[1]!;
    const [probeRun, waiter, waiterLeave] = probe.caller === 'a' ? [a, c, leave.c] : [c, a, leave.a];
    waiterLeave.abort();
    await flush();
    expect(waiter.state).toBe('rejected');
    expect(waiter.error).toBeInstanceOf(Abandoned);
    // The running probe is not abandoned: its work finishes and its value is returned.
    expect(probeRun.state).toBe('pending');
    probe.d.resolve('ok');
    await flush();
    expect(probeRun.value).toBe('ok');
    expect(calls).toHaveLength(2);
  });

  it('a caller whose signal already aborted is abandoned without an attempt, even at a healthy gate', async () => {
    const { calls, work } = dependency();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, recorder().events);
    const leave = new AbortController();
    leave.abort();
    await expect(gate.run(work('a'), leave.signal)).rejects.toBeInstanceOf(Abandoned);
    expect(calls).toHaveLength(0);
  });

  it('firstAttempt makes exactly one attempt with an aborted signal when the gate is healthy (the final commit)', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    const leave = new AbortController();
    leave.abort();

    const ok = track(gate.run(work('commit'), leave.signal, { firstAttempt: true }));
    await flush();
    expect(calls).toHaveLength(1);
    calls[0]!.d.resolve('committed');
    await flush();
    expect(ok.value).toBe('committed');

    // When that one attempt fails transiently there is no second one: the caller is abandoned.
    const failed = track(gate.run(work('commit'), leave.signal, { firstAttempt: true }));
    await flush();
    expect(calls).toHaveLength(2);
    calls[1]!.d.reject(down());
    await flush();
    expect(failed.state).toBe('rejected');
    expect(failed.error).toBeInstanceOf(Abandoned);
    await advance(60_000);
    expect(calls).toHaveLength(2);
    expect(gate.backingOff).toBe(true);
  });

  it('firstAttempt does not bypass a gate that is backing off', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    track(gate.run(work('a'), new AbortController().signal));
    await flush();
    calls[0]!.d.reject(down());
    await flush();
    expect(gate.backingOff).toBe(true);

    const aborted = new AbortController();
    aborted.abort();
    await expect(gate.run(work('final'), aborted.signal, { firstAttempt: true })).rejects.toBeInstanceOf(Abandoned);
    expect(calls).toHaveLength(1);

    // With a live signal it waits its turn like anyone else.
    const live = track(gate.run(work('live'), new AbortController().signal, { firstAttempt: true }));
    await flush();
    expect(calls).toHaveLength(1);
    expect(live.state).toBe('pending');
  });

  it('backingOff and remainingMs() follow the state: healthy, closed and counting down, probe due, healthy again', async () => {
    const { calls, work } = dependency();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, recorder().events);
    const rec = recorder();
    const gate2 = new BackoffGate({ initialDelayMs: 1000, maxDelayMs: 1000 }, rec.events);
    expect([gate.backingOff, gate.remainingMs()]).toEqual([false, 0]);
    expect(gate.remainingMs(Date.now() - 1_000_000)).toBe(0);

    track(gate2.run(work('a'), new AbortController().signal));
    await flush();
    calls[0]!.d.reject(down());
    await flush();
    const delay = rec.backoffs[0]!.delayMs;
    expect(delay).toBeGreaterThanOrEqual(500);
    expect(delay).toBeLessThanOrEqual(1000);
    expect(gate2.backingOff).toBe(true);
    expect(gate2.remainingMs()).toBe(delay);
    expect(gate2.remainingMs(Date.now() + 100)).toBe(delay - 100);
    expect(gate2.remainingMs(Date.now() + delay + 5)).toBe(0);
    await advance(200);
    expect(gate2.remainingMs()).toBe(delay - 200);
    await advance(delay - 200);
    // The probe is due (and running): nothing left to wait, but the dependency is not known to be up yet.
    expect(gate2.remainingMs()).toBe(0);
    expect(gate2.backingOff).toBe(true);
    calls[1]!.d.resolve('ok');
    await flush();
    expect([gate2.backingOff, gate2.remainingMs()]).toEqual([false, 0]);
  });
});

describe('BackoffGate.forget', () => {
  it('a failing gate nothing calls any more is healthy after forget(); a waiter starts at once, and the next failure starts again from the first delay', async () => {
    const { calls, work } = dependency();
    const rec = recorder();
    const gate = new BackoffGate({ initialDelayMs: 10_000, maxDelayMs: 60_000 }, rec.events);
    track(gate.run(work('a'), new AbortController().signal));
    await flush();
    calls[0]!.d.reject(down());
    await flush();
    await advance(15_000);
    calls[1]!.d.reject(down());
    await flush();
    expect(rec.backoffs).toHaveLength(2);
    expect(rec.backoffs[1]!.delayMs).toBeGreaterThanOrEqual(10_000);
    await advance(1_000);
    expect(gate.failingForMs()).toBeGreaterThan(15_000);

    gate.forget();
    expect([gate.backingOff, gate.remainingMs(), gate.failingForMs()]).toEqual([false, 0, 0]);
    // The caller that waited out the backoff starts now, long before the delay it was given.
    await flush();
    expect(calls).toHaveLength(3);
    calls[2]!.d.reject(down());
    await flush();
    expect(rec.backoffs).toHaveLength(3);
    expect(rec.backoffs[2]!.delayMs).toBeLessThanOrEqual(ceilOf(0, { initialDelayMs: 10_000, maxDelayMs: 60_000 }));
    gate.forget();
    calls.length = 0;
    await flush();
    calls[0]!.d.resolve('ok');
    await flush();
  });

  it('forget() on a healthy gate changes nothing', async () => {
    const rec = recorder();
    const gate = new BackoffGate(DEFAULT_TRANSIENT_RETRY, rec.events);
    gate.forget();
    expect([gate.backingOff, gate.remainingMs(), gate.failingForMs()]).toEqual([false, 0, 0]);
    await expect(gate.run(() => Promise.resolve(7), new AbortController().signal)).resolves.toBe(7);
  });
});

describe('DelaySequence', () => {
  const custom: TransientRetry = { initialDelayMs: 150, maxDelayMs: 5000 };

  it.each([
    ['the defaults (200 ms doubling to 30 s)', DEFAULT_TRANSIENT_RETRY],
    ['a cap that is not a doubling of the first delay', custom],
  ])('with %s each delay k lies within half and all of min(maxDelay, initial·2^k)', (_name, retry) => {
    const outside: string[] = [];
    for (let run = 0; run < 200; run += 1) {
      const seq = new DelaySequence(retry);
      for (let k = 0; k < 16; k += 1) {
        const d = seq.next();
        const ceil = ceilOf(k, retry);
        if (!Number.isInteger(d) || d < Math.floor(ceil / 2) || d > ceil)
          outside.push(`step ${k}: ${d} outside [${ceil / 2}, ${ceil}]`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('reaches both ends of the half-jitter range', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const low = new DelaySequence(custom);
    expect(Array.from({ length: 8 }, () => low.next())).toEqual([75, 150, 300, 600, 1200, 2400, 2500, 2500]);
    vi.spyOn(Math, 'random').mockReturnValue(1 - Number.EPSILON);
    const high = new DelaySequence(custom);
    const ceilings = [150, 300, 600, 1200, 2400, 4800, 5000, 5000];
    const highs = Array.from({ length: 8 }, () => high.next());
    highs.forEach((d, k) => {
      expect(d).toBeLessThanOrEqual(ceilings[k]!);
      expect(d).toBeGreaterThanOrEqual(ceilings[k]! - 1);
    });
  });

  it('spreads instances that fail together', () => {
    const firsts = new Set(Array.from({ length: 50 }, () => new DelaySequence(DEFAULT_TRANSIENT_RETRY).next()));
    expect(firsts.size).toBeGreaterThan(10);
  });

  it('reset() starts again from the first delay', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const seq = new DelaySequence(DEFAULT_TRANSIENT_RETRY);
    for (let i = 0; i < 6; i += 1) seq.next();
    expect(seq.next()).toBe(ceilOf(6) / 2);
    seq.reset();
    expect(seq.next()).toBe(100);
    expect(seq.next()).toBe(200);
    seq.reset();
    seq.reset();
    expect(seq.next()).toBe(100);
  });
});

describe('maxAttemptsWithin', () => {
  it('counts the first attempt and one more after each floor delay that fits the window', () => {
    const r = DEFAULT_TRANSIENT_RETRY; // floors: 100, 200, 400, 800, ...
    expect(maxAttemptsWithin(0, r)).toBe(1);
    expect(maxAttemptsWithin(99, r)).toBe(1);
    expect(maxAttemptsWithin(100, r)).toBe(2);
    expect(maxAttemptsWithin(299, r)).toBe(2);
    expect(maxAttemptsWithin(300, r)).toBe(3);
    expect(maxAttemptsWithin(700, r)).toBe(4);
    // Past the cap every step's floor is 15 s: 100+200+…+12800 = 25500 ms reaches 15000-floor steps after it.
    expect(maxAttemptsWithin(25_500, r)).toBe(9);
    expect(maxAttemptsWithin(25_500 + 15_000, r)).toBe(10);
    expect(maxAttemptsWithin(25_500 + 15_000 * 4, r)).toBe(13);
  });

  it('grows without bound (no attempt limit) and stays finite for very long windows', () => {
    const day = maxAttemptsWithin(86_400_000, DEFAULT_TRANSIENT_RETRY);
    expect(day).toBeGreaterThan(maxAttemptsWithin(3_600_000, DEFAULT_TRANSIENT_RETRY));
    expect(Number.isFinite(day)).toBe(true);
  });

  /** Drives a gate against a dependency that is always down for `windowMs` of simulated time; attempt times. */
  async function simulate(retry: TransientRetry, windowMs: number, callers: number): Promise<number[]> {
    const gate = new BackoffGate(retry, recorder().events);
    const leave = new AbortController();
    const t0 = Date.now();
    const attempts: number[] = [];
    const work = () => {
      attempts.push(Date.now() - t0);
      return Promise.reject(down());
    };
    const runs = [track(gate.run(work, leave.signal))];
    await flush();
    // Further callers (other records of the partition) arrive while the gate is closed.
    for (let i = 1; i < callers; i += 1) runs.push(track(gate.run(work, leave.signal)));
    await advance(windowMs + retry.maxDelayMs);
    leave.abort();
    await flush();
    expect(runs.every((r) => r.error instanceof Abandoned)).toBe(true);
    return attempts.filter((t) => t <= windowMs);
  }

  it('is exact for a gate whose every delay lands on its floor', async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    for (const windowMs of [0, 100, 1_000, 60_000, 5 * 60_000]) {
      const attempts = await simulate(DEFAULT_TRANSIENT_RETRY, windowMs, 1);
      expect(attempts).toHaveLength(maxAttemptsWithin(windowMs, DEFAULT_TRANSIENT_RETRY));
    }
  });

  it('bounds the attempts of a jittered gate shared by many callers over a simulated outage', async () => {
    const retries: TransientRetry[] = [DEFAULT_TRANSIENT_RETRY, { initialDelayMs: 150, maxDelayMs: 5000 }];
    for (const retry of retries) {
      for (let trial = 0; trial < 10; trial += 1) {
        const windowMs = 2 * 60_000 + trial * 7_919;
        const attempts = await simulate(retry, windowMs, 5);
        expect(attempts.length).toBeGreaterThan(1);
        expect(attempts.length).toBeLessThanOrEqual(maxAttemptsWithin(windowMs, retry));
      }
    }
  });
});

describe('sleepOrAbandon', () => {
  it('resolves after the given time, not before', async () => {
    const s = track(sleepOrAbandon(500));
    await advance(499);
    expect(s.state).toBe('pending');
    await advance(1);
    expect(s.state).toBe('fulfilled');
  });

  it('rejects with Abandoned when the signal aborts first, or has already aborted', async () => {
    const leave = new AbortController();
    const s = track(sleepOrAbandon(10_000, leave.signal));
    await advance(100);
    leave.abort();
    await flush();
    expect(s.state).toBe('rejected');
    expect(s.error).toBeInstanceOf(Abandoned);
    expect((s.error as Error).name).toBe('Abandoned');
    await expect(sleepOrAbandon(1, leave.signal)).rejects.toBeInstanceOf(Abandoned);
  });

  it('an abort after it resolved changes nothing', async () => {
    const leave = new AbortController();
    const s = track(sleepOrAbandon(10, leave.signal));
    await advance(10);
    leave.abort();
    await flush();
    expect(s.state).toBe('fulfilled');
  });
});
