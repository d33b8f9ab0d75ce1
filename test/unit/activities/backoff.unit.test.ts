import { afterEach, describe, expect, it, vi } from 'vitest';
import { jitteredDelayMs } from '../../../activities/index.js';
import { SHIPMENT_BACKOFF } from '../../../src/base/retry-policies.js';

describe('shipment backoff', () => {
  afterEach(() => vi.restoreAllMocks());

  it('doubles from 2 s, is jittered between half and all of each step, and never exceeds the 60 s cap', () => {
    const random = vi.spyOn(Math, 'random');
    for (let attempt = 1; attempt <= 10; attempt += 1) {
      const step = Math.min(60_000, 2_000 * 2 ** (attempt - 1));
      random.mockReturnValue(0);
      expect(jitteredDelayMs(attempt, SHIPMENT_BACKOFF)).toBe(step / 2);
      random.mockReturnValue(0.99999999);
      expect(jitteredDelayMs(attempt, SHIPMENT_BACKOFF)).toBe(step - 1);
    }
    expect(jitteredDelayMs(50, SHIPMENT_BACKOFF)).toBeLessThanOrEqual(60_000);
  });

  it('spreads orders that fail together', () => {
    const delays = new Set(Array.from({ length: 50 }, () => jitteredDelayMs(3, SHIPMENT_BACKOFF)));
    expect(delays.size).toBeGreaterThan(10);
  });
});
