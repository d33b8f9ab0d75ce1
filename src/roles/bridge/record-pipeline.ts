/**
 * One record's path through the bridge, top-down, each step a small function over explicit dependencies:
 *
 *   1. classify    — parse the envelope at the edge: an order event, an unknown type, or malformed (never throws)
 *   2. route       — an unknown type is ignored and counted, never an error; a malformed record goes to step 5
 *   3. dedupe hint — an event id this bridge recently handed over is skipped (an optimisation only: the
 *                    workflow and the store dedupe for real)
 *   4. deliver     — signal-with-start the order's workflow through the partition's deliver gate, carrying the
 *                    event, or every event of the order queued together in its lane (one call for a burst): a
 *                    transient failure backs off (the partition is parked), a permanent one goes to step 5, and
 *                    one only this order's workflow meets (delivery-failures.ts) is retried in its lane alone
 *                    until its budget is spent, then goes to step 5 too — its partition flows on meanwhile
 *   5. dead-letter — the record's own bytes and headers to the DLQ, through the dead-letter gate
 *
 * What happens around it — lanes, offsets, commits, parking — is the partition run's (partition-run.ts).
 * Rule a reader must not break: a step either finishes the record or throws Abandoned (left unfinished, so it is
 * refetched); it never swallows a transient failure.
 */
import { parseRecord } from '../../adapters/events/envelope.js';
import { PermanentError, RecordTransientError } from '../../base/errors.js';
import type { PayloadKeys } from '../../base/config/payload-keys.js';
import {
  carryForward,
  publishDeadLetter,
  redriveHistory,
  withoutRedriveCount,
  type DeadLetter,
} from '../../adapters/dlq/dead-letter.js';
import type { ConsumedRecord, RecordSender } from '../../adapters/kafka/records.js';
import type { Logger } from '../../base/log.js';
import type { Metrics } from '../../base/metrics.js';
import { eventIds, type OrderEvent } from '../../vocabulary/order.js';
import type { StartOutcome } from './order-starter.js';
import { DelaySequence, sleepOrAbandon, type TransientRetry } from './backoff-gate.js';

/** The metrics the pipeline counts. */
export type PipelineMetrics = Pick<
  Metrics,
  | 'bridgeRecords'
  | 'duplicatesSuppressed'
  | 'failures'
  | 'malformedRecords'
  | 'retries'
  | 'unknownFields'
  | 'unknownTypes'
>;

/** A record that only its order's workflow kept refusing until its retry budget was spent; dead-lettered. */
export class RecordRetryBudgetSpentError extends PermanentError {}

/** What a record is, as the edge judged it. */
export type Classified =
  /** `unknownFields`: the fields the edge dropped from the record (sanitised, bounded), when there were any. */
  | { kind: 'order-event'; event: OrderEvent; unknownFields?: string[] }
  | { kind: 'unknown-type'; type: string; eventId?: string; tenantId?: string }
  | { kind: 'malformed'; error: PermanentError };

/** How a record finished. */
export type RecordOutcome = StartOutcome | 'duplicate' | 'ignored' | 'dead-lettered';

/** Runs work when the dependency's backoff lets it (BackoffGate); throws Abandoned when `signal` aborts first. */
export interface Gate {
  run<T>(work: () => Promise<T>, signal: AbortSignal): Promise<T>;
}

/** Event ids recently handed over, keyed by tenant. */
export interface DedupeHint {
  has(key: string): boolean;
  set(key: string, value: true): unknown;
}

/**
 * Hands one order's events to its workflow (an OrderStarter behind the bridge's delivery slots); a wait for a slot
 * is given up with Abandoned when `signal` aborts.
 */
export interface Deliverer {
  deliver(events: readonly OrderEvent[], signal: AbortSignal): Promise<StartOutcome>;
}

export interface PipelineDeps {
  starter: Deliverer;
  hint: DedupeHint;
  sender: RecordSender;
  dlqTopic: string;
  /** Keys that encrypt dead-letter values; undefined: kept as they came. */
  dlqEncryption?: PayloadKeys;
  group: string;
  metrics: PipelineMetrics;
  log: Logger;
  /**
   * A failure only one order's workflow meets (RecordTransientError) is retried for that record alone, with these
   * delays, for at most `budgetMs` from its first failure (BRIDGE_RECORD_RETRY_BUDGET_SECONDS).
   */
  recordRetry: TransientRetry & { budgetMs: number };
}

/** One fetched record and where it came from. */
export interface RecordInPartition {
  record: ConsumedRecord;
  topic: string;
  partition: number;
  classified: Classified;
}

/** The gates of the record's partition and the signal that abandons its waits. */
export interface PartitionContext {
  gates: { deliver: Gate; deadLetter: Gate };
  signal: AbortSignal;
}

/** 1. classify: the edge's verdict on one record; never throws. */
export function classify(record: ConsumedRecord, topic: string, partition: number): Classified {
  try {
    const parsed = parseRecord({
      value: record.value,
      headers: record.headers,
      origin: { topic, partition, offset: record.offset, timestamp: record.timestamp },
    });
    return parsed.kind === 'order-event'
      ? parsed
      : { kind: 'unknown-type', type: parsed.type, eventId: parsed.eventId, tenantId: parsed.tenantId };
  } catch (err) {
    return { kind: 'malformed', error: err instanceof PermanentError ? err : new PermanentError(String(err)) };
  }
}

/** The lane of a record: its order for order events, its own offset (a lane of its own) for anything else. */
export function laneKey(r: RecordInPartition): string {
  return r.classified.kind === 'order-event'
    ? `${r.classified.event.tenantId}/${r.classified.event.orderId}`
    : r.record.offset;
}

/** The whole path of one record, top-down. */
export async function processRecord(
  r: RecordInPartition,
  deps: PipelineDeps,
  ctx: PartitionContext,
): Promise<RecordOutcome> {
  const { classified } = r;
  // 2. route
  if (classified.kind === 'malformed') {
    deps.metrics.failures.inc({ operation: 'parse', error_class: classified.error.name });
    deps.metrics.malformedRecords.inc({ error_class: classified.error.name });
    deps.log.warn(
      { partition: r.partition, offset: r.record.offset, err: classified.error.message },
      'malformed record; dead-lettering',
    );
    return deadLetter(
      r,
      { error: classified.error, attempts: 1, firstFailureAt: new Date(), type: 'malformed' },
      deps,
      ctx,
    );
  }
  if (classified.kind === 'unknown-type') return ignoreUnknownType(r, classified, deps);
  const [outcome] = await processOrderEvents([r as OrderEventRecord], deps, ctx);
  return outcome!;
}

/** A record the edge judged an order event. */
export type OrderEventRecord = RecordInPartition & { classified: Extract<Classified, { kind: 'order-event' }> };

/**
 * Steps 3–5 for one order's events queued together in its lane (lanes.ts groups them; one record is a group of
 * one): the hint per event, then one delivery carrying every event it did not skip. When Temporal, or the store on
 * the late path (which then wrote nothing of the delivery), refuses such a delivery for good, each event is delivered
 * on its own, so only the one at fault is dead-lettered. The outcomes are the records', in their order.
 */
export async function processOrderEvents(
  rs: readonly OrderEventRecord[],
  deps: PipelineDeps,
  ctx: PartitionContext,
): Promise<RecordOutcome[]> {
  const outcomes = new Map<OrderEventRecord, RecordOutcome>();
  const fresh: OrderEventRecord[] = [];
  for (const r of rs) {
    for (const field of r.classified.unknownFields ?? []) deps.metrics.unknownFields.inc(field); // dropped at the edge, counted here
    // 3. dedupe hint
    if (isRecentDuplicate(r.classified.event, deps)) outcomes.set(r, 'duplicate');
    else fresh.push(r);
  }
  // 4. deliver
  const delivery = fresh.length > 0 ? await deliver(fresh, deps, ctx) : undefined;
  if (delivery?.kind === 'delivered') for (const r of fresh) outcomes.set(r, delivery.outcome);
  else if (delivery?.error instanceof RecordRetryBudgetSpentError) {
    // The order's workflow refused them all, not one event: each alone would only spend the budget again.
    for (const r of fresh)
      outcomes.set(r, await deadLetter(r, { ...delivery, type: r.classified.event.type }, deps, ctx));
  } else if (delivery && fresh.length === 1)
    outcomes.set(
      fresh[0]!,
      await deadLetter(fresh[0]!, { ...delivery, type: fresh[0]!.classified.event.type }, deps, ctx),
    );
  else if (delivery) {
    deps.log.info(
      { partition: fresh[0]!.partition, events: fresh.length, err: delivery.error.message },
      'events delivered together were refused for good; delivering each on its own',
    );
    for (const r of fresh) {
      const alone = await deliver([r], deps, ctx);
      // 5. dead-letter
      outcomes.set(
        r,
        alone.kind === 'delivered'
          ? alone.outcome
          : await deadLetter(r, { ...alone, type: r.classified.event.type }, deps, ctx),
      );
    }
  }
  return rs.map((r) => outcomes.get(r)!);
}

/** Longest unknown type name kept as a label value: the name comes from the producer. */
export const UNKNOWN_TYPE_LABEL_CHARS = 100;

/** 2. route: an unknown event type is ignored, logged and counted (by name, bounded: metrics.ts). */
export function ignoreUnknownType(
  r: RecordInPartition,
  c: Extract<Classified, { kind: 'unknown-type' }>,
  deps: PipelineDeps,
): 'ignored' {
  deps.metrics.unknownTypes.inc(c.type.slice(0, UNKNOWN_TYPE_LABEL_CHARS));
  deps.metrics.bridgeRecords.inc({ type: 'unknown', outcome: 'ignored' });
  deps.log.info(
    { partition: r.partition, offset: r.record.offset, type: c.type, eventId: c.eventId },
    'ignoring unknown event type',
  );
  return 'ignored';
}

const hintKey = (event: OrderEvent) => `${event.tenantId}/${event.eventId}`;

/** 3. dedupe hint: true (counted and logged) when this bridge handed the same event over recently. */
export function isRecentDuplicate(event: OrderEvent, deps: PipelineDeps): boolean {
  if (!deps.hint.has(hintKey(event))) return false;
  deps.metrics.duplicatesSuppressed.inc({ layer: 'bridge' });
  deps.metrics.bridgeRecords.inc({ type: event.type, outcome: 'duplicate' });
  deps.log.info(
    { eventId: event.eventId, type: event.type, orderVersion: event.orderVersion, correlationId: event.correlationId },
    'duplicate suppressed by bridge',
  );
  return true;
}

type Delivery =
  | { kind: 'delivered'; outcome: StartOutcome }
  | { kind: 'refused'; error: PermanentError; attempts: number; firstFailureAt: Date };

/**
 * 4. deliver: hands one order's events (one, or several queued together) to its workflow in one call, every attempt
 * logged for each event; a permanent refusal is returned.
 */
export async function deliver(
  rs: readonly OrderEventRecord[],
  deps: PipelineDeps,
  ctx: PartitionContext,
): Promise<Delivery> {
  const events = rs.map((r) => r.classified.event);
  const ids = (event: OrderEvent, i: number) => ({
    ...eventIds(event),
    partition: rs[i]!.partition,
    offset: rs[i]!.record.offset,
  });
  let attempt = 0;
  let firstFailureAt: Date | undefined;
  let alone: DelaySequence | undefined;
  for (;;) {
    try {
      const outcome = await ctx.gates.deliver.run(async () => {
        attempt += 1;
        for (const [i, event] of events.entries()) {
          deps.log.info(
            { ...ids(event, i), attempt, ...(events.length > 1 ? { deliveredWith: events.length } : {}) },
            'delivering event to order workflow',
          );
        }
        return deps.starter.deliver(events, ctx.signal).catch((err: unknown) => {
          firstFailureAt ??= new Date();
          throw err;
        });
      }, ctx.signal);
      countDelivered(events, outcome, deps);
      return { kind: 'delivered', outcome };
    } catch (err) {
      if (err instanceof RecordTransientError) {
        // Only this order's workflow refuses: retried here, in its lane, without closing the partition's gate.
        deps.metrics.retries.inc({ operation: 'deliver-record' });
        deps.metrics.failures.inc({ operation: 'deliver-record', error_class: err.name });
        const spentMs = Date.now() - firstFailureAt!.getTime();
        const leftMs = deps.recordRetry.budgetMs - spentMs;
        if (leftMs <= 0) {
          const error = new RecordRetryBudgetSpentError(
            `refused for ${Math.round(spentMs / 1000)} s over ${attempt} attempts, past the record's retry budget of ${deps.recordRetry.budgetMs / 1000} s: ${err.message}`,
            { cause: err },
          );
          deps.metrics.failures.inc({ operation: 'deliver', error_class: error.name });
          return { kind: 'refused', error, attempts: attempt, firstFailureAt: firstFailureAt! };
        }
        const delayMs = Math.min((alone ??= new DelaySequence(deps.recordRetry)).next(), leftMs);
        for (const [i, event] of events.entries())
          deps.log.warn(
            { ...ids(event, i), attempt, err: err.message, delayMs, budgetLeftMs: leftMs },
            "only this order's workflow refuses the event now; retrying it alone while its partition flows on",
          );
        await sleepOrAbandon(delayMs, ctx.signal);
        continue;
      }
      if (!(err instanceof PermanentError)) throw err;
      deps.metrics.failures.inc({ operation: 'deliver', error_class: err.name });
      return { kind: 'refused', error: err, attempts: attempt, firstFailureAt: firstFailureAt ?? new Date() };
    }
  }
}

/** Counts (and for a closed run, logs) what a delivery did with each of its events. */
function countDelivered(events: readonly OrderEvent[], outcome: StartOutcome, deps: PipelineDeps): void {
  for (const event of events) {
    deps.metrics.bridgeRecords.inc({ type: event.type, outcome });
    if (outcome === 'accepted') deps.hint.set(hintKey(event), true);
    else
      deps.log.info(
        {
          eventId: event.eventId,
          type: event.type,
          orderVersion: event.orderVersion,
          correlationId: event.correlationId,
        },
        "order's run had closed; event recorded through the store",
      );
  }
}

/**
 * 5. dead-letter: the record's own bytes and headers to the DLQ; one that cannot fit is written reduced. A record
 * that `dlq redrive` sent back carries its history (src/adapters/dlq/dead-letter.ts REDRIVE_HEADERS): failing again, it
 * is dead-lettered with the attempts added up and the original first-failure time.
 */
export async function deadLetter(
  r: RecordInPartition,
  failure: { error: Error; attempts: number; firstFailureAt: Date; type: string },
  deps: PipelineDeps,
  ctx: PartitionContext,
): Promise<'dead-lettered'> {
  const history = redriveHistory(r.record.headers);
  const { attempts, firstFailureAt } = carryForward(failure, history);
  if (history) {
    deps.log.info(
      { partition: r.partition, offset: r.record.offset, redrivenFrom: history.from, attempts },
      'redriven record failed again; its attempts and first failure carried forward',
    );
  }
  const d: DeadLetter = {
    key: r.record.key,
    value: r.record.value,
    headers: withoutRedriveCount(r.record.headers),
    origin: { topic: r.topic, partition: r.partition, offset: r.record.offset, timestamp: r.record.timestamp },
    group: deps.group,
    error: { name: failure.error.name, message: failure.error.message },
    attempts,
    firstFailureAt,
    lastFailureAt: new Date(),
    stage: 'edge',
  };
  const form = await ctx.gates.deadLetter.run(
    () => publishDeadLetter(deps.sender, deps.dlqTopic, d, deps.dlqEncryption),
    ctx.signal,
  );
  if (form !== 'whole') {
    deps.metrics.failures.inc({ operation: 'dead-letter', error_class: 'DeadLetterTooLarge' });
    deps.log.warn(
      { partition: r.partition, offset: r.record.offset, form, bytes: r.record.value?.length ?? 0 },
      'dead letter did not fit the DLQ topic; written without its value (size and SHA-256 kept)',
    );
  }
  deps.metrics.bridgeRecords.inc({ type: failure.type, outcome: 'dead-lettered' });
  return 'dead-lettered';
}
