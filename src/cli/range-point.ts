/**
 * A point in a topic, per partition, as the CLI takes one (`--from` and `--to` of redeliver, the options that name a
 * start or an end):
 *   earliest | latest            — the log start / the high watermark
 *   an RFC 3339 time or `2h`     — the first record whose timestamp is ≥ that time (adapters/kafka/admin.ts offsetsAt)
 *   an offset (`1500`)           — the same offset on every partition
 *   `p:o[,p:o…]` (`0:1500,2:80`) — per partition
 */
import { parsePositionList, type Position } from './position.js';
import { parseTime } from './time.js';

export type RangePoint =
  | { kind: 'earliest' }
  | { kind: 'latest' }
  | { kind: 'time'; at: Date }
  | { kind: 'offset'; offset: bigint }
  | { kind: 'positions'; positions: Position[] };

export const POINT_EXPECTED =
  'earliest, latest, an RFC 3339 time or a duration ago (2026-01-31T12:00:00Z, 2h), an offset for every partition (1500), ' +
  'or partition:offset pairs (0:1500,2:80)';

export function parseRangePoint(text: string, now: number = Date.now()): RangePoint | undefined {
  const t = text.trim();
  if (t === 'earliest' || t === 'beginning') return { kind: 'earliest' };
  if (t === 'latest' || t === 'end') return { kind: 'latest' };
  if (/^\d{1,19}$/.test(t)) return { kind: 'offset', offset: BigInt(t) };
  if (t.includes(':') && /^[\d:,\s]+$/.test(t)) {
    const positions = parsePositionList(t);
    return positions ? { kind: 'positions', positions } : undefined;
  }
  const at = parseTime(t, now);
  return at ? { kind: 'time', at } : undefined;
}

export function describePoint(p: RangePoint): string {
  switch (p.kind) {
    case 'earliest':
    case 'latest':
      return p.kind;
    case 'time':
      return p.at.toISOString();
    case 'offset':
      return `offset ${p.offset}`;
    case 'positions':
      return p.positions.map((x) => `${x.partition}:${x.offset}`).join(',');
  }
}
