/**
 * Reads bounded offset ranges of a topic. Ranges are fixed before reading starts (`end` exclusive, normally the
 * high watermark captured at start), so a read always finishes even while producers keep writing.
 *
 * Rules a reader must not break:
 * - a record is handed over only when its offset is ≥ the partition's next position and < its end, and the next
 *   position only moves forward; whatever position the client fetches from (earliest, a seek, a rebalance), no
 *   record in a range is handed over twice or skipped;
 * - without `group` the reader uses a throwaway group that never commits and is deleted afterwards: reading
 *   leaves no consumer-group state behind;
 * - with `group`, that group must have no members (GroupInUse otherwise); the reader seeks to the range starts
 *   (its earlier committed offsets do not matter), commits the starts at once and progress as it is made, so the
 *   group's lag shows what is left; no other group's offsets are ever touched.
 */
import { randomUUID } from 'node:crypto';
import type { EachBatchPayload, Kafka } from 'kafkajs';
import { connectAdmin, type TopicAdmin } from './admin.js';
import type { ConsumedRecord } from './records.js';

/** Session timeout of the reader's group member, ms: a reader that died holds its group this long. */
export const READER_SESSION_TIMEOUT_MS = 60_000;

export interface OffsetRange {
  partition: number;
  /** First offset to read. */
  start: bigint;
  /** First offset not to read. */
  end: bigint;
}

export interface ReadRecord {
  topic: string;
  partition: number;
  record: ConsumedRecord;
}

export interface ReadOptions {
  kafka: Kafka;
  topic: string;
  ranges: OffsetRange[];
  /** Read as this consumer group and commit progress to it. Omitted: a throwaway group, nothing committed. */
  group?: string;
  /** Prefix of the throwaway group's id. */
  clientId?: string;
  /** Partitions handled at once (records of one partition are always handed over in order). Default 1. */
  concurrency?: number;
  /** How often progress is committed when reading as `group`, ms. Default 1000. */
  commitEveryMs?: number;
  /** Aborting it stops the read with ReadInterrupted once the record in hand is finished. */
  signal?: AbortSignal;
  /** Called whenever a partition's next position moves forward (every record before it is finished). */
  onAdvance?(partition: number, next: bigint): void;
  /** Handles one record; `heartbeat` keeps the group membership alive during long waits. A throw stops the read. */
  onRecord(record: ReadRecord, control: { heartbeat(): Promise<void> }): Promise<void> | void;
}

/** The read was stopped by its signal; positions reached so far are kept (committed when reading as a group). */
export class ReadInterrupted extends Error {
  override name = 'ReadInterrupted';
}

/** The group asked to read as has members: a second member would take partitions away from the read. */
export class GroupInUse extends Error {
  override name = 'GroupInUse';
  constructor(
    readonly group: string,
    readonly state: string,
    readonly members: number,
  ) {
    super(`consumer group ${group} has ${members} active member(s) (state ${state})`);
  }
}

/** Reads every range to its end, or until `onRecord` throws or `signal` aborts. Returns the positions reached. */
export async function readRanges(opts: ReadOptions): Promise<Map<number, bigint>> {
  const { kafka, topic } = opts;
  const todo = new Map<number, { next: bigint; end: bigint }>();
  for (const r of opts.ranges) todo.set(r.partition, { next: r.start, end: r.end });
  const reached = () => new Map([...todo].map(([p, t]) => [p, t.next]));
  const open = () => [...todo.values()].some((t) => t.next < t.end);
  if (!open()) return reached();
  if (opts.signal?.aborted) throw new ReadInterrupted('interrupted before reading');

  const admin = await connectAdmin(kafka);
  const groupId = opts.group ?? `${opts.clientId ?? 'fulfilment-cli'}-reader-${randomUUID()}`;
  try {
    if (opts.group) await checkGroupIdle(admin, opts.group);
    const consumer = readerConsumer(kafka, groupId);
    const read = settleOnce();
    // A partition at its end is paused; any other is sought to where the read is.
    const seekOrPause = (partition: number) => {
      const t = todo.get(partition);
      if (!t || t.next >= t.end) consumer.pause([{ topic, partitions: [partition] }]);
      else consumer.seek({ topic, partition, offset: t.next.toString() });
    };
    const advance = (partition: number, position: bigint) => {
      const t = todo.get(partition);
      if (!t || position <= t.next) return;
      t.next = position < t.end ? position : t.end;
      opts.onAdvance?.(partition, t.next);
      if (t.next >= t.end) consumer.pause([{ topic, partitions: [partition] }]);
      if (!open()) read.stop();
    };
    const onAbort = () => read.stop(new ReadInterrupted('interrupted'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      for (const partition of e.payload.memberAssignment[topic] ?? []) seekOrPause(partition);
    });
    // A fetch that held only control records or aborted messages never reaches eachBatch; it still moves the position.
    consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
      if (e.payload.topic === topic && e.payload.batchSize === 0)
        advance(e.payload.partition, BigInt(e.payload.lastOffset) + 1n);
    });
    consumer.on(consumer.events.CRASH, (e) => {
      if (!e.payload.restart) read.stop(e.payload.error);
    });
    const commits = groupCommits(consumer, topic, todo);

    await consumer.connect();
    let commitTimer: NodeJS.Timeout | undefined;
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        partitionsConsumedConcurrently: opts.concurrency ?? 1,
        eachBatch: (payload) => handBatch(payload, { opts, todo, read, advance }),
      });
      for (const partition of todo.keys()) seekOrPause(partition);
      if (opts.group)
        commitTimer = setInterval(() => void commits.commit().catch(() => undefined), opts.commitEveryMs ?? 1000);
      await read.finished;
    } finally {
      if (commitTimer) clearInterval(commitTimer);
      opts.signal?.removeEventListener('abort', onAbort);
      let lastCommit: unknown;
      if (opts.group) await commits.commit().catch((err: unknown) => (lastCommit = err));
      await consumer.disconnect();
      if (opts.group && lastCommit !== undefined) {
        // The member left, so the group is empty: the admin API may now write the final positions.
        await admin.setGroupOffsets(groupId, topic, reached()).catch(() => undefined);
      }
      if (!opts.group) await admin.deleteGroup(groupId).catch(() => undefined);
    }
    return reached();
  } finally {
    await admin.disconnect();
  }
}

/** The reader's consumer: no topic created, a short poll, kafkajs's own retries kept small. */
function readerConsumer(kafka: Kafka, groupId: string) {
  return kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    sessionTimeout: READER_SESSION_TIMEOUT_MS,
    heartbeatInterval: 3_000,
    maxWaitTimeInMs: 500,
    retry: { retries: 5, initialRetryTime: 300, maxRetryTime: 5_000 },
  });
}

/** The read's end: `stop()` (done) or `stop(err)` settles it once; it may settle while the consumer is still starting. */
function settleOnce() {
  let settle!: (err?: unknown) => void;
  const finished = new Promise<void>((resolve, reject) => {
    settle = (err?: unknown) => (err === undefined ? resolve() : reject(err));
  });
  // The rejection is observed where the read awaits it, not lost.
  finished.catch(() => undefined);
  let stopped = false;
  return {
    finished,
    stopped: () => stopped,
    stop(err?: unknown) {
      if (stopped) return;
      stopped = true;
      settle(err);
    },
  };
}

/** Commits the group's positions that moved since the last commit. */
function groupCommits(
  consumer: ReturnType<typeof readerConsumer>,
  topic: string,
  todo: Map<number, { next: bigint; end: bigint }>,
) {
  let committed = new Map<number, bigint>();
  return {
    async commit(): Promise<void> {
      const entries = [...todo]
        .filter(([p, t]) => committed.get(p) !== t.next)
        .map(([p, t]) => ({ topic, partition: p, offset: t.next.toString() }));
      if (entries.length === 0) return;
      await consumer.commitOffsets(entries);
      committed = new Map([...committed, ...entries.map((e) => [e.partition, BigInt(e.offset)] as const)]);
    },
  };
}

/** Hands a fetched batch's records in the range to `onRecord`, in order; a throw stops the read. */
async function handBatch(
  { batch, heartbeat, isRunning }: EachBatchPayload,
  run: {
    opts: ReadOptions;
    todo: Map<number, { next: bigint; end: bigint }>;
    read: ReturnType<typeof settleOnce>;
    advance: (partition: number, position: bigint) => void;
  },
): Promise<void> {
  const { opts, read, advance } = run;
  const t = run.todo.get(batch.partition);
  if (!t) return;
  for (const m of batch.messages) {
    if (read.stopped() || !isRunning()) return;
    const offset = BigInt(m.offset);
    if (offset < t.next) continue;
    if (offset >= t.end) break;
    const record: ConsumedRecord = {
      key: m.key ?? null,
      value: m.value ?? null,
      headers: m.headers,
      offset: m.offset,
      timestamp: m.timestamp,
    };
    try {
      await opts.onRecord({ topic: opts.topic, partition: batch.partition, record }, { heartbeat });
    } catch (err) {
      read.stop(err);
      return;
    }
    advance(batch.partition, offset + 1n);
  }
  // Every record of the batch was handed over or lies outside the range: the batch's tail is passed too.
  advance(batch.partition, BigInt(batch.lastOffset()) + 1n);
}

async function checkGroupIdle(admin: TopicAdmin, group: string): Promise<void> {
  const { idle, state, members } = await admin.groupActivity(group);
  if (!idle) throw new GroupInUse(group, state, members);
}
