/**
 * Reads one time window of a topic, never its whole retention: per partition, the first offset whose timestamp is at or
 * after `since` (Kafka's offsets-by-timestamp) up to an end the caller bounds (the group's committed offset, the first
 * offset at `until`, the high watermark), through the bounded reader (src/adapters/kafka/topic-reader.ts: a throwaway
 * group that commits nothing and is deleted afterwards).
 *
 * Rule a reader must not break: a window that reaches back before a partition's log start has lost records to the
 * topic's retention; `gone` names those partitions so the caller can say what it cannot see.
 */
import type { Kafka } from '../adapters/kafka/client.js';
import { withAdmin, type TopicAdmin } from '../adapters/kafka/admin.js';
import { readRanges, type OffsetRange, type ReadRecord } from '../adapters/kafka/topic-reader.js';

export interface WindowPlan {
  ranges: OffsetRange[];
  /** Partitions whose log start is past the window's first offset: records of the window may be gone. */
  gone: number[];
}

/**
 * The ranges of `topic` from `since` to `end(partition, untilOffset, high)` per partition; `end` defaults to the first
 * offset at `until`. `from`, when it names a partition, starts that partition there instead (an offset an earlier read
 * stopped at), never before the first offset at `since`: `since` is then the floor, not the start.
 */
export async function planWindow(
  admin: TopicAdmin,
  topic: string,
  window: { since: Date; until: Date },
  end?: (partition: number, untilOffset: bigint, high: bigint) => bigint,
  from?: ReadonlyMap<number, bigint>,
): Promise<WindowPlan> {
  const partitions = await admin.partitionOffsets(topic);
  if (!partitions) throw new Error(`topic ${topic} does not exist on the brokers`);
  const [starts, ends] = await Promise.all([
    admin.offsetsAt(topic, window.since),
    admin.offsetsAt(topic, window.until),
  ]);
  const ranges: OffsetRange[] = [];
  const gone: number[] = [];
  for (const p of partitions) {
    const first = starts.get(p.partition) ?? p.high;
    // An offset past the partition's end is not where an earlier read stopped (the topic was made again): ignored.
    const resumeAt = from?.get(p.partition);
    const wanted = resumeAt !== undefined && resumeAt > first && resumeAt <= p.high ? resumeAt : first;
    const start = wanted < p.low ? p.low : wanted;
    // The first offset at `since` is the log start though the partition once held more: older records were deleted,
    // and some of them may have been in the window.
    if (p.low > 0n && first <= p.low) gone.push(p.partition);
    const untilOffset = ends.get(p.partition) ?? p.high;
    const last = end ? end(p.partition, untilOffset, p.high) : untilOffset;
    ranges.push({ partition: p.partition, start, end: last > start ? last : start });
  }
  return { ranges, gone };
}

/** Reads `ranges` of `topic` and hands each record to `onRecord`. */
export async function readWindow(
  kafka: Kafka,
  topic: string,
  ranges: OffsetRange[],
  onRecord: (r: ReadRecord) => void,
  opts: { clientId: string; signal?: AbortSignal },
): Promise<void> {
  await readRanges({
    kafka,
    topic,
    ranges,
    clientId: opts.clientId,
    concurrency: 4,
    signal: opts.signal,
    onRecord,
  });
}

export { withAdmin };
