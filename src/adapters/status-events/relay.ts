/**
 * The status relay: publishes the status outbox (src/adapters/status-events/outbox.ts) to STATUS_TOPIC, in commit
 * order, and marks what it published as sent. Every worker with STATUS_RELAY=true runs one; they share the work through
 * the topic's lock (migration 007): one session holds it and publishes, the others stand by and try again every
 * STATUS_RELAY_POLL_MS, so a relay that dies (its session with it) is replaced within a poll.
 *
 * A round: take the next batch of unsent rows in id order (one order's rows follow its commit order), send them in
 * one request of an idempotent producer with one request in flight (one order's records land on one partition, in
 * that order), then mark them sent. A crash between the send and the mark sends the batch again: the same records,
 * byte for byte (the value and headers are the row's), which consumers drop by eventId. Kafka down: the round fails,
 * the rows wait, the relay backs off and keeps its lead; a send that never finishes fails its round the same way at a
 * deadline, and the relay sends through a new producer. PostgreSQL down: the session (and its lock) is gone; the
 * relay backs off and opens a new one. Neither touches the worker's readiness: the input side does not depend on it.
 *
 * Between rounds it waits for a commit's notification (or STATUS_RELAY_POLL_MS), then STATUS_RELAY_GATHER_MS more, so
 * the rows committed meanwhile go out together: at a steady rate that is a few rows per request rather than one,
 * each row still published within about that long of its commit.
 */
import { ROOT_CONTEXT, SpanKind, propagation, type Tracer } from '@opentelemetry/api';
import type pg from 'pg';
import {
  ExponentialBackoff,
  TaskCancelledError,
  TimeoutStrategy,
  halfJitterGenerator,
  timeout,
  type IBackoff,
} from 'cockatiel';
import type { OutgoingRecord } from '../kafka/records.js';
import type { ConnectedSender } from '../kafka/sender.js';
import type { Logger } from '../../base/log.js';
import type { Metrics } from '../../base/metrics.js';
import { STATUS_RELAY_RETRY, STATUS_RELAY_SEND_DEADLINE_MS } from '../../base/retry-policies.js';
import { statusEventKey } from './event.js';
import { openRelaySession, type OutboxRow, type RelaySession } from './outbox.js';
import { recordFailure } from '../tracing/spans.js';
import { TRACEPARENT } from '../tracing/propagation.js';
import { sleep } from '../../base/sleep.js';

/** The header naming the correlation id of a status event (as the input side reads it). */
export const CORRELATION_HEADER = 'correlation-id';

export interface StatusRelayDeps {
  /** The runtime role's connection: the relay's own session is opened with it. */
  connection: pg.ClientConfig;
  topic: string;
  /** An idempotent producer (createSender(…, { idempotent: true })). */
  sender: ConnectedSender;
  batch: number;
  pollMs: number;
  /**
   * Milliseconds a relay woken by a commit waits before it reads, so the rows committed meanwhile go out in the same
   * request (STATUS_RELAY_GATHER_MS); 0: it reads at once.
   */
  gatherMs?: number;
  /**
   * Milliseconds a batch's send may take before the round fails as a Kafka failure and the sender's producer is
   * replaced (STATUS_RELAY_SEND_DEADLINE_MS in src/base/retry-policies.ts; tests shorten it).
   */
  sendDeadlineMs?: number;
  logger: Logger;
  metrics?: Pick<Metrics, 'statusEventsPublished' | 'statusRelayFailures' | 'statusRelayLeading'>;
  tracer?: Tracer;
  /**
   * Called once a batch is published and before it is marked sent: where a crash republishes the batch. Tests stop
   * the relay here (see test/integration/status-relay.int.test.ts); nothing else sets it.
   */
  afterPublish?: (rows: readonly OutboxRow[]) => Promise<void>;
}

export interface StatusRelay {
  /** True while this relay leads its topic. */
  leading(): boolean;
  /** Stops after the current round; the session (and the lead) is released. */
  stop(): Promise<void>;
}

/** Which dependency a failed round failed on. */
class RoundFailure extends Error {
  constructor(
    readonly dependency: 'kafka' | 'postgres',
    readonly error: unknown,
  ) {
    super(`${dependency}: ${(error as Error)?.message ?? String(error)}`);
  }
}

const on = async <T>(dependency: RoundFailure['dependency'], work: () => Promise<T>): Promise<T> => {
  try {
    return await work();
  } catch (err) {
    throw err instanceof RoundFailure ? err : new RoundFailure(dependency, err);
  }
};

/** The record a row is: its key, its value and headers exactly as the row holds them. */
export function outboxRecord(row: OutboxRow): OutgoingRecord {
  return {
    key: statusEventKey(row.tenantId, row.orderId),
    value: row.payload,
    headers: {
      ...(row.traceparent ? { [TRACEPARENT]: row.traceparent } : {}),
      [CORRELATION_HEADER]: row.correlationId,
    },
  };
}

/**
 * Over 80 lines: the relay's loop and its stop() share one closure's state (the session, the backoff, whether it
 * leads); each round's steps are inner functions of their own.
 */
export function startStatusRelay(deps: StatusRelayDeps): StatusRelay {
  const { topic, sender, logger, metrics } = deps;
  const stopping = new AbortController();
  let session: RelaySession | undefined;
  let leads = false;
  let backoff: IBackoff<unknown> | undefined;
  const sendDeadlineMs = deps.sendDeadlineMs ?? STATUS_RELAY_SEND_DEADLINE_MS;
  const sendDeadline = timeout(sendDeadlineMs, TimeoutStrategy.Aggressive);

  const setLeading = (value: boolean) => {
    if (value !== leads)
      logger.info(
        { topic },
        value ? 'status relay leads the topic: publishing the outbox' : 'status relay no longer leads the topic',
      );
    leads = value;
    metrics?.statusRelayLeading.set({ topic }, value ? 1 : 0);
  };

  /**
   * Sends the records, or fails when the deadline passes first: a send that never finishes (a request kafkajs neither
   * answers nor fails) must not hold the rows while Kafka answers again. The producer it hangs in is given up and the
   * next round sends through a new one; if the old send lands after all, its records are exact copies, ahead of or
   * behind the new ones as a whole batch, so each order's first copies keep commit order.
   */
  async function sendWithin(records: OutgoingRecord[]): Promise<void> {
    try {
      await sendDeadline.execute(() => sender.send(topic, records), stopping.signal);
    } catch (err) {
      if (!(err instanceof TaskCancelledError) || stopping.signal.aborted) throw err;
      sender.replace();
      throw new Error(`the send did not finish within ${sendDeadlineMs} ms; its producer is replaced by a new one`, {
        cause: err,
      });
    }
  }

  /** Sends the batch, with a producer span per row continuing the trace of the change that wrote it. */
  async function publish(rows: OutboxRow[]): Promise<void> {
    const records = rows.map(outboxRecord);
    const spans = deps.tracer
      ? rows.map((row) =>
          deps.tracer!.startSpan(
            `publish ${topic}`,
            {
              kind: SpanKind.PRODUCER,
              attributes: {
                'messaging.system': 'kafka',
                'messaging.destination.name': topic,
                'messaging.message.id': row.eventId,
                'fulfilment.event_type': row.type,
              },
            },
            row.traceparent ? propagation.extract(ROOT_CONTEXT, { [TRACEPARENT]: row.traceparent }) : ROOT_CONTEXT,
          ),
        )
      : [];
    try {
      await sendWithin(records);
    } catch (err) {
      for (const span of spans) recordFailure(span, err);
      throw err;
    } finally {
      for (const span of spans) span.end();
    }
    for (const row of rows) metrics?.statusEventsPublished.inc({ topic, type: row.type });
  }

  /**
   * One round; 'idle' when it read less than a batch (all that was committed when it read: what came after notifies),
   * 'standby' when another session leads, 'busy' after a full batch (more may wait: the next round reads at once).
   */
  async function round(): Promise<'idle' | 'standby' | 'busy'> {
    const s = (session ??= await on('postgres', () => openRelaySession(deps.connection, topic)));
    if (!leads) {
      setLeading(await on('postgres', () => s.tryLead()));
      if (!leads) return 'standby';
    }
    const rows = await on('postgres', () => s.unsent(deps.batch));
    if (rows.length === 0) return 'idle';
    await on('kafka', () => publish(rows));
    await deps.afterPublish?.(rows);
    await on('postgres', () => s.markSent(rows.map((r) => r.id)));
    logger.debug({ topic, rows: rows.length, lastId: rows.at(-1)!.id }, 'status events published');
    // Fewer than a batch: that was everything committed when the read began; what came after has notified.
    return rows.length < deps.batch ? 'idle' : 'busy';
  }

  async function dropSession(): Promise<void> {
    const s = session;
    session = undefined;
    setLeading(false);
    await s?.close();
  }

  const loop = (async () => {
    while (!stopping.signal.aborted) {
      try {
        const outcome = await round();
        backoff = undefined;
        if (outcome === 'idle') {
          const woken = await session!.changed(deps.pollMs, stopping.signal);
          if (woken && deps.gatherMs) await sleep(deps.gatherMs, stopping.signal);
        } else if (outcome === 'standby') await sleep(deps.pollMs, stopping.signal);
      } catch (err) {
        if (stopping.signal.aborted) break;
        const failure = err instanceof RoundFailure ? err : new RoundFailure('postgres', err);
        // A database failure may have cost the session, and with it the lock: start again from a new one.
        if (failure.dependency === 'postgres' || session?.lost()) await dropSession();
        metrics?.statusRelayFailures.inc({ topic, dependency: failure.dependency });
        backoff = backoff
          ? backoff.next(undefined)
          : new ExponentialBackoff({
              generator: halfJitterGenerator,
              initialDelay: STATUS_RELAY_RETRY.initialDelayMs,
              maxDelay: STATUS_RELAY_RETRY.maxDelayMs,
            }).next();
        logger.warn(
          { topic, dependency: failure.dependency, err: failure.message, retryInMs: backoff.duration },
          'status relay round failed; the rows wait',
        );
        await sleep(backoff.duration, stopping.signal);
      }
    }
  })();

  return {
    leading: () => leads,
    async stop() {
      stopping.abort();
      await session?.close();
      await loop;
      await dropSession();
    },
  };
}
