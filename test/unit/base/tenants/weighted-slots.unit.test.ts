/**
 * Weighted fair slots (src/base/tenants/weighted-slots.ts): while tenants have callers waiting, slots go in proportion
 * to their weights; a tenant alone uses them all; a caller of another tenant waits for the next slot to free, not
 * behind the busy tenant's queue; a caller whose signal aborts gives up its place and never holds a slot.
 */
import { describe, expect, it } from 'vitest';
import {
  createWeightedSlots,
  type ReleaseSlot,
  type WeightedSlots,
} from '../../../../src/base/tenants/weighted-slots.js';

/** Callers of `tenant` queued now; each entry's `release` is set once it holds a slot. */
function enqueue(slots: WeightedSlots, tenant: string, n: number, signal?: AbortSignal) {
  return Array.from({ length: n }, () => {
    const caller: { tenant: string; release?: ReleaseSlot; error?: unknown } = { tenant };
    slots.acquire(tenant, signal).then(
      (release) => (caller.release = release),
      (err: unknown) => (caller.error = err),
    );
    return caller;
  });
}
const settle = () => new Promise((r) => setImmediate(r));
const inUse = (slots: WeightedSlots, tenant: string) => slots.usage().get(tenant)?.inUse ?? 0;

describe('weighted fair slots', () => {
  it('shares the slots in proportion to the weights while both tenants have callers waiting', async () => {
    const slots = createWeightedSlots(6, (t) => (t === 'heavy' ? 2 : 1));
    const heavy = enqueue(slots, 'heavy', 200);
    const light = enqueue(slots, 'light', 200);
    await settle();
    // The heavy tenant came first, alone: it took every slot. Its slots come back as its calls end.
    expect([inUse(slots, 'heavy'), inUse(slots, 'light')]).toEqual([6, 0]);
    heavy[0]!.release!();
    await settle();
    expect([inUse(slots, 'heavy'), inUse(slots, 'light')]).toEqual([5, 1]);
    heavy[1]!.release!();
    await settle();
    expect([inUse(slots, 'heavy'), inUse(slots, 'light')]).toEqual([4, 2]);
    Object.assign(heavy[0]!, { done: true });
    Object.assign(heavy[1]!, { done: true });
    // Calls end in any order (the oldest holder of a random tenant first); while both still wait, the share holds.
    const shares: number[] = [];
    for (let round = 0; round < 150; round += 1) {
      const holders = [...heavy, ...light].filter((c) => c.release && !('done' in c));
      const ending = holders[(round * 7) % holders.length]!;
      Object.assign(ending, { done: true });
      ending.release!();
      await settle();
      shares.push(inUse(slots, 'heavy'));
      expect(inUse(slots, 'heavy') + inUse(slots, 'light')).toBe(6);
    }
    // Never more than one slot off 4 : 2, and 4 : 2 again after each grant that evened it out.
    expect(Math.min(...shares)).toBeGreaterThanOrEqual(3);
    expect(Math.max(...shares)).toBeLessThanOrEqual(5);
    expect(shares.filter((s) => s === 4).length).toBeGreaterThan(shares.length / 2);
  });

  it('gives a tenant alone every slot (work conserving), and a newcomer the next slot that frees', async () => {
    const slots = createWeightedSlots(4, () => 1);
    const busy = enqueue(slots, 'busy', 50);
    await settle();
    expect(inUse(slots, 'busy')).toBe(4);
    expect(slots.usage().get('busy')!.waiting).toBe(46);
    // Another tenant arrives behind 46 waiting callers: the next slot that frees is its, not the 5th busy caller's.
    const [newcomer] = enqueue(slots, 'newcomer', 1);
    await settle();
    expect(newcomer!.release).toBeUndefined();
    busy[0]!.release!();
    await settle();
    expect(newcomer!.release).toBeDefined();
    expect(busy[4]!.release).toBeUndefined();
    // Once the newcomer is done and waits no more, its slot goes back to the tenant alone.
    newcomer!.release!();
    await settle();
    expect(inUse(slots, 'busy')).toBe(4);
    expect(busy[4]!.release).toBeDefined();
  });

  it('lets a waiting caller whose signal aborts give up its place: the next caller moves up, no slot is lost', async () => {
    const slots = createWeightedSlots(1, () => 1);
    const [holder] = enqueue(slots, 'a', 1);
    const cancelled = new AbortController();
    const [gaveUp] = enqueue(slots, 'b', 1, cancelled.signal);
    const [behind] = enqueue(slots, 'a', 1);
    await settle();
    cancelled.abort(new Error('activity cancelled'));
    await settle();
    expect((gaveUp!.error as Error).message).toBe('activity cancelled');
    expect(slots.usage().get('b')).toBeUndefined();
    holder!.release!();
    holder!.release!(); // idempotent: one slot back, not two
    await settle();
    expect(behind!.release).toBeDefined();
    expect(gaveUp!.release).toBeUndefined();
    expect(inUse(slots, 'a')).toBe(1);
    // An already aborted signal never queues.
    await expect(slots.acquire('c', AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
    expect(slots.usage().get('c')).toBeUndefined();
  });

  it('refuses a slot count that is not a whole number ≥ 1, and a weight that is not > 0', async () => {
    expect(() => createWeightedSlots(0, () => 1)).toThrow('slots: expected a whole number ≥ 1, got 0');
    await expect(createWeightedSlots(1, () => 0).acquire('x')).rejects.toThrow("tenant x's weight must be > 0");
  });
});
