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

/** The node that leads the most partitions of `topics` now. */
export async function busiestNode(topics: string[]): Promise<number> {
  const led = new Map<number, number>();
  for (const p of await placement(topics)) if (p.leader >= 0) led.set(p.leader, (led.get(p.leader) ?? 0) + 1);
  const [top] = [...led].sort((a, b) => b[1] - a[1]);
  if (!top) throw new Error(`no partition of ${topics.join(', ')} has a leader`);
  return top[0];
}

/** Partitions of `__consumer_offsets` on the stack's cluster (offsets.topic.num.partitions). */
const OFFSETS_PARTITIONS = 10;

/**
 * The node coordinating consumer group `groupId`: the leader of its partition of `__consumer_offsets`, which Kafka
 * picks as Java's `groupId.hashCode()`, made non-negative, modulo the topic's partitions.
 */
export async function coordinatorOf(groupId: string): Promise<number> {
  let h = 0;
  for (let i = 0; i < groupId.length; i += 1) h = (Math.imul(31, h) + groupId.charCodeAt(i)) | 0;
  return leaderOf('__consumer_offsets', (h & 0x7fffffff) % OFFSETS_PARTITIONS);
}

/** Faults or restores a node as an operator would (`npm run stack -- kafka-node <action> <id>`). */
export const node = (action: NodeAction, id: number): Promise<void> => stackKafkaNode(action, id);

/**
 * Freezes node `id`'s JVM (SIGSTOP): its connections stay open and nothing is answered, so a request sent to it stays
 * in flight until the node is killed (a kill ends a frozen process) or thawed. Returns the thaw, for a case that ends
 * early: a frozen node counts as running, and restoreNodes() would leave it so.
 */
export async function freeze(id: number): Promise<() => void> {
  const pid = (await clusterNodes(clusterPlan())).find((n) => n.id === id && n.state === 'running')?.pid;
  if (!pid) throw new Error(`node ${id} is not running: nothing to freeze`);
  process.kill(pid, 'SIGSTOP');
  return () => {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // Gone already (killed): nothing to thaw.
    }
  };
}

/** Starts every node that is not running (a case's clean-up, whatever it left). */
export async function restoreNodes(): Promise<void> {
  for (const n of await clusterNodes(clusterPlan())) if (n.state !== 'running') await node('start', n.id);
}

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
