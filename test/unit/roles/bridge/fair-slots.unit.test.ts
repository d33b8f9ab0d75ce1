/**
 * The bridge's delivery slots (src/roles/bridge/fair-slots.ts): never more than n at once, freed slots go by the
 * tenants' weights, a tenant alone gets them all, a wait given up leaves the queue with Abandoned, a failed hand-over
 * frees its slot; what runs is counted per tenant.
 */
import { describe, expect, it } from 'vitest';
import { Abandoned } from '../../../../src/roles/bridge/backoff-gate.js';
import { FairSlots } from '../../../../src/roles/bridge/fair-slots.js';

const settle = () => new Promise((r) => setImmediate(r));

/** Hand-overs that finish when released, oldest first; records which tenant started when. */
function harness(n: number, weightOf: (t: string) => number = () => 1) {
  const slots = new FairSlots(n, weightOf);
  const started: string[] = [];
  const releases: (() => void)[] = [];
  let running = 0;
  let most = 0;
  const submit = (tenant: string, signal = new AbortController().signal) =>
    slots.run(tenant, signal, async () => {
      started.push(tenant);
      running += 1;
      most = Math.max(most, running);
      await new Promise<void>((r) => releases.push(r));
      running -= 1;
    });
  const releaseOne = async () => {
    releases.shift()!();
    await settle();
  };
  return { slots, started, submit, releaseOne, most: () => most };
}

describe('fair delivery slots', () => {
  it('never runs more than n at once; a tenant alone gets every slot', async () => {
    const h = harness(4);
    const all = Array.from({ length: 20 }, () => h.submit('alone'));
    await settle();
    expect(h.started).toHaveLength(4);
    for (let i = 0; i < 20; i += 1) await h.releaseOne();
    await Promise.all(all);
    expect(h.most()).toBe(4);
    expect(h.started).toHaveLength(20);
  });

  it('freed slots go to a tenant that queued later, in turn with a backlog that queued first', async () => {
    const h = harness(2);
    for (let i = 0; i < 100; i += 1) void h.submit('burst');
    await settle();
    for (let i = 0; i < 5; i += 1) void h.submit('quiet');
    for (let i = 0; i < 10; i += 1) await h.releaseOne();
    // Of the ten slots freed, the quiet tenant's five waiting hand-overs got five, alternating with the burst.
    expect(h.started.slice(2, 12).filter((t) => t === 'quiet')).toHaveLength(5);
  });

  it('shares slots by weight while both tenants wait', async () => {
    const h = harness(1, (t) => (t === 'heavy' ? 2 : 1));
    for (let i = 0; i < 300; i += 1) {
      void h.submit('heavy');
      void h.submit('light');
    }
    await settle();
    for (let i = 0; i < 300; i += 1) await h.releaseOne();
    const window = h.started.slice(1, 301);
    expect(window.filter((t) => t === 'heavy')).toHaveLength(200);
    expect(window.filter((t) => t === 'light')).toHaveLength(100);
  });

  it('counts what runs per tenant', async () => {
    const h = harness(3);
    void h.submit('a');
    void h.submit('a');
    void h.submit('b');
    void h.submit('b');
    await settle();
    expect(Object.fromEntries(h.slots.inFlight())).toEqual({ a: 2, b: 1 });
    expect(h.slots.waiting).toBe(1);
    await h.releaseOne();
    await h.releaseOne();
    expect(Object.fromEntries(h.slots.inFlight())).toEqual({ b: 2 });
  });

  it('a wait given up rejects with Abandoned, leaves the queue and never takes a slot', async () => {
    const h = harness(1);
    void h.submit('a');
    const leave = new AbortController();
    const given = h.submit('b', leave.signal);
    void h.submit('c');
    await settle();
    leave.abort();
    await expect(given).rejects.toBeInstanceOf(Abandoned);
    await h.releaseOne();
    expect(h.started).toEqual(['a', 'c']);
    await expect(h.submit('d', AbortSignal.abort())).rejects.toBeInstanceOf(Abandoned);
  });

  it('frees the slot when the hand-over fails', async () => {
    const slots = new FairSlots(1, () => 1);
    const signal = new AbortController().signal;
    await expect(slots.run('a', signal, () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(await slots.run('a', signal, () => Promise.resolve('next'))).toBe('next');
    expect(slots.inFlight().size).toBe(0);
  });
});
