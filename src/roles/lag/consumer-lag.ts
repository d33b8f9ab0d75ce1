/**
 * Consumer lag measured from outside the consumer: for each consumer group and partition of a topic, the group's
 * committed offset (the broker's, not what a bridge holds in memory), the partition's end offset (high
 * watermark), the records between them, and the age of the oldest record not yet committed — now minus the
 * timestamp of the record AT the committed offset, read from the topic. Nothing here needs a bridge to be running:
 * a stopped consumer shows a growing age, which is what an alert wants to see.
 *
 * Rules:
 * - the position a group would consume next is its committed offset, or the log start when it has none (the bridge
 *   subscribes from the beginning) or when retention deleted past it; records behind = end − position, never < 0;
 * - the oldest uncommitted record is the first record at or after the position (a control record or a compacted
 *   gap has no record of its own); its timestamp is read once per (topic, partition, position) and cached, so
 *   polling a group that does not move costs two admin requests and no read;
 * - a partition with nothing behind has age 0.
 */
import { connectAdmin } from '../../adapters/kafka/admin.js';
import type { Kafka } from '../../adapters/kafka/client.js';
import { readRanges, ReadInterrupted } from '../../adapters/kafka/topic-reader.js';

export interface PartitionLag {
  group: string;
  topic: string;
  partition: number;
  /** The group's committed offset; undefined when it has none for this partition. */
  committed: bigint | undefined;
  /** Oldest offset still held (log start). */
  start: bigint;
  /** High watermark: the offset the next record written gets. */
  end: bigint;
  /** Records from the position the group would consume next to the end. */
  behind: bigint;
  /** Timestamp (ms since the epoch) of the oldest record not yet committed; undefined when nothing is behind or it could not be read. */
  oldestTimestampMs: number | undefined;
}

export interface LagReport {
  /** When the offsets were read. */
  at: Date;
  partitions: PartitionLag[];
}

/** Age in seconds of the oldest uncommitted record at `now` (0 when nothing is behind). */
export function oldestAgeSeconds(p: PartitionLag, now: number = Date.now()): number {
  if (p.behind <= 0n || p.oldestTimestampMs === undefined) return 0;
  return Math.max(0, (now - p.oldestTimestampMs) / 1000);
}

/** The offset `p`'s group would consume next. */
export function position(p: Pick<PartitionLag, 'committed' | 'start'>): bigint {
  return p.committed === undefined || p.committed < p.start ? p.start : p.committed;
}

export interface LagReaderOptions {
  /** Prefix of the throwaway consumer group the timestamps are read with. */
  clientId?: string;
  /** Longest one read of oldest records may take, ms; partitions not read by then have no timestamp. Default 30000. */
  readTimeoutMs?: number;
}

export interface LagReader {
  /** Reads every partition of `topic` for each of `groups`. Throws when `topic` does not exist. */
  measure(groups: string[], topic: string, signal?: AbortSignal): Promise<LagReport>;
  close(): Promise<void>;
}

/** The topic `topic` does not exist on the brokers. */
export class TopicNotFound extends Error {
  override name = 'TopicNotFound';
  constructor(readonly topic: string) {
    super(`topic ${topic} does not exist on the brokers`);
  }
}

/**
 * Over 80 lines: a factory whose read() and close() share one closure's state (the admin client, the topics'
 * partitions seen), each inner function a named step.
 */
export async function connectLagReader(kafka: Kafka, opts: LagReaderOptions = {}): Promise<LagReader> {
  const admin = await connectAdmin(kafka);
  /** `topic/partition/offset` → timestamp of the first record at or after that offset. */
  let timestamps = new Map<string, number>();
  const keyOf = (topic: string, partition: number, offset: bigint) => `${topic}/${partition}/${offset}`;

  /**
   * For each partition and each of its `positions`, the timestamp of the first record at or after it, read in one
   * pass from the lowest position per partition. Records of a partition arrive in order, so a record at offset o
   * answers every position ≤ o still open.
   */
  async function readOldest(
    topic: string,
    positions: Map<number, { positions: bigint[]; end: bigint }>,
    signal?: AbortSignal,
  ): Promise<Map<string, number>> {
    const found = new Map<string, number>();
    const open = new Map(
      [...positions].map(([partition, w]) => [
        partition,
        [...new Set(w.positions)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      ]),
    );
    let left = [...open.values()].reduce((n, ps) => n + ps.length, 0);
    if (left === 0) return found;
    const done = new AbortController();
    const stop = AbortSignal.any([
      done.signal,
      AbortSignal.timeout(opts.readTimeoutMs ?? 30_000),
      ...(signal ? [signal] : []),
    ]);
    try {
      await readRanges({
        kafka,
        topic,
        ranges: [...positions].map(([partition, w]) => ({ partition, start: open.get(partition)![0]!, end: w.end })),
        clientId: opts.clientId ?? 'fulfilment-lag',
        concurrency: positions.size,
        signal: stop,
        onRecord: ({ partition, record }) => {
          const waiting = open.get(partition) ?? [];
          const offset = BigInt(record.offset);
          while (waiting.length > 0 && waiting[0]! <= offset) {
            found.set(keyOf(topic, partition, waiting.shift()!), Number(record.timestamp));
            left -= 1;
          }
          if (left === 0) done.abort();
        },
      });
    } catch (err) {
      // Stopped once every position was answered, or by the timeout: what was seen is kept.
      if (!(err instanceof ReadInterrupted) || signal?.aborted) throw err;
    }
    return found;
  }

  return {
    async measure(groups, topic, signal) {
      const at = new Date();
      const ends = await admin.partitionOffsets(topic);
      if (!ends) throw new TopicNotFound(topic);
      const partitions: PartitionLag[] = [];
      for (const group of groups) {
        const committed = await admin.groupOffsets(group, topic);
        for (const o of ends) {
          const p: PartitionLag = {
            group,
            topic,
            partition: o.partition,
            committed: committed.get(o.partition),
            start: o.low,
            end: o.high,
            behind: 0n,
            oldestTimestampMs: undefined,
          };
          const next = position(p);
          p.behind = p.end > next ? p.end - next : 0n;
          partitions.push(p);
        }
      }
      partitions.sort((a, b) => (a.group === b.group ? a.partition - b.partition : a.group < b.group ? -1 : 1));

      // Oldest records not yet known: one pass over each partition from its lowest unknown position.
      const kept = new Map<string, number>();
      const toRead = new Map<number, { positions: bigint[]; end: bigint }>();
      for (const p of partitions) {
        if (p.behind === 0n) continue;
        const key = keyOf(topic, p.partition, position(p));
        const cached = timestamps.get(key);
        if (cached !== undefined) kept.set(key, cached);
        else {
          const w = toRead.get(p.partition) ?? { positions: [], end: p.end };
          w.positions.push(position(p));
          toRead.set(p.partition, w);
        }
      }
      for (const [key, ts] of await readOldest(topic, toRead, signal)) kept.set(key, ts);
      for (const p of partitions)
        if (p.behind > 0n) p.oldestTimestampMs = kept.get(keyOf(topic, p.partition, position(p)));
      // Only the current positions stay cached: the cache is bounded by groups × partitions.
      timestamps = new Map([...timestamps].filter(([k]) => !k.startsWith(`${topic}/`)).concat([...kept]));
      return { at, partitions };
    },
    close: () => admin.disconnect(),
  };
}
