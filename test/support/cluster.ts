/**
 * The failover suite's view of the stack's three-node Kafka (STACK_KAFKA=cluster; `npm test` runs the suite in a
 * network namespace with a stack of its own): which node leads what, faulting and restoring a node, and waiting for
 * the cluster to be whole again. Every wait is for a condition the cluster's metadata shows.
 */
import type { Kafka } from 'kafkajs';
import {
  clusterNodes,
  partitionPlacement,
  planFromEnv,
  stackKafkaNode,
  type NodeAction,
  type PartitionPlacement,
  type StackPlan,
} from '../../tools/stack/index.js';
import { uniqueSuffix, waitFor } from './harness.js';

/** The stack's plan; fails the file at once, saying how to run it, when the stack runs no cluster. */
export function clusterPlan(): StackPlan {
  const plan = planFromEnv();
  if (plan.kafka.kind !== 'cluster' || plan.kafka.external)
    throw new Error(
      "the failover suite needs the stack's Kafka cluster: `npm test` runs it in a namespace of its own; by hand, `STACK_KAFKA=cluster npm run stack -- up` and `STACK_KAFKA=cluster npx vitest run --project failover`",
    );
  return plan;
}

export const placement = (topics: string[]): Promise<PartitionPlacement[]> => partitionPlacement(clusterPlan(), topics);

/** The node leading `partition` of `topic` now (waits while it has none). */
export async function leaderOf(topic: string, partition: number): Promise<number> {
  return waitFor(
    `a leader of ${topic}:${partition}`,
    async () => {
      const p = (await placement([topic])).find((x) => x.partition === partition);
      return p && p.leader >= 0 ? p.leader : undefined;
    },
    60_000,
    200,
  );
}

/** Faults or restores a node as an operator would (`npm run stack -- kafka-node <action> <id>`). */
export const node = (action: NodeAction, id: number): Promise<void> => stackKafkaNode(action, id);

/** Waits until every node runs and every partition of `topics` has a leader and all its replicas in sync. */
export async function whole(topics: string[], timeoutMs = 180_000): Promise<void> {
  await waitFor(
    `every node up and every replica of ${topics.join(', ')} in sync`,
    async () => {
      const nodes = await clusterNodes(clusterPlan());
      if (nodes.some((n) => n.state !== 'running')) return false;
      const parts = await placement(topics);
      return parts.length > 0 && parts.every((p) => p.leader >= 0 && p.isr.length === p.replicas.length);
    },
    timeoutMs,
    250,
  );
}

/** Waits until no partition of `topics` is led by `id` (its leaderships moved after a kill or stop). */
export async function ledElsewhere(topics: string[], id: number, timeoutMs = 120_000): Promise<void> {
  await waitFor(
    `the partitions node ${id} led to have new leaders`,
    async () => (await placement(topics)).every((p) => p.leader >= 0 && p.leader !== id),
    timeoutMs,
    100,
  );
}

/**
 * Every record of `topic`, read from the start up to the end offsets it has now: each value's text, with how often it
 * is there. A consumer of its own group, restarted by kafkajs through any fault.
 */
export async function readWhole(kafka: Kafka, topic: string): Promise<Map<string, number>> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)]));
  await admin.disconnect();
  const counts = new Map<string, number>();
  const next = new Map<number, bigint>();
  const consumer = kafka.consumer({ groupId: uniqueSuffix('read-whole'), allowAutoTopicCreation: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      const at = BigInt(message.offset);
      if (at < (next.get(partition) ?? 0n)) return;
      next.set(partition, at + 1n);
      const v = message.value?.toString() ?? '';
      counts.set(v, (counts.get(v) ?? 0) + 1);
    },
  });
  try {
    await waitFor(
      `every record of ${topic}`,
      () => [...ends].every(([p, end]) => end === 0n || (next.get(p) ?? 0n) >= end),
      180_000,
      100,
    );
  } finally {
    await consumer.disconnect();
  }
  return counts;
}
