/**
 * A waiting order in the pure state machine (workflows/order-state.ts): what a wait keeps across wake-ups, what a
 * pause does to the shipment deadline, and when a wait holds the order failed.
 */
import { describe, expect, it } from 'vitest';
import {
  endWait,
  initialOrderState,
  leavePending,
  markShipped,
  markWaiting,
  metPastDeadline,
  toView,
  type WaitReport,
} from '../../../workflows/order-state.js';

const pending = { ...initialOrderState('acme', 'o-1'), status: 'pending' as const };
const outage = (over: Partial<WaitReport> = {}): WaitReport => ({
  since: 1_000,
  reason: 'circuit open',
  for: 'outage',
  deadline: 86_401_000,
  recheckAt: 301_000,
  metAt: 1_000,
  ...over,
});

describe('a waiting order in the state machine', () => {
  it('keeps the time its wait began and its deadline across the waits that follow a wake-up; the reason and recheck move', () => {
    const first = markWaiting(pending, outage());
    expect(toView(first)).toMatchObject({ waitingSince: new Date(1_000).toISOString(), waitingReason: 'circuit open' });
    const woken = endWait(first, 'woken');
    expect(toView(woken).waitingSince).toBeUndefined();
    expect(woken.waitingSince).toBe(1_000); // the spell goes on: a woken order's attempt names it
    const again = markWaiting(
      woken,
      outage({ since: 50_000, deadline: 999_999_999, recheckAt: 350_000, metAt: 50_000 }),
    );
    expect(again.waiting).toEqual({
      since: 1_000,
      reason: 'circuit open',
      for: 'outage',
      deadline: 86_401_000,
      recheckAt: 350_000,
      metAt: 50_000,
    });
  });

  it('has no deadline while a pause holds it, and a wait for an outage after the pause starts a new one', () => {
    const first = markWaiting(pending, outage());
    const paused = markWaiting(endWait(first), outage({ for: 'pause', reason: 'shipping paused', metAt: 9_000 }));
    expect(paused.waiting?.deadline).toBeUndefined();
    expect(paused.shipmentDeadline).toBeUndefined();
    expect(metPastDeadline({ ...paused, waiting: { ...paused.waiting!, metAt: 10 ** 12 } })).toBe(false);
    const after = markWaiting(endWait(paused), outage({ deadline: 5_000_000_000, metAt: 4_000_000_000 }));
    expect(after.shipmentDeadline).toBe(5_000_000_000);
    expect(after.waiting?.deadline).toBe(5_000_000_000);
  });

  it('is to be held failed only when a wait for an outage was met at or after its deadline', () => {
    const w = markWaiting(pending, outage({ deadline: 5_000 }));
    expect(metPastDeadline(w)).toBe(false);
    const atDeadline = markWaiting(endWait(w), outage({ metAt: 5_000 }));
    expect(metPastDeadline(atDeadline)).toBe(true);
  });

  it('stops waiting, and forgets the deadline and the spell, when it leaves pending', () => {
    const w = markWaiting(pending, outage({ deadline: 5_000 }));
    expect(markShipped(w, 'shp-1')).not.toHaveProperty('waiting');
    expect(markShipped(w, 'shp-1')).not.toHaveProperty('shipmentDeadline');
    expect(leavePending(w)).not.toHaveProperty('shipmentDeadline');
    expect(leavePending(w)).not.toHaveProperty('waitingSince');
  });
});
