/**
 * The reconciliation's topic window (src/reconcile/topic-window.ts) without a broker: a partition starts at the first
 * offset at `since`, or where an earlier read stopped when that is later and still inside the partition; it ends where
 * the caller says; a window reaching back before the log start names the partition as gone.
 */
import { describe, expect, it } from 'vitest';
import type { TopicAdmin } from '../../../src/adapters/kafka/admin.js';
import { planWindow } from '../../../src/reconcile/topic-window.js';

const SINCE = new Date('2026-12-07T11:00:00Z');
const UNTIL = new Date('2026-12-07T11:59:00Z');

/** Three partitions: 0 holds 0–100, 1 holds 40–90 (older records deleted), 2 holds 0–10. */
function admin(): TopicAdmin {
  const partitions = [
    { partition: 0, low: 0n, high: 100n },
    { partition: 1, low: 40n, high: 90n },
    { partition: 2, low: 0n, high: 10n },
  ];
  const at = (d: Date) =>
    d === SINCE
      ? new Map([
          [0, 20n],
          [1, 40n],
          [2, 5n],
        ])
      : new Map([
          [0, 80n],
          [1, 85n],
          [2, 10n],
        ]);
  return {
    partitionOffsets: async () => partitions,
    offsetsAt: async (_topic: string, d: Date) => at(d),
  } as unknown as TopicAdmin;
}

describe('planWindow', () => {
  it('reads from the first offset at since to the first at until; a partition whose log start is reached is gone', async () => {
    const plan = await planWindow(admin(), 'orders', { since: SINCE, until: UNTIL });
    expect(plan.ranges).toEqual([
      { partition: 0, start: 20n, end: 80n },
      { partition: 1, start: 40n, end: 85n },
      { partition: 2, start: 5n, end: 10n },
    ]);
    expect(plan.gone).toEqual([1]);
  });

  it('starts where an earlier read stopped when that is later; never before since, never past the partition end', async () => {
    const from = new Map([
      [0, 50n],
      [1, 10n],
      [2, 11n],
    ]);
    const plan = await planWindow(admin(), 'orders', { since: SINCE, until: UNTIL }, (_p, u) => u, from);
    expect(plan.ranges).toEqual([
      { partition: 0, start: 50n, end: 80n },
      { partition: 1, start: 40n, end: 85n },
      // 11 is past the partition's end (10): the topic was made again, so the window's own start.
      { partition: 2, start: 5n, end: 10n },
    ]);
  });

  it('an end before the start is an empty range at the start', async () => {
    const plan = await planWindow(admin(), 'orders', { since: SINCE, until: UNTIL }, () => 0n, new Map([[0, 60n]]));
    expect(plan.ranges[0]).toEqual({ partition: 0, start: 60n, end: 60n });
  });
});
