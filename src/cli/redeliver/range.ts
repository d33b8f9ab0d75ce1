/**
 * Where a redelivery starts and stops, per partition. `--from` and `--to` each take a point (../range-point.ts):
 *   earliest | latest            — the log start / the high watermark captured when the redelivery starts
 *   an RFC 3339 time or `2h`     — the first record whose timestamp is ≥ that time (adapters/kafka/admin.ts offsetsAt)
 *   an offset (`1500`)           — the same offset on every partition
 *   `p:o[,p:o…]` (`0:1500,2:80`) — per partition; with --from, partitions not named are not redelivered
 * `--to` is exclusive and never beyond the high watermark captured at start; the default is that watermark.
 */
import { UsageError } from '../cli-errors.js';
import type { PartitionOffsets } from '../../adapters/kafka/admin.js';
import type { OffsetRange } from '../../adapters/kafka/topic-reader.js';
import type { RangePoint } from '../range-point.js';

export interface RedeliveryPlan {
  ranges: OffsetRange[];
  /** Things the operator should know (records gone to retention, a --to before --from). */
  notes: string[];
}

export interface PointOffsets {
  /** Offsets of a time `--from`, from offsetsAt(). */
  from?: Map<number, bigint>;
  /** Offsets of a time `--to`. */
  to?: Map<number, bigint>;
}

export function planRedelivery(
  partitions: PartitionOffsets[],
  from: RangePoint,
  to: RangePoint | undefined,
  at: PointOffsets = {},
): RedeliveryPlan {
  const notes: string[] = [];
  for (const [option, point] of [
    ['--from', from],
    ['--to', to],
  ] as const) {
    if (point?.kind !== 'positions') continue;
    for (const pos of point.positions) {
      if (!partitions.some((p) => p.partition === pos.partition)) {
        throw new UsageError(
          `${option} names partition ${pos.partition}, but the topic has partitions 0–${partitions.length - 1}`,
        );
      }
    }
  }
  const ranges = partitions.map(({ partition, low, high }): OffsetRange => {
    let start: bigint | undefined;
    switch (from.kind) {
      case 'earliest':
        start = low;
        break;
      case 'latest':
        start = high;
        break;
      case 'time':
        start = at.from?.get(partition) ?? high;
        break;
      case 'offset':
        start = from.offset;
        break;
      case 'positions':
        start = from.positions.find((p) => p.partition === partition)?.offset;
        break;
    }
    if (start === undefined) return { partition, start: high, end: high };
    if (start < low) {
      notes.push(`partition ${partition}: offsets before ${low} are gone (retention); starting at ${low}`);
      start = low;
    }
    if (start > high) start = high;
    let end = high;
    if (to) {
      switch (to.kind) {
        case 'earliest':
          end = low;
          break;
        case 'latest':
          end = high;
          break;
        case 'time':
          end = at.to?.get(partition) ?? high;
          break;
        case 'offset':
          end = to.offset;
          break;
        case 'positions':
          end = to.positions.find((p) => p.partition === partition)?.offset ?? high;
          break;
      }
    }
    if (end > high) end = high;
    if (end < start) {
      notes.push(`partition ${partition}: --to is before --from (${end} < ${start}); nothing to redeliver there`);
      end = start;
    }
    return { partition, start, end };
  });
  return { ranges, notes };
}

/** `0:[0,12) 1:[3,9)`: the half-open offset range of every partition that has records to redeliver. */
export function describeRanges(ranges: OffsetRange[]): string {
  const open = ranges.filter((r) => r.end > r.start);
  return open.length === 0 ? 'no records' : open.map((r) => `${r.partition}:[${r.start},${r.end})`).join(' ');
}
