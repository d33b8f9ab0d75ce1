import { describe, expect, it } from 'vitest';
import { roundPlan, warehouseAnswers } from '../../src/worker/shipment-resumer.js';

const opts = { probeSeconds: 15, perSecond: 20, tickMs: 1000 };
const waiting = (orders: number, paused = 0) => ({ orders, paused, oldest: new Date(0) });

describe('the shipment resumer', () => {
  it('judges the warehouse answering only once this process saw it answer since its last failure, circuit closed', () => {
    expect(warehouseAnswers({ circuit: 'closed', lastAnswerAt: 0, lastFailureAt: 0 })).toBe(false); // never seen
    expect(warehouseAnswers({ circuit: 'closed', lastAnswerAt: 2, lastFailureAt: 1 })).toBe(true);
    expect(warehouseAnswers({ circuit: 'closed', lastAnswerAt: 1, lastFailureAt: 2 })).toBe(false);
    expect(warehouseAnswers({ circuit: 'half-open', lastAnswerAt: 2, lastFailureAt: 1 })).toBe(false);
    expect(warehouseAnswers({ circuit: 'open', lastAnswerAt: 2, lastFailureAt: 1 })).toBe(false);
  });

  it('wakes nothing while no order waits, or every waiting order is held by a pause', () => {
    expect(roundPlan(waiting(0), true, 0, -Infinity, opts)).toBeUndefined();
    expect(roundPlan(waiting(5, 5), true, 0, -Infinity, opts)).toBeUndefined();
  });

  it('while the warehouse is not seen answering, wakes one order per probe interval, whatever the number waiting', () => {
    let lastProbeAt = -Infinity;
    let woken = 0;
    for (let now = 0; now < 60_000; now += 1000) {
      const plan = roundPlan(waiting(10_000), false, now, lastProbeAt, opts);
      if (!plan) continue;
      expect(plan).toEqual({ wake: 1, reason: 'probe' });
      lastProbeAt = now;
      woken += plan.wake;
    }
    expect(woken).toBe(4); // at 0, 15, 30 and 45 s
  });

  it('once it answers, wakes the paced share per round (perSecond × tick)', () => {
    expect(roundPlan(waiting(10_000), true, 0, 0, opts)).toEqual({ wake: 20, reason: 'resume' });
    expect(roundPlan(waiting(10_000), true, 0, 0, { ...opts, tickMs: 250 })).toEqual({ wake: 5, reason: 'resume' });
    expect(roundPlan(waiting(10_000), true, 0, 0, { ...opts, perSecond: 1, tickMs: 100 })).toEqual({
      wake: 1,
      reason: 'resume',
    });
  });
});
