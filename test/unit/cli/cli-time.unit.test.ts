import { describe, expect, it } from 'vitest';
import { parsePosition, parsePositionList } from '../../../src/cli/position.js';
import { parseDuration, parseTime } from '../../../src/cli/time.js';

const NOW = Date.parse('2026-03-10T12:00:00Z');

describe('times on the command line', () => {
  it('reads RFC 3339 timestamps with Z or an offset, with or without fractions', () => {
    expect(parseTime('2026-01-31T12:00:00Z', NOW)?.toISOString()).toBe('2026-01-31T12:00:00.000Z');
    expect(parseTime('2026-01-31T13:00:00+01:00', NOW)?.toISOString()).toBe('2026-01-31T12:00:00.000Z');
    expect(parseTime('2026-01-31t12:00:00.250z', NOW)?.toISOString()).toBe('2026-01-31T12:00:00.250Z');
    expect(parseTime('2026-01-31 12:00:00Z', NOW)?.toISOString()).toBe('2026-01-31T12:00:00.000Z');
  });

  it('reads durations as that long ago', () => {
    expect(parseTime('2h', NOW)?.toISOString()).toBe('2026-03-10T10:00:00.000Z');
    expect(parseTime('1h30m', NOW)?.toISOString()).toBe('2026-03-10T10:30:00.000Z');
    expect(parseTime('7d', NOW)?.toISOString()).toBe('2026-03-03T12:00:00.000Z');
    expect(parseTime('now', NOW)?.getTime()).toBe(NOW);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('1w')).toBe(604_800_000);
    expect(parseDuration('250ms')).toBe(250);
  });

  it('rejects what names no instant', () => {
    for (const bad of [
      'yesterday',
      '2h ago',
      '-2h',
      '2026-01-31',
      '2026-01-31T12:00:00',
      '2026-02-30T00:00:00Z',
      '2026-01-31T25:00:00Z',
      '12',
      'h',
      '',
    ]) {
      expect(parseTime(bad, NOW), bad).toBeUndefined();
    }
  });
});

describe('positions on the command line', () => {
  it('reads partition:offset and lists of them', () => {
    expect(parsePosition('0:42')).toEqual({ partition: 0, offset: 42n });
    expect(parsePosition('3:9007199254740993')).toEqual({ partition: 3, offset: 9007199254740993n });
    expect(parsePositionList('0:5, 2:80')).toEqual([
      { partition: 0, offset: 5n },
      { partition: 2, offset: 80n },
    ]);
  });

  it('rejects anything else', () => {
    for (const bad of ['42', '0:', ':4', '0:-1', 'a:1', '0:1:2', '0.5:1'])
      expect(parsePosition(bad), bad).toBeUndefined();
    expect(parsePositionList('0:1,0:2')).toBeUndefined(); // a partition twice
    expect(parsePositionList('')).toBeUndefined();
  });
});
