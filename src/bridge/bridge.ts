/**
 * The bridge: a thin kafkajs consumer that hands each order event to the order's workflow and commits the
 * offset only after Temporal accepted it. No business logic lives here. Per record, top-down:
 *
 *   1. parse      — validate the envelope at the edge; malformed → dead-letter at once (permanent)
 *   2. dedupe hint — a recently accepted event id is skipped (an optimisation only; the workflow and the
 *                   store dedupe for real)
 *   3. route      — unknown event types are ignored and counted, never an error
 *   4. deliver    — signal-with-start the order's workflow; transient failures back off with jitter while
 *                   the partition is paused, never dead-lettered
 *   5. commit     — only the contiguous prefix of finished offsets
 *
 * Within a partition, records run in lanes by order, so one slow order does not hold up the others while the
 * events of one order stay in partition order.
 */
import { Partitioners, type Consumer, type EachBatchPayload, type Kafka, type KafkaMessage, type Producer } from 'kafkajs';
import { ExponentialBackoff, handleWhen, isTaskCancelledError, retry, type RetryPolicy } from 'cockatiel';
import { LRUCache } from 'lru-cache';
import { parseRecord, type ParsedRecord } from '../events/envelope.js';
import { DependencyUnavailableError, PermanentError, TransientError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { sendToDeadLetter } from './dead-letter.js';
import { OffsetTracker } from './offset-tracker.js';
import type { OrderStarter } from './order-starter.js';

/** Retry policy for transient failures, as data. Delays in milliseconds. */
export interface TransientRetry {
  /** First delay; default 200. */
  initialDelayMs: number;
  /** Cap on any one delay; default 30000. Attempts are unbounded: a transient failure is never dead-lettered. */
  maxDelayMs: number;
}

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
  /** Partitions processed at once by this instance. Default 4. */
  partitionsConcurrently?: number;
  retry?: Partial<TransientRetry>;
  /** Consumer session timeout, milliseconds. Default 30000. */
  sessionTimeoutMs?: number;
  /** How many accepted event ids the dedupe hint remembers. Default 10000. */
  dedupeHintSize?: number;
}

export interface Bridge {
  start(): Promise<void>;
  /** Stops fetching, lets in-flight records settle, commits the finished prefix, leaves the group. */
  stop(): Promise<void>;
  readonly consumer: Consumer;
}

interface Item {
  message: KafkaMessage;
  parsed: ParsedRecord | Error;
}

export function createBridge(opts: BridgeOptions): Bridge {
  const { kafka, topic, dlqTopic, groupId, starter, metrics } = opts;
  const log = opts.logger.child({ component: 'bridge', group: groupId });
  const laneCount = opts.lanes ?? 8;
  const retryConfig: TransientRetry = { initialDelayMs: 200, maxDelayMs: 30_000, ...opts.retry };
  const consumer = kafka.consumer({
    groupId,
    sessionTimeout: opts.sessionTimeoutMs ?? 30_000,
    heartbeatInterval: 3_000,
    allowAutoTopicCreation: false,
    retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 300, maxRetryTime: 10_000 },
  });
  const producer: Producer = kafka.producer({
    allowAutoTopicCreation: false,
    // Dead-lettering is at-least-once like everything else; one request in flight keeps each partition's DLQ order.
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  const trackers = new Map<number, OffsetTracker>();
  const hint = new LRUCache<string, true>({ max: opts.dedupeHintSize ?? 10_000 });
  const stopping = new AbortController();
  let ageTimer: NodeJS.Timeout | undefined;

  const transient: RetryPolicy = retry(handleWhen((err) => err instanceof TransientError), {
    maxAttempts: Number.MAX_SAFE_INTEGER,
    backoff: new ExponentialBackoff({ initialDelay: retryConfig.initialDelayMs, maxDelay: retryConfig.maxDelayMs }),
  });

  function trackerFor(partition: number): OffsetTracker {
    let t = trackers.get(partition);
    if (!t) trackers.set(partition, (t = new OffsetTracker()));
    return t;
  }

  function publishAges(): void {
    const now = Date.now();
    for (const [partition, tracker] of trackers) {
      const oldest = tracker.oldestPendingTimestamp();
      metrics.oldestUnprocessedAge.set(
        { group: groupId, topic, partition: String(partition) },
        oldest === undefined ? 0 : Math.max(0, (now - oldest) / 1000),
      );
    }
  }

  function laneOf(item: Item): number {
    const key =
      item.parsed instanceof Error
        ? item.message.offset
        : item.parsed.kind === 'order-event'
          ? `${item.parsed.event.tenantId}/${item.parsed.event.orderId}`
          : item.message.offset;
    let h = 0;
    for (let i = 0; i < key.length; i += 1) h = (h * 31 + key.charCodeAt(i)) | 0;
    return Math.abs(h) % laneCount;
  }

  /** Runs `work`, retrying transient failures with jittered backoff until it succeeds or the batch is abandoned. */
  async function withTransientRetry<T>(operation: string, payload: EachBatchPayload, pausing: { resume?: () => void }, work: () => Promise<T>): Promise<T> {
    const abandon = new AbortController();
    const watch = setInterval(() => {
      if (stopping.signal.aborted || !payload.isRunning() || payload.isStale()) abandon.abort();
    }, 250);
    const onRetry = transient.onRetry((reason) => {
      const error = 'error' in reason ? reason.error : undefined;
      metrics.retries.inc({ operation });
      metrics.failures.inc({ operation, error_class: error?.name ?? 'unknown' });
      log.warn({ operation, partition: payload.batch.partition, err: error?.message, delayMs: reason.delay }, 'transient failure; backing off');
      // Stop fetching this partition while it cannot make progress; keep the group membership alive.
      pausing.resume ??= payload.pause();
      payload.heartbeat().catch(() => undefined);
    });
    try {
      return await transient.execute(() => work(), abandon.signal);
    } finally {
      clearInterval(watch);
      onRetry.dispose();
    }
  }

  async function handle(item: Item, payload: EachBatchPayload, pausing: { resume?: () => void }): Promise<void> {
    const { message } = item;
    const { partition } = payload.batch;
    // 1. parse
    if (item.parsed instanceof Error) {
      const error = item.parsed;
      const at = new Date();
      metrics.failures.inc({ operation: 'parse', error_class: error.name });
      log.warn({ partition, offset: message.offset, err: error.message }, 'malformed record; dead-lettering');
      await withTransientRetry('dead-letter', payload, pausing, () =>
        sendToDeadLetter(producer, dlqTopic, {
          message, topic, partition, group: groupId, error, attempts: 1, firstFailureAt: at, lastFailureAt: at,
        }).catch((err: unknown) => {
          throw new DependencyUnavailableError(`dead-letter write failed: ${(err as Error).message}`, { cause: err });
        }),
      );
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
    const outcome = await withTransientRetry('deliver', payload, pausing, async () => {
      attempt += 1;
      log.info(
        { eventId: event.eventId, type: event.type, orderVersion: event.orderVersion, attempt, correlationId: event.correlationId, tenantId: event.tenantId, orderId: event.orderId, partition, offset: message.offset },
        'delivering event to order workflow',
      );
      return starter.deliver(event);
    }).catch(async (err: unknown) => {
      if (!(err instanceof PermanentError)) throw err;
      const at = new Date();
      metrics.failures.inc({ operation: 'deliver', error_class: err.name });
      await withTransientRetry('dead-letter', payload, pausing, () =>
        sendToDeadLetter(producer, dlqTopic, { message, topic, partition, group: groupId, error: err, attempts: attempt, firstFailureAt: at, lastFailureAt: at }),
      );
      metrics.eventsProcessed.inc({ type: event.type, outcome: 'dead-lettered' });
      return 'dead-lettered' as const;
    });
    if (outcome === 'accepted') {
      hint.set(hintKey, true);
      metrics.eventsProcessed.inc({ type: event.type, outcome: 'accepted' });
    } else if (outcome === 'order-closed') {
      metrics.eventsProcessed.inc({ type: event.type, outcome: 'stale' });
      log.info({ eventId: event.eventId, type: event.type, orderVersion: event.orderVersion, correlationId: event.correlationId }, 'order run already closed; event not applied');
    }
  }

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const tracker = trackerFor(batch.partition);
    const items: Item[] = batch.messages.map((message) => {
      let parsed: ParsedRecord | Error;
      try {
        parsed = parseRecord({ value: message.value, headers: message.headers, origin: { topic: batch.topic, partition: batch.partition, offset: message.offset } });
      } catch (err) {
        parsed = err instanceof PermanentError ? err : new PermanentError(String(err));
      }
      tracker.begin(message.offset, Number(message.timestamp));
      return { message, parsed };
    });
    const lanes: Item[][] = Array.from({ length: laneCount }, () => []);
    for (const item of items) lanes[laneOf(item)]!.push(item);

    const pausing: { resume?: () => void } = {};
    let committed = tracker.commitPosition();
    let committing: Promise<void> = Promise.resolve();
    const commit = (position: string) => {
      committing = committing.then(async () => {
        if (committed !== undefined && BigInt(position) <= BigInt(committed)) return;
        await withTransientRetry('commit', payload, pausing, () =>
          consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: position }]).catch((err: unknown) => {
            throw new DependencyUnavailableError(`offset commit failed: ${(err as Error).message}`, { cause: err });
          }),
        );
        committed = position;
      });
      return committing;
    };

    let lastCommitAt = Date.now();
    try {
      await Promise.all(
        lanes.map(async (lane) => {
          for (const item of lane) {
            if (stopping.signal.aborted || !payload.isRunning() || payload.isStale()) return;
            try {
              await handle(item, payload, pausing);
            } catch (err) {
              // Abandoned while backing off (shutdown or rebalance): left uncommitted, so it is redelivered.
              if (isTaskCancelledError(err)) return;
              throw err;
            }
            const position = tracker.finish(item.message.offset);
            if (position !== undefined) {
              payload.resolveOffset((BigInt(position) - 1n).toString());
              if (Date.now() - lastCommitAt > 1000) {
                lastCommitAt = Date.now();
                await commit(position);
                await payload.heartbeat();
              }
            }
          }
        }),
      );
    } finally {
      const position = tracker.commitPosition();
      if (position !== undefined && !payload.isStale()) await commit(position).catch((err: unknown) => log.warn({ err: (err as Error).message }, 'final commit of batch failed'));
      // Whatever was not finished is refetched from the committed offset; forget it here.
      if (tracker.inFlight > 0) tracker.reset();
      pausing.resume?.();
    }
  }

  return {
    consumer,
    async start() {
      await producer.connect();
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      consumer.on(consumer.events.GROUP_JOIN, (e) => {
        log.info({ partitions: e.payload.memberAssignment }, 'joined group');
        for (const t of trackers.values()) t.reset();
      });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: opts.partitionsConcurrently ?? 4,
        eachBatch,
      });
      ageTimer = setInterval(publishAges, 1000);
      ageTimer.unref();
    },
    async stop() {
      stopping.abort();
      if (ageTimer) clearInterval(ageTimer);
      await consumer.disconnect();
      await producer.disconnect();
    },
  };
}
