/**
 * The weighted fair queue on its own (src/base/tenants/fair-queue.ts): shares in proportion to the weights while
 * tenants wait, all of it to a tenant alone, no starvation, a tenant's items in the order they came, no credit banked
 * while idle.
 */
import { describe, expect, it } from 'vitest';
import { FairQueue } from '../../../../src/base/tenants/fair-queue.js';

const weights =
  (w: Record<string, number>) =>
  (tenant: string): number =>
    w[tenant] ?? 1;

/** Takes `n` items and counts them by tenant. */
function take(q: FairQueue<unknown>, n: number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i += 1) {
    const next = q.shift()!;
    counts[next.tenant] = (counts[next.tenant] ?? 0) + 1;
  }
  return counts;
}

describe('fair queue', () => {
  it('gives tenants that keep items waiting shares in proportion to their weights', () => {
    const q = new FairQueue<number>(weights({ a: 1, b: 2, c: 0.5 }));
    for (let i = 0; i < 1000; i += 1) for (const t of ['a', 'b', 'c']) q.push(t, i);
    expect(take(q, 700)).toEqual({ a: 200, b: 400, c: 100 });
  });

  it('splits evenly at equal weights, whichever tenant queued first and however much', () => {
    const q = new FairQueue<number>(weights({}));
    for (let i = 0; i < 5000; i += 1) q.push('burst', i);
    for (let i = 0; i < 10; i += 1) q.push('quiet', i);
    const order = Array.from({ length: 20 }, () => q.shift()!.tenant);
    // The quiet tenant's ten items are taken within the first twenty, alternating with the burst.
    expect(order.filter((t) => t === 'quiet')).toHaveLength(10);
  });

  it('gives a tenant alone every item, whatever its weight (work conserving)', () => {
    const q = new FairQueue<number>(weights({ small: 0.001 }));
    for (let i = 0; i < 50; i += 1) q.push('small', i);
    const out = Array.from({ length: 50 }, () => q.shift());
    expect(out.every((x) => x?.tenant === 'small')).toBe(true);
    expect(q.shift()).toBeUndefined();
    expect(q.size).toBe(0);
  });

  it("keeps each tenant's items in the order they were pushed", () => {
    const q = new FairQueue<string>(weights({ a: 3 }));
    for (let i = 0; i < 100; i += 1) {
      q.push('a', `a${i}`);
      if (i % 3 === 0) q.push('b', `b${i}`);
    }
    const seen: Record<string, string[]> = { a: [], b: [] };
    for (let x = q.shift(); x; x = q.shift()) seen[x.tenant]!.push(x.item);
    expect(seen.a).toEqual(Array.from({ length: 100 }, (_, i) => `a${i}`));
    expect(seen.b).toEqual(Array.from({ length: 34 }, (_, i) => `b${i * 3}`));
  });

  it('starves no one: the lightest tenant is served within (tenants × weight ratio) turns while heavy ones wait', () => {
    const q = new FairQueue<number>(weights({ heavy1: 1000, heavy2: 1000, light: 0.001 }));
    for (let i = 0; i < 3_000_000; i += 1) q.push(i % 2 ? 'heavy1' : 'heavy2', i);
    q.push('light', 0);
    let turns = 0;
    while (q.shift()!.tenant !== 'light') turns += 1;
    expect(turns).toBeLessThanOrEqual(2 * (1000 / 0.001) + 2);
  });

  it('banks no credit while idle: a tenant back from idling gets its share, not a catch-up run', () => {
    const q = new FairQueue<number>(weights({}));
    for (let i = 0; i < 1000; i += 1) q.push('busy', i);
    take(q, 500); // 'idle' had nothing waiting all that time
    for (let i = 0; i < 100; i += 1) q.push('idle', i);
    expect(take(q, 100)).toEqual({ busy: 50, idle: 50 });
  });

  it('a removed item is never taken, and the rest of its tenant keeps its place', () => {
    const q = new FairQueue<string>(weights({}));
    q.push('a', 'a0');
    q.push('a', 'a1');
    q.push('b', 'b0');
    expect(q.remove('a', 'a0')).toBe(true);
    expect(q.remove('a', 'a0')).toBe(false);
    expect(q.waiting('a')).toBe(1);
    const out = [q.shift()!.item, q.shift()!.item];
    expect(out.sort()).toEqual(['a1', 'b0']);
    expect(q.shift()).toBeUndefined();
  });
});
