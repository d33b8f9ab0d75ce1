/**
 * The bridge: a thin kafkajs consumer that hands each order event to the order's workflow and commits the
 * offset only after Temporal accepted it. No business logic lives here. Per record, top-down:
 *
 *   1. parse      — validate the envelope at the edge; malformed → dead-letter at once (permanent)
 *   2. dedupe hint — a recently accepted event id is skipped (an optimisation only; the workflow and the
 *                   store dedupe for real)
 *   3. route      — unknown event types are ignored and counted, never an error
 *   4. deliver    — signal-with-start the order's workflow; transient failures close the partition's backoff
 *                   gate (partition parked: paused and its batch ended, so other partitions keep flowing;
 *                   jittered backoff, one probe per delay), never dead-lettered
 *   4b. dead-letter — permanent failures go to the DLQ at once; one that cannot fit is written reduced
 *   5. commit     — only the contiguous prefix of finished offsets, every second and when the batch ends
 *
 * Within a partition, records run in lanes by order (lanes.ts): one slow order does not hold up the others,
 * one order's events stay in partition order, and no record starts more than `maxInFlight` records past the
 * oldest unfinished one. What is held in memory is bounded by the fetch size (`maxBytesPerPartition`).
 *
 * Rules a reader must not break:
 * - kafkajs rejoins the group only after every eachBatch call has returned, so a batch never leaves work
 *   running behind it, and commits are made only from inside the batch, under the generation it was fetched
 *   in: the broker refuses them once the partition was revoked, so stale work never commits over a new owner;
 * - a consumer that stops for any reason other than stop() is restarted (kafkajs restarts retriable crashes,
 *   the bridge restarts the rest), always after a jittered delay, and every crash is logged and counted.
 */
import { Partitioners, type Consumer, type ConsumerRunConfig, type EachBatchPayload, type Kafka, type KafkaMessage, type Producer } from 'kafkajs';
import { LRUCache } from 'lru-cache';
import { parseRecord, type ParsedRecord } from '../events/envelope.js';
import { DependencyUnavailableError, PermanentError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { Abandoned, BackoffGate, DEFAULT_TRANSIENT_RETRY, DelaySequence, sleep, type TransientRetry } from './backoff-gate.js';
import { publishDeadLetter, type DeadLetter } from '../dlq/dead-letter.js';
import { runInLanes } from './lanes.js';
import { KAFKA_RETRY } from '../retry-policies.js';
import { PartitionState, type PartitionControl, type PartitionGates } from './partition-state.js';
import type { OrderStarter } from './order-starter.js';

export type { TransientRetry } from './backoff-gate.js';

export interface BridgeOptions {
  kafka: Kafka;
  topic: string;
  dlqTopic: string;
  groupId: string;
  starter: OrderStarter;
  logger: Logger;
  metrics: Metrics;
  /** Concurrent lanes per partition; events of one order always share a lane. Default 8. */
  lanes?: number;
  /** Per partition, most records past the oldest unfinished one that may be started. Default 500. */
  maxInFlight?: number;
  /** Most bytes fetched per partition at a time (kafkajs maxBytesPerPartition); bounds memory. Default 1 MiB. */
  maxBytesPerPartition?: number;
  /** Partitions processed at once by this instance. Default 4. */
  partitionsConcurrently?: number;
  retry?: Partial<TransientRetry>;
  /** Consumer session timeout, milliseconds. Default 30000. */
  sessionTimeoutMs?: number;
  /** How many accepted event ids the dedupe hint remembers. Default 10000. */
  dedupeHintSize?: number;
  /** How often the finished prefix is committed while a batch runs, milliseconds. Default 1000. */
  commitIntervalMs?: number;
}

export interface Bridge {
  start(): Promise<void>;
  /** Stops fetching, lets in-flight records settle (abandoning backoff waits), commits the finished prefix, leaves the group. */
  stop(): Promise<void>;
  readonly consumer: Consumer;
}

interface Item {
  message: KafkaMessage;
  parsed: ParsedRecord | Error;
}

/** Thrown by a commit when this member no longer owns the partition (rebalance, expired session). */
class PartitionLost extends Error {
  override name = 'PartitionLost';
}

/** Group-membership errors: this member's generation is over, so its partitions may belong to someone else. */
const MEMBERSHIP_LOST = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'FENCED_INSTANCE_ID']);

/** The kafkajs error (anywhere in the cause chain) saying the membership is over, if it is one. */
function membershipLost(err: unknown): Error | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e; i += 1) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && MEMBERSHIP_LOST.has(type)) return e as Error;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export function createBridge(opts: BridgeOptions): Bridge {
  const { kafka, topic, dlqTopic, groupId, starter, metrics } = opts;
  const log = opts.logger.child({ component: 'bridge', group: groupId });
  const laneCount = opts.lanes ?? 8;
  const maxInFlight = Math.max(1, opts.maxInFlight ?? 500);
  const commitIntervalMs = opts.commitIntervalMs ?? 1000;
  const retryConfig: TransientRetry = { ...DEFAULT_TRANSIENT_RETRY, ...opts.retry };
  const sessionTimeout = opts.sessionTimeoutMs ?? 30_000;
  const heartbeatInterval = Math.min(3_000, Math.floor(sessionTimeout / 3));
  const stopping = new AbortController();
  /** Delays before restarting a crashed consumer; reset once it has joined the group again. */
  const restartDelays = new DelaySequence(retryConfig);

  const consumer = kafka.consumer({
    groupId,
    sessionTimeout,
    heartbeatInterval,
    maxBytesPerPartition: opts.maxBytesPerPartition ?? 1024 * 1024,
    allowAutoTopicCreation: false,
    // kafkajs retries fetches and joins itself (jittered); when that is exhausted the consumer "crashes" and is
    // restarted after the bridge's own jittered delay, counted as a retry of `consume`.
    retry: {
      retries: KAFKA_RETRY.requests,
      initialRetryTime: KAFKA_RETRY.initialRetryTime,
      maxRetryTime: KAFKA_RETRY.maxRetryTime,
      restartOnFailure: async (err) => {
        if (stopping.signal.aborted) return false;
        const delayMs = restartDelays.next();
        metrics.retries.inc({ operation: 'consume' });
        log.warn({ err: err.message, errorClass: err.name, delayMs }, 'consumer failed; restarting it after a delay');
        await sleep(delayMs, stopping.signal).catch(() => undefined);
        return !stopping.signal.aborted;
      },
    },
  });
  const producer: Producer = kafka.producer({
    allowAutoTopicCreation: false,
    // A dead-letter write that cannot land within ~10 s goes back to the partition's backoff gate, where waiting is
    // counted and can be abandoned on shutdown, rather than riding out a whole outage inside kafkajs.
    retry: { retries: KAFKA_RETRY.requests, initialRetryTime: KAFKA_RETRY.initialRetryTime, maxRetryTime: KAFKA_RETRY.maxRetryTime },
    // Dead-lettering is at-least-once like everything else; one request in flight keeps each partition's DLQ order.
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  const partitions = new Map<number, PartitionState>();
  const hint = new LRUCache<string, true>({ max: opts.dedupeHintSize ?? 10_000 });
  /** Batches running now; stop() waits for them so their final commits happen before the group is left. */
  const active = new Set<Promise<void>>();
  let ageTimer: NodeJS.Timeout | undefined;
  let stopped: Promise<void> | undefined;

  const control: PartitionControl = {
    pause: (partition) => consumer.pause([{ topic, partitions: [partition] }]),
    resume: (partition) => {
      try {
        consumer.resume([{ topic, partitions: [partition] }]);
      } catch {
        // the consumer is not running (stopping, or crashed and restarting): nothing to resume
      }
    },
  };

  function partitionState(partition: number): PartitionState {
    let p = partitions.get(partition);
    if (!p) {
      const park = () => p!.park();
      p = new PartitionState(partition, { deliver: gate('deliver', partition, park), deadLetter: gate('dead-letter', partition, park), commit: gate('commit', partition, park) }, control);
      partitions.set(partition, p);
    }
    return p;
  }

  function publishAges(): void {
    const now = Date.now();
    for (const [partition, { tracker }] of partitions) {
      const oldest = tracker.oldestPendingTimestamp();
      metrics.oldestUnprocessedAge.set(
        { group: groupId, topic, partition: String(partition) },
        oldest === undefined ? 0 : Math.max(0, (now - oldest) / 1000),
      );
    }
  }

  /** Lane key: the order for order events, the offset (a lane of its own, effectively) for everything else. */
  function laneKey(item: Item): string {
    if (item.parsed instanceof Error || item.parsed.kind !== 'order-event') return item.message.offset;
    return `${item.parsed.event.tenantId}/${item.parsed.event.orderId}`;
  }

  type Gates = PartitionGates;

  function gate(operation: string, partition: number, park: () => void): BackoffGate {
    return new BackoffGate(retryConfig, {
      onRetry: (err) => {
        metrics.retries.inc({ operation });
        metrics.failures.inc({ operation, error_class: err.name });
      },
      onBackoff: (err, delayMs) => {
        // Park the partition while it cannot make progress: the other partitions keep being fetched.
        park();
        log.warn({ operation, partition, err: err.message, delayMs }, 'transient failure; partition parked, backing off');
      },
    });
  }

  /** The dead letter of a record this bridge fetched: its own bytes and headers, and where it came from. */
  function deadLetterOf(message: KafkaMessage, partition: number, error: Error, attempts: number, firstFailureAt: Date): DeadLetter {
    return {
      key: message.key,
      value: message.value,
      headers: message.headers,
      origin: { topic, partition, offset: message.offset, timestamp: message.timestamp },
      group: groupId,
      error: { name: error.name, message: error.message },
      attempts,
      firstFailureAt,
      lastFailureAt: new Date(),
      stage: 'edge',
    };
  }

  async function deadLetter(gates: Gates, signal: AbortSignal, d: DeadLetter): Promise<void> {
    const form = await gates.deadLetter.run(() => publishDeadLetter(producer, dlqTopic, d), signal);
    if (form !== 'whole') {
      metrics.failures.inc({ operation: 'dead-letter', error_class: 'DeadLetterTooLarge' });
      log.warn({ partition: d.origin.partition, offset: d.origin.offset, form, bytes: d.value?.length ?? 0 }, 'dead letter did not fit the DLQ topic; written without its value (size and SHA-256 kept)');
    }
  }

  /** One record, top-down. True when finished; false when abandoned (left unfinished, so it is redelivered). */
  async function handle(item: Item, partition: number, gates: Gates, signal: AbortSignal): Promise<boolean> {
    try {
      await processRecord(item, partition, gates, signal);
      return true;
    } catch (err) {
      if (err instanceof Abandoned) return false;
      throw err;
    }
  }

  async function processRecord(item: Item, partition: number, gates: Gates, signal: AbortSignal): Promise<void> {
    const { message } = item;
    // 1. parse
    if (item.parsed instanceof Error) {
      const error = item.parsed;
      const at = new Date();
      metrics.failures.inc({ operation: 'parse', error_class: error.name });
      log.warn({ partition, offset: message.offset, err: error.message }, 'malformed record; dead-lettering');
      await deadLetter(gates, signal, deadLetterOf(message, partition, error, 1, at));
      metrics.eventsProcessed.inc({ type: 'unknown', outcome: 'dead-lettered' });
      return;
    }
    // 3. route (unknown types first: they have no order to dedupe against)
    if (item.parsed.kind === 'unknown-type') {
      metrics.unknownTypes.inc();
      metrics.eventsProcessed.inc({ type: 'unknown', outcome: 'ignored' });
      log.info({ partition, offset: message.offset, type: item.parsed.type, eventId: item.parsed.eventId }, 'ignoring unknown event type');
      return;
    }
    const event = item.parsed.event;
    // 2. dedupe hint
    const hintKey = `${event.tenantId}/${event.eventId}`;
    if (hint.has(hintKey)) {
      metrics.duplicatesSuppressed.inc({ layer: 'bridge' });
      metrics.eventsProcessed.inc({ type: event.type, outcome: 'duplicate' });
      log.info({ eventId: event.eventId, type: event.type, orderVersion: event.orderVersion, correlationId: event.correlationId }, 'duplicate suppressed by bridge');
      return;
    }
    // 4. deliver
    let attempt = 0;
    let firstFailureAt: Date | undefined;
    let outcome: Awaited<ReturnType<OrderStarter['deliver']>> | 'dead-lettered';
    try {
      outcome = await gates.deliver.run(async () => {
        attempt += 1;
        log.info(
          { eventId: event.eventId, type: event.type, orderVersion: event.orderVersion, attempt, correlationId: event.correlationId, tenantId: event.tenantId, orderId: event.orderId, partition, offset: message.offset },
          'delivering event to order workflow',
        );
        return starter.deliver(event).catch((err: unknown) => {
          firstFailureAt ??= new Date();
          throw err;
        });
      }, signal);
    } catch (err) {
      if (!(err instanceof PermanentError)) throw err;
      const at = new Date();
      metrics.failures.inc({ operation: 'deliver', error_class: err.name });
      await deadLetter(gates, signal, deadLetterOf(message, partition, err, attempt, firstFailureAt ?? at));
      metrics.eventsProcessed.inc({ type: event.type, outcome: 'dead-lettered' });
      outcome = 'dead-lettered';
    }
    if (outcome === 'accepted') {
      hint.set(hintKey, true);
      metrics.eventsProcessed.inc({ type: event.type, outcome: 'accepted' });
    } else if (outcome === 'order-closed') {
      metrics.eventsProcessed.inc({ type: event.type, outcome: 'stale' });
      log.info({ eventId: event.eventId, type: event.type, orderVersion: event.orderVersion, correlationId: event.correlationId }, 'order run already closed; event not applied');
    }
  }

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    // Nothing is begun once stopping: the records stay uncommitted for whoever owns the partition next.
    if (stopping.signal.aborted) return;
    const work = runBatch(payload);
    active.add(work);
    try {
      await work;
    } finally {
      active.delete(work);
    }
  }

  async function runBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const { partition } = batch;
    const state = partitionState(partition);
    const { tracker, gates } = state;
    const items: Item[] = batch.messages.map((message) => {
      let parsed: ParsedRecord | Error;
      try {
        parsed = parseRecord({ value: message.value, headers: message.headers, origin: { topic: batch.topic, partition, offset: message.offset, timestamp: message.timestamp } });
      } catch (err) {
        parsed = err instanceof PermanentError ? err : new PermanentError(String(err));
      }
      tracker.begin(message.offset, Number(message.timestamp));
      return { message, parsed };
    });

    // `leave` stops starting records and ends backoff waits: shutdown, the partition is being revoked or was
    // parked (a gate is backing off), or kafkajs stopped this run. Records already handed to Temporal finish; the rest are redelivered.
    const leave = new AbortController();
    let lost: Error | undefined;
    const loseMembership = (err: Error) => {
      if (!lost) log.info({ partition, reason: (err as { type?: string }).type ?? err.message }, 'group membership is changing; settling in-flight records and leaving the batch');
      lost ??= err;
      leave.abort();
    };
    const onStopping = () => leave.abort();
    stopping.signal.addEventListener('abort', onStopping, { once: true });
    state.beginBatch(leave);
    // A batch fetched just before its partition was parked must not wait out the backoff here.
    if (state.backingOff && Math.max(gates.deliver.remainingMs(), gates.deadLetter.remainingMs(), gates.commit.remainingMs()) > 0) state.park();

    // Heartbeats keep the membership alive through long backoffs; a rebalance they report winds the batch down.
    const ticker = setInterval(() => {
      if (!payload.isRunning() || payload.isStale()) leave.abort();
      payload.heartbeat().catch((err: unknown) => {
        const gone = membershipLost(err);
        if (gone) loseMembership(gone);
      });
    }, Math.min(1_000, heartbeatInterval));

    const commitPrefix = async (signal: AbortSignal, final: boolean): Promise<void> => {
      const position = tracker.commitPosition();
      const last = state.committed;
      if (position === undefined || (last !== undefined && BigInt(position) <= BigInt(last))) return;
      await gates.commit.run(
        async () => {
          try {
            // Committed through this batch's consumer-group instance: its generation and member id go with it.
            await payload.commitOffsetsIfNecessary({ topics: [{ topic: batch.topic, partitions: [{ partition, offset: position }] }] });
          } catch (err) {
            const gone = membershipLost(err);
            if (gone) throw new PartitionLost(gone.message, { cause: gone });
            throw new DependencyUnavailableError(`offset commit failed: ${(err as Error).message}`, { cause: err });
          }
        },
        signal,
        { firstAttempt: final },
      );
      const now = state.committed;
      if (now === undefined || BigInt(position) > BigInt(now)) state.committed = position;
    };
    const onCommitError = (err: unknown) => {
      if (err instanceof Abandoned) return;
      if (err instanceof PartitionLost) loseMembership(err.cause as Error);
      else log.warn({ partition, err: (err as Error).message }, 'offset commit failed');
    };

    // 5. commit, periodically while the lanes run
    const lanesDone = new AbortController();
    const periodic = (async () => {
      const signal = AbortSignal.any([lanesDone.signal, leave.signal]);
      while (!signal.aborted) {
        try {
          await sleep(commitIntervalMs, signal);
          await commitPrefix(signal, false);
        } catch (err) {
          onCommitError(err);
          if (err instanceof Abandoned || err instanceof PartitionLost) return;
        }
      }
    })();

    let failure: { error: unknown } | undefined;
    try {
      await runInLanes({
        items,
        lanes: laneCount,
        maxInFlight,
        keyOf: laneKey,
        signal: leave.signal,
        run: (item) => handle(item, partition, gates, leave.signal),
        onFinished: (item) => {
          const position = tracker.finish(item.message.offset);
          if (position !== undefined) payload.resolveOffset((BigInt(position) - 1n).toString());
        },
      });
    } catch (error) {
      failure = { error };
    } finally {
      lanesDone.abort();
      await periodic;
      // The final commit is attempted even when leaving; a member whose generation is over is refused by the
      // broker, so this can never move a revoked partition's offset under its new owner.
      await commitPrefix(leave.signal, true).catch(onCommitError);
      clearInterval(ticker);
      stopping.signal.removeEventListener('abort', onStopping);
      // Whatever was not finished is refetched from the resolved offset; forget it here.
      if (tracker.inFlight > 0) tracker.reset();
      state.endBatch();
    }
    if (failure) throw failure.error;
    // Handing the membership error back makes kafkajs rejoin at once.
    if (lost && !stopping.signal.aborted) throw lost;
  }

  const runConfig: ConsumerRunConfig = {
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: opts.partitionsConcurrently ?? 4,
    eachBatch,
  };

  let listening = false;
  async function startRunning(): Promise<void> {
    await consumer.run(runConfig);
    ageTimer ??= setInterval(publishAges, 1000);
    ageTimer.unref();
  }

  let restarting = false;
  /** Restarts a consumer kafkajs gave up on (a non-retriable crash), after jittered delays, until it runs. */
  async function restartConsumer(): Promise<void> {
    if (restarting) return;
    restarting = true;
    try {
      while (!stopping.signal.aborted) {
        const delayMs = restartDelays.next();
        metrics.retries.inc({ operation: 'consume' });
        log.error({ delayMs }, 'consumer stopped after a non-retriable error; the bridge restarts it');
        await sleep(delayMs, stopping.signal).catch(() => undefined);
        if (stopping.signal.aborted) return;
        try {
          await consumer.connect();
          await consumer.run(runConfig);
          return;
        } catch (err) {
          metrics.failures.inc({ operation: 'consume', error_class: (err as Error).name });
          log.error({ err: (err as Error).message }, 'restarting the consumer failed');
        }
      }
    } finally {
      restarting = false;
    }
  }

  return {
    consumer,
    async start() {
      // Safe to call again after it failed (start-up waits for Kafka by calling it until it succeeds).
      await producer.connect();
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      if (listening) return startRunning();
      listening = true;
      consumer.on(consumer.events.GROUP_JOIN, (e) => {
        log.info({ partitions: e.payload.memberAssignment }, 'joined group');
        // A new generation: whatever this member tracked may now belong to another member.
        for (const p of partitions.values()) p.resetGeneration();
        restartDelays.reset();
      });
      consumer.on(consumer.events.CRASH, (e) => {
        const { error, restart } = e.payload;
        metrics.failures.inc({ operation: 'consume', error_class: error.name });
        if (stopping.signal.aborted) return;
        log.error({ err: error.message, errorClass: error.name, restart }, 'consumer crashed');
        if (!restart) void restartConsumer();
      });
      return startRunning();
    },
    stop() {
      stopped ??= (async () => {
        stopping.abort();
        if (ageTimer) clearInterval(ageTimer);
        for (const p of partitions.values()) p.dispose();
        try {
          consumer.pause([{ topic }]);
        } catch {
          // not running (crashed and not restarted yet): nothing to pause
        }
        await Promise.allSettled([...active]);
        await consumer.disconnect().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'consumer disconnect failed'));
        await producer.disconnect().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'producer disconnect failed'));
      })();
      return stopped;
    },
  };
}
