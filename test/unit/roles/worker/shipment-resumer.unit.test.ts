import { describe, expect, it } from 'vitest';
import { roundPlan, warehouseAnswers } from '../../../../src/roles/worker/shipment-resumer.js';

const opts = { probeSeconds: 15, perSecond: 20, tickMs: 1000 };
const waiting = (orders: number, paused = 0) => ({ orders, paused, runGone: 0, oldest: new Date(0) });

describe('the shipment resumer', () => {
  /** The brownout window's figures: `calls` went out lately, `failures` of them failed. */
  const recent = (calls: number, failures: number) => ({
    calls,
    failures,
    failingKeys: failures,
    windowMs: 30_000,
    judged: calls >= 10,
    unhealthy: calls >= 10 && failures * 10 >= calls,
  });
  const health = (
    circuit: 'closed' | 'open' | 'half-open',
    lastAnswerAt: number,
    lastFailureAt: number,
    r = recent(0, 0),
  ) => ({
    circuit,
    lastAnswerAt,
    lastFailureAt,
    recent: r,
  });

  it('judges the warehouse answering only once this process saw it answer since its last failure, circuit closed', () => {
    expect(warehouseAnswers(health('closed', 0, 0))).toBe(false); // never seen
    expect(warehouseAnswers(health('closed', 2, 1))).toBe(true);
    expect(warehouseAnswers(health('closed', 1, 2))).toBe(false);
    expect(warehouseAnswers(health('half-open', 2, 1))).toBe(false);
    expect(warehouseAnswers(health('open', 2, 1))).toBe(false);
  });

  it('in a brownout, judges it answering while it answered some recent calls, whichever came last', () => {
    // Half of the last 40 calls failed, the last one too: the warehouse still answers the other half.
    expect(warehouseAnswers(health('closed', 1, 2, recent(40, 20)))).toBe(true);
    expect(warehouseAnswers(health('closed', 1, 2, recent(40, 39)))).toBe(true);
    // Every recent call failed (an outage the breaker has not opened on yet, or answers older than the window).
    expect(warehouseAnswers(health('closed', 1, 2, recent(4, 4)))).toBe(false);
    expect(warehouseAnswers(health('closed', 1, 2, recent(0, 0)))).toBe(false);
    // The circuit open or half-open wins: the probe decides, as in an outage.
    expect(warehouseAnswers(health('open', 1, 2, recent(40, 20)))).toBe(false);
    expect(warehouseAnswers(health('half-open', 1, 2, recent(40, 20)))).toBe(false);
  });

  it('in a brownout, wakes the paced share each round, not one order per probe interval', () => {
    const answers = warehouseAnswers(health('closed', 1, 2, recent(150, 75)));
    expect(roundPlan(waiting(10_000), answers, 0, 0, opts)).toEqual({ wake: 20, reason: 'resume' });
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
