/**
 * The consumer group member behind the port: joins the group, hands each fetched partition batch to the owner
 * as a PartitionBatch, and keeps the member alive — a consumer that crashes is restarted (by kafkajs when it can,
 * by this supervisor otherwise), always after the owner's jittered delay, never left stopped.
 *
 * Rules a reader must not break:
 * - kafkajs rejoins the group only after every batch handler has returned, and fetches nothing for any partition
 *   until every batch of the previous fetch has returned: handlers must not wait out long backoffs;
 * - commits are made through the batch's own payload, under the generation it was fetched in, so the broker
 *   refuses them once the partition was revoked and stale work never commits over a new owner.
 */
import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import { KAFKA_RETRY } from '../../base/retry-policies.js';
import { MembershipLost, type ConsumedRecord } from './records.js';
import { sleep } from '../../base/sleep.js';

/** One fetched batch of one partition, as the owner sees it. */
export interface PartitionBatch {
  topic: string;
  partition: number;
  records: ConsumedRecord[];
  /** Everything before `nextOffset` is done: a refetch of this partition starts there. */
  resolve(nextOffset: string): void;
  /** Commits `nextOffset` under this batch's generation; MembershipLost once that generation is over. */
  commit(nextOffset: string): Promise<void>;
  /** Keeps the membership alive through long work; MembershipLost once it is over. */
  heartbeat(): Promise<void>;
  /** False once the consumer stopped running, or a seek made this batch stale: start nothing more. */
  isCurrent(): boolean;
}

/** What the supervisor tells its owner. */
export interface SupervisorEvents {
  joined(partitions: number[]): void;
  committed(partition: number, offset: string): void;
  /** A crashed consumer will be restarted after `delayMs`. */
  restarting(err: Error, delayMs: number): void;
  crashed(err: Error): void;
  restartFailed(err: Error): void;
  /** The consumer stopped for good: a failure no restart can cure (refused credentials, no authorisation). */
  gaveUp(err: Error): void;
}

/** Where the member stands, for readiness (src/base/health.ts). */
export interface MemberStatus {
  /** In the group now: joined, not crashed since, not stopped. */
  joined: boolean;
  /** Last time the broker answered this member (join, heartbeat, commit), ms since the epoch; 0 before any. */
  lastContactAt: number;
  /** Why it is not in the group (not joined yet, crashed and restarting, gave up, stopped). */
  reason?: string;
}

export interface ConsumerSupervisorOptions {
  kafka: Kafka;
  topic: string;
  groupId: string;
  sessionTimeoutMs: number;
  /** Most bytes fetched per partition at a time; bounds memory. */
  maxBytesPerPartition: number;
  /** Most bytes one fetch returns over all partitions; bounds memory. */
  maxBytes?: number;
  partitionsConcurrently: number;
  /** Delays before restarting a crashed consumer; reset once it joined again. */
  restartDelays: { next(): number; reset(): void };
  onBatch(batch: PartitionBatch): Promise<void>;
  events: SupervisorEvents;
  /** Aborted when the owner stops: no restart after that. */
  stopping: AbortSignal;
}

export interface ConsumerSupervisor {
  /** Connects, subscribes and starts consuming; may be called again after it failed. */
  start(): Promise<void>;
  pause(partition: number): void;
  resume(partition: number): void;
  /** The next fetch of `partition` starts at `offset` (nothing is committed by it). */
  seek(partition: number, offset: string): void;
  /** Stops fetching every partition (before the owner lets its batches settle). */
  pauseAll(): void;
  /** Leaves the group and disconnects. */
  disconnect(): Promise<void>;
  /** Interval of the member's heartbeats, milliseconds. */
  readonly heartbeatIntervalMs: number;
  status(): MemberStatus;
}

/** The longest a fetch waits for records (and kafkajs idles while every partition is paused), milliseconds. */
export const FETCH_MAX_WAIT_MS = 500;

/** Failures no restart cures: the broker refused this client's credentials or authorisation. */
const PERMANENT_TYPES = new Set([
  'SASL_AUTHENTICATION_FAILED',
  'TOPIC_AUTHORIZATION_FAILED',
  'GROUP_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
]);

export function isPermanentKafkaError(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 5 && e; i += 1) {
    const { type, name } = e as { type?: unknown; name?: unknown };
    if ((typeof type === 'string' && PERMANENT_TYPES.has(type)) || name === 'KafkaJSSASLAuthenticationError')
      return true;
    e = (e as { cause?: unknown; originalError?: unknown }).cause ?? (e as { originalError?: unknown }).originalError;
  }
  return false;
}

/** Group-membership errors: this member's generation is over, so its partitions may belong to someone else. */
const MEMBERSHIP_LOST = new Set([
  'REBALANCE_IN_PROGRESS',
  'ILLEGAL_GENERATION',
  'UNKNOWN_MEMBER_ID',
  'FENCED_INSTANCE_ID',
]);

function asMembershipLost(err: unknown): MembershipLost | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e; i += 1) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && MEMBERSHIP_LOST.has(type)) return new MembershipLost(type, { cause: e });
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Over 80 lines: a factory whose methods and the consumer's event handlers share one closure's state (the consumer,
 * its restarts, its membership), each inner function a named step.
 */
export function createConsumerSupervisor(opts: ConsumerSupervisorOptions): ConsumerSupervisor {
  const { topic, stopping, events, restartDelays } = opts;
  const member: MemberStatus = { joined: false, lastContactAt: 0, reason: 'not joined the group yet' };
  const down = (reason: string) => Object.assign(member, { joined: false, reason });
  let gaveUp = false;
  const giveUp = (err: Error) => {
    if (gaveUp) return;
    gaveUp = true;
    down(`consumer gave up: ${err.message}`);
    events.gaveUp(err);
  };
  const heartbeatIntervalMs = Math.min(3_000, Math.floor(opts.sessionTimeoutMs / 3));
  const consumer: Consumer = opts.kafka.consumer({
    groupId: opts.groupId,
    sessionTimeout: opts.sessionTimeoutMs,
    heartbeatInterval: heartbeatIntervalMs,
    maxBytesPerPartition: opts.maxBytesPerPartition,
    ...(opts.maxBytes === undefined ? {} : { maxBytes: opts.maxBytes }),
    // How long a fetch waits for records, and how long kafkajs sleeps while every partition is paused (kafkajs's
    // default is 5 s): a partition resumed once its read-ahead has room is fetched within this, not 5 s later.
    maxWaitTimeInMs: FETCH_MAX_WAIT_MS,
    allowAutoTopicCreation: false,
    // kafkajs retries fetches and joins itself (jittered); when that is exhausted the consumer crashes and is
    // restarted after the owner's delay.
    retry: {
      retries: KAFKA_RETRY.requests,
      initialRetryTime: KAFKA_RETRY.initialRetryTime,
      maxRetryTime: KAFKA_RETRY.maxRetryTime,
      restartOnFailure: async (err) => {
        if (stopping.aborted) return false;
        if (isPermanentKafkaError(err)) {
          giveUp(err);
          return false;
        }
        const delayMs = restartDelays.next();
        down(`consumer failed (${err.name}: ${err.message}); restarting it in ${delayMs} ms`);
        events.restarting(err, delayMs);
        await sleep(delayMs, stopping);
        return !stopping.aborted;
      },
    },
  });

  const toBatch = (payload: EachBatchPayload): PartitionBatch => {
    const { batch } = payload;
    return {
      topic: batch.topic,
      partition: batch.partition,
      records: batch.messages.map((m) => ({
        key: m.key,
        value: m.value,
        headers: m.headers,
        offset: m.offset,
        timestamp: m.timestamp,
      })),
      resolve: (nextOffset) => payload.resolveOffset((BigInt(nextOffset) - 1n).toString()),
      async commit(nextOffset) {
        try {
          await payload.commitOffsetsIfNecessary({
            topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: nextOffset }] }],
          });
        } catch (err) {
          throw asMembershipLost(err) ?? err;
        }
      },
      async heartbeat() {
        try {
          await payload.heartbeat();
        } catch (err) {
          throw asMembershipLost(err) ?? err;
        }
      },
      isCurrent: () => payload.isRunning() && !payload.isStale(),
    };
  };

  const run = () =>
    consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: opts.partitionsConcurrently,
      eachBatch: async (payload) => {
        // A batch handed back with a membership error makes kafkajs rejoin at once.
        await opts.onBatch(toBatch(payload));
      },
    });

  let restarting = false;
  /** Restarts a consumer kafkajs gave up on (a non-retriable crash), after jittered delays, until it runs. */
  async function restart(): Promise<void> {
    if (restarting) return;
    restarting = true;
    try {
      while (!stopping.aborted) {
        const delayMs = restartDelays.next();
        events.restarting(new Error('consumer stopped after a non-retriable error'), delayMs);
        await sleep(delayMs, stopping);
        if (stopping.aborted) return;
        try {
          await consumer.connect();
          await run();
          return;
        } catch (err) {
          events.restartFailed(err as Error);
          if (isPermanentKafkaError(err)) return giveUp(err as Error);
        }
      }
    } finally {
      restarting = false;
    }
  }

  let listening = false;
  return {
    heartbeatIntervalMs,
    async start() {
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      if (!listening) {
        listening = true;
        consumer.on(consumer.events.GROUP_JOIN, (e) => {
          restartDelays.reset();
          Object.assign(member, { joined: true, lastContactAt: Date.now(), reason: undefined });
          events.joined(Object.values(e.payload.memberAssignment).flat());
        });
        consumer.on(consumer.events.HEARTBEAT, () => (member.lastContactAt = Date.now()));
        consumer.on(consumer.events.STOP, () => down(stopping.aborted ? 'stopping' : 'consumer stopped'));
        consumer.on(consumer.events.COMMIT_OFFSETS, (e) => {
          member.lastContactAt = Date.now();
          for (const t of e.payload.topics) for (const p of t.partitions) events.committed(p.partition, p.offset);
        });
        consumer.on(consumer.events.CRASH, (e) => {
          const { error, restart: willRestart } = e.payload;
          if (stopping.aborted) return;
          down(
            `consumer crashed (${error.name}: ${error.message}); ${willRestart ? 'kafkajs restarts it' : 'restarting it'}`,
          );
          events.crashed(error);
          if (!willRestart && isPermanentKafkaError(error)) giveUp(error);
          else if (!willRestart && !gaveUp) void restart();
        });
      }
      await run();
    },
    pause: (partition) => consumer.pause([{ topic, partitions: [partition] }]),
    resume(partition) {
      try {
        consumer.resume([{ topic, partitions: [partition] }]);
      } catch {
        // not running (stopping, or crashed and restarting): nothing to resume
      }
    },
    seek(partition, offset) {
      try {
        consumer.seek({ topic, partition, offset });
      } catch {
        // not running: the partition is fetched from its committed offset when it runs again
      }
    },
    pauseAll() {
      try {
        consumer.pause([{ topic }]);
      } catch {
        // not running: nothing to pause
      }
    },
    disconnect: () => consumer.disconnect(),
    status: () => ({ ...member }),
  };
}
