/**
 * Topic and consumer-group look-ups behind the port: partition offsets, offsets at a time, whether a group is
 * idle; and the CLI's few topic changes (create a topic, delete a partition's prefix). Offsets are bigints;
 * partitions come back sorted. One connection per TopicAdmin, closed by its owner.
 */
import type { Admin, ITopicConfig, Kafka } from 'kafkajs';
import { sleep } from '../../base/sleep.js';

export interface PartitionOffsets {
  partition: number;
  /** Oldest offset still held (log start). */
  low: bigint;
  /** Next offset to be written (high watermark). */
  high: bigint;
}

/** A consumer group as the broker describes it. */
export interface GroupActivity {
  /** Broker state: `Empty`, `Dead` (unknown group), `Stable`, `PreparingRebalance`, … */
  state: string;
  members: number;
  /** No member consumes as this group (`Empty` or `Dead`): a new member would get every partition. */
  idle: boolean;
}

export interface TopicAdmin {
  topicExists(topic: string): Promise<boolean>;
  /** Every partition of `topic` with its low and high watermark; undefined when the topic does not exist. */
  partitionOffsets(topic: string): Promise<PartitionOffsets[] | undefined>;
  /** For every partition, the first offset whose record timestamp is ≥ `at` (the high watermark when none is). */
  offsetsAt(topic: string, at: Date): Promise<Map<number, bigint>>;
  groupActivity(group: string): Promise<GroupActivity>;
  /** `group`'s committed offset of each partition of `topic` that has one (partitions without one are left out). */
  groupOffsets(group: string, topic: string): Promise<Map<number, bigint>>;
  /** Writes `group`'s committed offsets of `topic`; the broker refuses it while the group has members. */
  setGroupOffsets(group: string, topic: string, offsets: Map<number, bigint>): Promise<void>;
  deleteGroup(group: string): Promise<void>;
  /**
   * Creates `topic` unless it exists, with `replicationFactor` replicas (unset: the brokers' default); `config` holds
   * topic-level settings such as `cleanup.policy`. True when this call created it.
   */
  createTopic(
    topic: string,
    opts: { partitions: number; replicationFactor?: number; config?: Record<string, string> },
  ): Promise<boolean>;
  /**
   * Deletes, in every partition named, the records below its offset (Kafka's DeleteRecords): the partition's log
   * start moves up to that offset. Kafka can delete only such a prefix of a partition, never records in between.
   * Resolves with each partition's log start afterwards.
   */
  deleteRecordsBefore(topic: string, offsets: Map<number, bigint>): Promise<Map<number, bigint>>;
  disconnect(): Promise<void>;
}

export async function connectAdmin(kafka: Kafka): Promise<TopicAdmin> {
  const admin: Admin = kafka.admin();
  await admin.connect();
  return {
    topicExists: async (topic) => (await admin.listTopics()).includes(topic),
    async partitionOffsets(topic) {
      if (!(await admin.listTopics()).includes(topic)) return undefined;
      const offsets = await admin.fetchTopicOffsets(topic);
      return offsets
        .map((o) => ({ partition: o.partition, low: BigInt(o.low), high: BigInt(o.high) }))
        .sort((a, b) => a.partition - b.partition);
    },
    async offsetsAt(topic, at) {
      const found = await admin.fetchTopicOffsetsByTimestamp(topic, at.getTime());
      return new Map(found.map((o) => [o.partition, BigInt(o.offset)]));
    },
    async groupActivity(group) {
      const { groups } = await admin.describeGroups([group]);
      const state = groups[0]?.state ?? 'Dead';
      return { state, members: groups[0]?.members.length ?? 0, idle: state === 'Empty' || state === 'Dead' };
    },
    async groupOffsets(group, topic) {
      const [found] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
      return new Map(
        (found?.partitions ?? [])
          .map((p) => [p.partition, BigInt(p.offset)] as const)
          .filter(([, offset]) => offset >= 0n),
      );
    },
    setGroupOffsets: (group, topic, offsets) =>
      admin.setOffsets({
        groupId: group,
        topic,
        partitions: [...offsets].map(([partition, offset]) => ({ partition, offset: offset.toString() })),
      }),
    deleteGroup: async (group) => void (await admin.deleteGroups([group])),
    createTopic: (topic, opts) =>
      createTopicsWithLeaders(admin, [
        {
          topic,
          numPartitions: opts.partitions,
          // -1: the brokers' default.replication.factor.
          replicationFactor: opts.replicationFactor ?? -1,
          configEntries: Object.entries(opts.config ?? {}).map(([name, value]) => ({ name, value })),
        },
      ]),
    async deleteRecordsBefore(topic, offsets) {
      const partitions = [...offsets].map(([partition, offset]) => ({ partition, offset: offset.toString() }));
      if (partitions.length > 0) {
        // kafkajs looks up the partitions' leaders before it loads the topic's metadata: load it first.
        await admin.fetchTopicOffsets(topic);
        await admin.deleteTopicRecords({ topic, partitions });
      }
      const after = await admin.fetchTopicOffsets(topic);
      return new Map(after.filter((o) => offsets.has(o.partition)).map((o) => [o.partition, BigInt(o.low)]));
    },
    disconnect: () => admin.disconnect(),
  };
}

/** Runs `work` with a connected TopicAdmin, disconnected afterwards whatever happens. */
export async function withAdmin<T>(kafka: Kafka, work: (admin: TopicAdmin) => Promise<T>): Promise<T> {
  const admin = await connectAdmin(kafka);
  try {
    return await work(admin);
  } finally {
    await admin.disconnect();
  }
}

/** Answers that mean "not yet": a broker that has not learnt of a new topic, of its leaders, or not taken the lead yet. */
const NOT_YET = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE', 'NOT_LEADER_FOR_PARTITION']);

/**
 * Creates `topics` (those that exist already are left alone; false when none was created) and waits until every
 * partition's leader serves it: its offsets can be read. kafkajs's own wait (`waitForLeaders`) retries only
 * LEADER_NOT_AVAILABLE in the metadata, but a broker may name itself leader a moment before it acts as one
 * (NOT_LEADER_FOR_PARTITION), and one that has just restarted may not know a new topic yet
 * (UNKNOWN_TOPIC_OR_PARTITION): both are waited out too, for up to `timeoutMs`.
 */
export async function createTopicsWithLeaders(
  admin: Admin,
  topics: ITopicConfig[],
  timeoutMs = 30_000,
): Promise<boolean> {
  const created = await admin.createTopics({ topics, waitForLeaders: false });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const meta = await admin.fetchTopicMetadata({ topics: topics.map((t) => t.topic) });
      const led =
        meta.topics.length === topics.length &&
        meta.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0));
      if (led) {
        for (const t of topics) await admin.fetchTopicOffsets(t.topic);
        return created;
      }
      if (Date.now() > deadline)
        throw new Error(
          `topics ${topics.map((t) => t.topic).join(', ')} have no leader for every partition after ${timeoutMs} ms`,
        );
    } catch (err) {
      if (!NOT_YET.has((err as { type?: string }).type ?? '') || Date.now() > deadline) throw err;
    }
    await sleep(100);
  }
}
