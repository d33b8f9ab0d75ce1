import { describe, expect, it } from 'vitest';
import { TokenBucket, type Clock } from '../../../src/cli/token-bucket.js';

/** A clock that only moves when someone sleeps on it. */
function fakeClock(): Clock & { t: number; sleeps: number[] } {
  const c = {
    t: 0,
    sleeps: [] as number[],
    now: () => c.t,
    sleep: async (ms: number) => {
      c.sleeps.push(ms);
      c.t += ms;
    },
  };
  return c;
}

describe('token bucket', () => {
  it('paces takes at the rate once the initial burst is spent', async () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(5, 1, clock); // 5/s, no burst beyond one
    const at: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      await bucket.take();
      at.push(clock.t);
    }
    expect(at).toEqual([0, 200, 400, 600, 800, 1000]);
  });

  it('allows a burst up to its capacity, then the rate', async () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(10, 3, clock);
    const at: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      await bucket.take();
      at.push(clock.t);
    }
    expect(at).toEqual([0, 0, 0, 100, 200]);
  });

  it('refills while idle, but never beyond its capacity', async () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(10, 2, clock);
    expect(bucket.tryTake()).toBe(true);
    expect(bucket.tryTake()).toBe(true);
    expect(bucket.tryTake()).toBe(false);
    clock.t += 10_000;
    expect(bucket.tryTake(2)).toBe(true);
    expect(bucket.tryTake()).toBe(false);
    expect(bucket.waitTime()).toBeCloseTo(100);
  });

  it('never exceeds the rate over a long run', async () => {
    const clock = fakeClock();
    const bucket = TokenBucket.perSecond(50, clock); // burst 5
    for (let i = 0; i < 505; i += 1) await bucket.take();
    // 5 free, then 500 at 50/s
    expect(clock.t).toBeCloseTo(10_000, 0);
  });

  it('sleeps in slices and calls onWait between them (the redelivery heartbeats there)', async () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(0.25, 1, clock); // one token every 4 s
    await bucket.take();
    let waits = 0;
    await bucket.take(1, { maxSleepMs: 1000, onWait: () => (waits += 1) });
    expect(clock.t).toBe(4000);
    expect(clock.sleeps).toEqual([1000, 1000, 1000, 1000]);
    expect(waits).toBe(4);
  });

  it('rejects a rate or capacity it cannot honour', () => {
    expect(() => new TokenBucket(0)).toThrow(RangeError);
    expect(() => new TokenBucket(Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(() => new TokenBucket(1, 0.5)).toThrow(RangeError);
    expect(TokenBucket.perSecond(0.5).capacity).toBe(1);
    expect(TokenBucket.perSecond(200).capacity).toBe(20);
  });
});
