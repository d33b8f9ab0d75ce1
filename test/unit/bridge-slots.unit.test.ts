import { describe, expect, it } from 'vitest';
import { bridgeConcurrency, slots } from '../../src/bridge/bridge.js';

describe('delivery slots', () => {
  it('never runs more than n at once and hands slots over in arrival order', async () => {
    const slot = slots(3);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const releases: (() => void)[] = [];
    const all = Array.from({ length: 8 }, (_, i) =>
      slot(async () => {
        started.push(i);
        running += 1;
        most = Math.max(most, running);
        await new Promise<void>((r) => releases.push(r));
        running -= 1;
        return i;
      }),
    );
    const settle = () => new Promise((r) => setImmediate(r));
    await settle();
    expect(started).toEqual([0, 1, 2]);
    while (releases.length > 0) {
      releases.shift()!();
      await settle();
    }
    expect(await Promise.all(all)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(most).toBe(3);
  });

  it('frees the slot when the work fails', async () => {
    const slot = slots(1);
    await expect(slot(() => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(await slot(() => Promise.resolve('next'))).toBe('next');
  });
});

describe('bridge concurrency', () => {
  it('is lanes × partitions consumed at once, capped by the delivery slots', () => {
    expect(bridgeConcurrency({ BRIDGE_LANES: 32, BRIDGE_MAX_DELIVERIES: 32 }, 1)).toBe(32);
    expect(bridgeConcurrency({ BRIDGE_LANES: 32, BRIDGE_MAX_DELIVERIES: 32 }, 6)).toBe(32);
    expect(bridgeConcurrency({ BRIDGE_LANES: 8, BRIDGE_MAX_DELIVERIES: 64 }, 6)).toBe(32);
    expect(bridgeConcurrency({ BRIDGE_LANES: 8, BRIDGE_MAX_DELIVERIES: 64 }, 1)).toBe(8);
  });
});
