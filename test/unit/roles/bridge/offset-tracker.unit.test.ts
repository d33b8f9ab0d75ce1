import { describe, expect, it } from 'vitest';
import { OffsetTracker } from '../../../../src/roles/bridge/offset-tracker.js';

describe('offset tracker', () => {
  it('commits only the contiguous prefix of finished offsets', () => {
    const t = new OffsetTracker();
    for (const o of ['10', '11', '12', '13']) t.begin(o, 1000 + Number(o));
    expect(t.finish('12')).toBeUndefined();
    expect(t.commitPosition()).toBeUndefined();
    expect(t.finish('10')).toBe('11');
    expect(t.finish('11')).toBe('13');
    expect(t.oldestPendingTimestamp()).toBe(1013);
    expect(t.finish('13')).toBe('14');
    expect(t.inFlight).toBe(0);
    expect(t.oldestPendingTimestamp()).toBeUndefined();
  });

  it('steps over offset gaps (compaction, transaction markers)', () => {
    const t = new OffsetTracker();
    t.begin('5', 0);
    t.begin('9', 0);
    expect(t.finish('9')).toBeUndefined();
    expect(t.finish('5')).toBe('10');
  });

  it('ignores refetches of committed records and repeated finishes', () => {
    const t = new OffsetTracker();
    t.begin('1', 0);
    expect(t.finish('1')).toBe('2');
    t.begin('1', 0);
    expect(t.finish('1')).toBeUndefined();
    expect(t.commitPosition()).toBe('2');
  });

  it('forgets everything on reset', () => {
    const t = new OffsetTracker();
    t.begin('1', 0);
    t.reset();
    expect(t.inFlight).toBe(0);
    expect(t.commitPosition()).toBeUndefined();
  });
});
