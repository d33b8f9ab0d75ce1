/**
 * The service's Kafka topics, created or grown to what the configuration says: ORDERS_TOPIC with
 * ORDERS_TOPIC_PARTITIONS, DLQ_TOPIC with DLQ_TOPIC_PARTITIONS, STATUS_TOPIC with STATUS_TOPIC_PARTITIONS, each with KAFKA_REPLICATION_FACTOR replicas (unset:
 * the broker's default.replication.factor). Idempotent; used by `fulfilment provision` and the local stack.
 * Partitions are only ever added (Kafka cannot remove them); an existing topic's replication is left as it is.
 */
import { createTopicsWithLeaders } from '../../adapters/kafka/admin.js';
import type { Kafka } from '../../adapters/kafka/client.js';

/** Partitions of the dead-letter topic when it is created. */
export const DLQ_TOPIC_PARTITIONS = 3;

export interface TopicSpec {
  topic: string;
  numPartitions: number;
}

export interface TopicsResult {
  created: TopicSpec[];
  grown: { topic: string; from: number; to: number }[];
  unchanged: string[];
}

export function serviceTopics(c: {
  ORDERS_TOPIC: string;
  ORDERS_TOPIC_PARTITIONS: number;
  DLQ_TOPIC: string;
  STATUS_TOPIC: string;
  STATUS_TOPIC_PARTITIONS: number;
}): TopicSpec[] {
  return [
    { topic: c.ORDERS_TOPIC, numPartitions: c.ORDERS_TOPIC_PARTITIONS },
    { topic: c.DLQ_TOPIC, numPartitions: DLQ_TOPIC_PARTITIONS },
    { topic: c.STATUS_TOPIC, numPartitions: c.STATUS_TOPIC_PARTITIONS },
  ];
}

/** Creates the missing topics and grows those with fewer partitions than wanted. */
export async function ensureTopics(
  kafka: Kafka,
  wanted: TopicSpec[],
  replicationFactor?: number,
): Promise<TopicsResult> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = wanted.filter((t) => !existing.has(t.topic));
    if (missing.length) {
      // -1: the broker's default.replication.factor (CreateTopics v4+, Kafka 2.4+).
      await createTopicsWithLeaders(
        admin,
        missing.map((t) => ({ ...t, replicationFactor: replicationFactor ?? -1 })),
      );
    }
    const meta = await admin.fetchTopicMetadata({ topics: wanted.map((t) => t.topic) });
    const grown: TopicsResult['grown'] = [];
    for (const t of wanted) {
      const have = meta.topics.find((m) => m.name === t.topic)?.partitions.length ?? 0;
      if (have < t.numPartitions) {
        await admin.createPartitions({ topicPartitions: [{ topic: t.topic, count: t.numPartitions }] });
        grown.push({ topic: t.topic, from: have, to: t.numPartitions });
      }
    }
    const changed = new Set([...missing.map((t) => t.topic), ...grown.map((g) => g.topic)]);
    return { created: missing, grown, unchanged: wanted.map((t) => t.topic).filter((t) => !changed.has(t)) };
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
