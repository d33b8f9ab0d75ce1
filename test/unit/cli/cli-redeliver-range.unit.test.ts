import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/cli/cli-errors.js';
import { describeRanges, planRedelivery } from '../../../src/cli/redeliver/range.js';
import { parseRangePoint } from '../../../src/cli/range-point.js';

const NOW = Date.parse('2026-03-10T12:00:00Z');
const partitions = [
  { partition: 0, low: 0n, high: 10n },
  { partition: 1, low: 5n, high: 8n },
  { partition: 2, low: 0n, high: 0n },
];

describe('redelivery start and end points', () => {
  it('reads every kind of point', () => {
    expect(parseRangePoint('earliest', NOW)).toEqual({ kind: 'earliest' });
    expect(parseRangePoint('latest', NOW)).toEqual({ kind: 'latest' });
    expect(parseRangePoint('1500', NOW)).toEqual({ kind: 'offset', offset: 1500n });
    expect(parseRangePoint('0:15,2:80', NOW)).toEqual({
      kind: 'positions',
      positions: [
        { partition: 0, offset: 15n },
        { partition: 2, offset: 80n },
      ],
    });
    expect(parseRangePoint('2h', NOW)).toEqual({ kind: 'time', at: new Date(NOW - 7_200_000) });
    expect(parseRangePoint('2026-01-31T12:00:00Z', NOW)).toEqual({
      kind: 'time',
      at: new Date('2026-01-31T12:00:00Z'),
    });
    for (const bad of ['', 'soon', '0:1,0:2', '-5', '1.5']) expect(parseRangePoint(bad, NOW), bad).toBeUndefined();
  });

  it('from earliest to the captured end covers every held record', () => {
    const plan = planRedelivery(partitions, { kind: 'earliest' }, undefined);
    expect(describeRanges(plan.ranges)).toBe('0:[0,10) 1:[5,8)');
    expect(plan.notes).toEqual([]);
  });

  it('an offset applies to every partition, clamped to what is held, with a note for records gone to retention', () => {
    const plan = planRedelivery(partitions, { kind: 'offset', offset: 3n }, { kind: 'offset', offset: 7n });
    expect(plan.ranges).toEqual([
      { partition: 0, start: 3n, end: 7n },
      { partition: 1, start: 5n, end: 7n },
      { partition: 2, start: 0n, end: 0n },
    ]);
    expect(plan.notes).toEqual(['partition 1: offsets before 5 are gone (retention); starting at 5']);
  });

  it('partition:offset lists redeliver only the partitions they name; --to never passes the captured end', () => {
    const plan = planRedelivery(
      partitions,
      { kind: 'positions', positions: [{ partition: 0, offset: 4n }] },
      { kind: 'offset', offset: 99n },
    );
    expect(describeRanges(plan.ranges)).toBe('0:[4,10)');
  });

  it('times resolve through the offsets the broker found for them', () => {
    const at = {
      from: new Map([
        [0, 6n],
        [1, 8n],
        [2, 0n],
      ]),
      to: new Map([
        [0, 9n],
        [1, 8n],
        [2, 0n],
      ]),
    };
    const plan = planRedelivery(
      partitions,
      { kind: 'time', at: new Date(NOW) },
      { kind: 'time', at: new Date(NOW + 1) },
      at,
    );
    expect(describeRanges(plan.ranges)).toBe('0:[6,9)');
  });

  it('a --to before --from redelivers nothing there and says so; a partition that does not exist is bad input', () => {
    const plan = planRedelivery(partitions, { kind: 'offset', offset: 8n }, { kind: 'offset', offset: 2n });
    expect(describeRanges(plan.ranges)).toBe('no records');
    expect(plan.notes[0]).toContain('--to is before --from');
    expect(() =>
      planRedelivery(partitions, { kind: 'positions', positions: [{ partition: 7, offset: 0n }] }, undefined),
    ).toThrow(UsageError);
    expect(() =>
      planRedelivery(
        partitions,
        { kind: 'earliest' },
        { kind: 'positions', positions: [{ partition: 3, offset: 0n }] },
      ),
    ).toThrow(/--to names partition 3/);
  });
});
