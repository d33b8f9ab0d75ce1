import { describe, expect, it } from 'vitest';
import { SHIPMENT_BACKOFF, jitteredDelayMs } from '../../activities/index.js';

describe('shipment backoff', () => {
  it('doubles from 2 s, is jittered between half and all of each step, and never exceeds the 60 s cap', () => {
    for (let attempt = 1; attempt <= 10; attempt += 1) {
      const step = Math.min(60_000, 2_000 * 2 ** (attempt - 1));
      expect(jitteredDelayMs(attempt, SHIPMENT_BACKOFF, () => 0)).toBe(step / 2);
      expect(jitteredDelayMs(attempt, SHIPMENT_BACKOFF, () => 1)).toBe(step);
    }
    expect(jitteredDelayMs(50, SHIPMENT_BACKOFF, () => 1)).toBe(60_000);
  });

  it('spreads orders that fail together', () => {
    const delays = new Set(Array.from({ length: 50 }, () => jitteredDelayMs(3, SHIPMENT_BACKOFF)));
    expect(delays.size).toBeGreaterThan(10);
  });
});
