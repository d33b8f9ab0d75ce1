/**
 * The bridge: a thin consumer that hands each order event to its order's workflow and commits the offset only
 * after Temporal accepted it. No business logic lives here. This file holds its options, start and stop; one
 * record's path is record-pipeline.ts (classify → route → dedupe hint → deliver → dead-letter), one partition's
 * read-ahead window is partition-run.ts (lanes, offsets, commits, parking), and group membership is the Kafka port's
 * consumer supervisor (src/adapters/kafka/consumer-supervisor.ts).
 *
 * Within a partition, the records read and not yet finished (the read-ahead, at most `readAhead.records` records and
 * `readAhead.bytes` bytes from the oldest unfinished one, across fetches) run in lanes by order (lanes.ts): one slow
 * order does not hold up the others, one order's events stay in partition order. At most `maxDeliveries`
 * signal-with-start calls are in flight over all partitions, and a freed slot goes to the tenant whose turn it is by
 * the tenants' weights (fair-slots.ts): a tenant's backlog does not stand in front of another tenant's orders, and a
 * tenant alone gets every slot. What is held in memory is bounded by the read-ahead plus one fetch per partition.
 */
import { EventEmitter } from 'node:events';
import { LRUCache } from 'lru-cache';
import type { Kafka } from '../../adapters/kafka/client.js';
import { createConsumerSupervisor } from '../../adapters/kafka/consumer-supervisor.js';
import { createSender } from '../../adapters/kafka/sender.js';
import type { Logger } from '../../base/log.js';
import type { Metrics } from '../../base/metrics.js';
import { BRIDGE_RETRY, type TransientRetry } from '../../base/retry-policies.js';
import { AccessRefusedError } from '../../base/errors.js';
import type { PayloadKeys } from '../../base/config/payload-keys.js';
import { Abandoned, BackoffGate, DelaySequence } from './backoff-gate.js';
import type { OrderStarter } from './order-starter.js';
import type { PartitionRunOptions } from './partition-contract.js';
import { PartitionRun } from './partition-run.js';
import {
  processOrderEvents,
  processRecord,
  type OrderEventRecord,
  type PipelineDeps,
  type PipelineMetrics,
} from './record-pipeline.js';
import type { Tracer } from '@opentelemetry/api';
import { DEFAULT_TENANT_LABELS, TenantLabels } from '../../base/tenants/busiest-tenant-labels.js';
import { publishTenantGauges } from './tenant-gauges.js';
import type { TenantWeightOf } from '../../base/tenants/weights.js';
import { FairSlots } from './fair-slots.js';
import { traceRecord, traceRecords } from './record-span.js';

export type { TransientRetry } from '../../base/retry-policies.js';

export const DEFAULT_MAX_DELIVERIES = 32;
/** Per partition, most records from the oldest unfinished one through one that may start (BRIDGE_READ_AHEAD_RECORDS). */
export const DEFAULT_READ_AHEAD_RECORDS = 4000;
/** Per partition, most bytes of record values from the oldest unfinished one through one that may start. */
export const DEFAULT_READ_AHEAD_BYTES = 4 * 1024 * 1024;
export const DEFAULT_PARTITIONS_CONCURRENTLY = 4;
/** Most events of one order handed over in one signal by default (BRIDGE_COALESCE_MAX_EVENTS). */
export const DEFAULT_COALESCE_MAX_EVENTS = 100;
/**
 * Most bytes of record values handed over in one signal: well under Temporal's payload size warning (512 KiB) and
 * error (2 MiB) limits, so a group is never refused for its size while each of its events alone would not be.
 */
export const COALESCE_MAX_BYTES = 256 * 1024;

/**
 * Signal-with-start calls one bridge keeps in flight on a topic of `partitions` partitions (all assigned to it): every
 * order read has a lane of its own, so the delivery slots are the bound whatever the partitions.
 */
export function bridgeConcurrency(c: { BRIDGE_MAX_DELIVERIES: number }): number {
  return c.BRIDGE_MAX_DELIVERIES;
}

export interface BridgeOptions {
  /** The consumer's client: its connection retries ride out a broker restart while keeping the membership. */
  kafka: Kafka;
  /**
   * The dead-letter sender's client (default `kafka`): shorter connection retries, so a write that cannot land soon
   * reaches the partition's gate (counted, abandonable) and start-up reports a broker that is down within seconds.
   */
  senderKafka?: Kafka;
  topic: string;
  dlqTopic: string;
  groupId: string;
  starter: OrderStarter;
  logger: Logger;
  metrics: Pick<
    Metrics,
    | 'failures'
    | 'oldestUnprocessedAge'
    | 'parkedBudget'
    | 'partitionParkedSeconds'
    | 'retries'
    | 'tenantOldestWaiting'
    | 'tenantDeliveriesInFlight'
  > &
    PipelineMetrics;
  /** Signal-with-start calls in flight at once over all partitions, shared by the tenants' weights. Default 32. */
  maxDeliveries?: number;
  /** Each tenant's weight in the delivery slots' shares (src/base/tenants/weights.ts). Default: 1 for every tenant. */
  weightOf?: TenantWeightOf;
  /**
   * Per partition, most records and bytes from the oldest unfinished record through one that may start (the
   * read-ahead). Default 4000 records, 4 MiB.
   */
  readAhead?: { records?: number; bytes?: number };
  /** Most tenants named in the per-tenant metrics (the busiest); the rest are `other`. Default 20. */
  tenantLabels?: number;
  /** Most bytes fetched per partition at a time; bounds memory. Default 128 KiB. */
  maxBytesPerPartition?: number;
  /** Most bytes one fetch returns over all partitions; bounds memory. Default 512 KiB. */
  maxBytes?: number;
  /**
   * Most events of one order queued together in a lane that are handed over in one signal (a list on orderEvent); 1 hands
   * every event over alone. Default 100.
   */
  coalesceMaxEvents?: number;
  /** Partitions processed at once by this instance. Default 4. */
  partitionsConcurrently?: number;
  retry?: Partial<TransientRetry>;
  /** Consumer session timeout, milliseconds. Default 30000. */
  sessionTimeoutMs?: number;
  /** How many accepted event ids the dedupe hint remembers. Default 10000. */
  dedupeHintSize?: number;
  /** How often the finished prefix is committed while a batch runs, milliseconds. Default 1000. */
  commitIntervalMs?: number;
  /** Tracing on: each record runs in a `kafka.record <type>` span (src/roles/bridge/record-span.ts). */
  tracer?: Tracer;
  /** Keys that encrypt dead-letter values (PAYLOAD_ENCRYPTION_KEYS); unset: values are kept as they came. */
  dlqEncryption?: PayloadKeys;
  /**
   * How long a record only its order's workflow refuses (RecordTransientError) is retried alone before it is
   * dead-lettered, milliseconds. Default 300000.
   */
  recordRetryBudgetMs?: number;
  /** How long a partition may stay parked before it is logged and alerted on (the parked gauges), milliseconds. Default 300000. */
  parkedBudgetMs?: number;
}

/** What a bridge reports as it runs (tests and tools watch it; nothing in the bridge depends on listeners). */
export interface BridgeEvents {
  /** This member joined the group and was assigned `partitions`. */
  join: [partitions: number[]];
  /** The broker acknowledged a commit of `offset` (the next offset to consume) on `partition`. */
  commit: [partition: number, offset: bigint];
  /**
   * The bridge stopped for good — its consumer gave up (a failure no restart cures), or Temporal refused this client
   * (AccessRefusedError) — and consumes nothing any more.
   */
  failed: [err: Error];
}

export interface Bridge {
  /** Connects and starts consuming; may be called again after it failed (start-up waits for Kafka that way). */
  start(): Promise<void>;
  /** Stops fetching, lets in-flight records settle (abandoning backoff waits), commits the finished prefix, leaves the group. */
  stop(): Promise<void>;
  /**
   * Readiness of its Kafka side: in the consumer group (joined, not crashed, restarting, given up or stopped) and
   * answered by the broker within the session timeout.
   */
  kafkaStatus(): { ok: boolean; reason?: string };
  readonly events: EventEmitter<BridgeEvents>;
}

/**
 * Over 80 lines: a factory whose methods (start, stop, kafkaStatus) and the consumer's handlers share one closure's
 * state — the partitions' runs, the gates, the consumer — and each of its inner functions is a named step of its own.
 */
export function createBridge(opts: BridgeOptions): Bridge {
  const { topic, groupId, metrics } = opts;
  const log = opts.logger.child({ component: 'bridge', group: groupId });
  const retry: TransientRetry = { ...BRIDGE_RETRY, ...opts.retry };
  const stopping = new AbortController();
  const events = new EventEmitter<BridgeEvents>();
  const sender = createSender(opts.senderKafka ?? opts.kafka);
  const slots = new FairSlots(opts.maxDeliveries ?? DEFAULT_MAX_DELIVERIES, opts.weightOf ?? (() => 1));
  const tenantLabels = new TenantLabels(opts.tenantLabels ?? DEFAULT_TENANT_LABELS);
  const parkedBudgetMs = opts.parkedBudgetMs ?? 300_000;
  /** Set once Temporal refused this client for good: nothing more is delivered, the records stay uncommitted. */
  let refused: AccessRefusedError | undefined;
  const refuse = (err: AccessRefusedError): never => {
    if (!refused) {
      refused = err;
      consumer.pauseAll();
      metrics.failures.inc({ operation: 'deliver', error_class: err.name });
      log.fatal(
        { err: err.message, errorClass: err.name },
        'Temporal refused this bridge for good; it stops consuming',
      );
      events.emit('failed', err);
    }
    throw new Abandoned(err.message);
  };
  const deps: PipelineDeps = {
    starter: {
      deliver: (events, signal) =>
        refused
          ? Promise.reject(new Abandoned(refused.message))
          : slots
              .run(events[0]!.tenantId, signal, () => opts.starter.deliver(events))
              .catch((err: unknown) =>
                err instanceof AccessRefusedError ? refuse(err) : Promise.reject(err as Error),
              ),
    },
    recordRetry: { ...retry, budgetMs: opts.recordRetryBudgetMs ?? 300_000 },
    hint: new LRUCache<string, true>({ max: opts.dedupeHintSize ?? 10_000 }),
    sender,
    dlqTopic: opts.dlqTopic,
    dlqEncryption: opts.dlqEncryption,
    group: groupId,
    metrics,
    log,
  };
  const partitions = new Map<number, PartitionRun>();
  const runOptions: PartitionRunOptions = {
    readAhead: {
      records: Math.max(1, opts.readAhead?.records ?? DEFAULT_READ_AHEAD_RECORDS),
      bytes: Math.max(1, opts.readAhead?.bytes ?? DEFAULT_READ_AHEAD_BYTES),
    },
    commitIntervalMs: opts.commitIntervalMs ?? 1000,
    stopping: stopping.signal,
    process: (r, ctx) => traceRecord(opts.tracer, groupId, r, () => processRecord(r, deps, ctx)),
    // Lanes group only records of one order (laneKey), so a group is always one order's events.
    processGroup: (rs, ctx) =>
      traceRecords(opts.tracer, groupId, rs, () => processOrderEvents(rs as OrderEventRecord[], deps, ctx)),
    coalesce: { maxEvents: opts.coalesceMaxEvents ?? DEFAULT_COALESCE_MAX_EVENTS, maxBytes: COALESCE_MAX_BYTES },
    log,
  };
  let ageTimer: NodeJS.Timeout | undefined;
  let stopped: Promise<void> | undefined;

  const sessionTimeoutMs = opts.sessionTimeoutMs ?? 30_000;
  const consumer = createConsumerSupervisor({
    kafka: opts.kafka,
    topic,
    groupId,
    sessionTimeoutMs,
    maxBytesPerPartition: opts.maxBytesPerPartition ?? 128 * 1024,
    maxBytes: opts.maxBytes ?? 512 * 1024,
    partitionsConcurrently: opts.partitionsConcurrently ?? DEFAULT_PARTITIONS_CONCURRENTLY,
    restartDelays: new DelaySequence(retry),
    stopping: stopping.signal,
    onBatch: async (batch) => {
      // Nothing is read once stopping: the records stay uncommitted for whoever owns the partition next.
      if (stopping.signal.aborted) return;
      // Read into the partition's window; its records run after this returns, so kafkajs fetches on meanwhile.
      partitionRun(batch.partition).accept(batch);
      return Promise.resolve();
    },
    events: {
      joined(assigned) {
        log.info({ partitions: assigned }, 'joined group');
        // A new generation: whatever this member tracked may now belong to another member.
        for (const p of partitions.values()) p.resetGeneration();
        // A partition now another member's is forgotten, with its gates: a commit this member could not make there
        // is no longer this member's to make, and must not keep it unready or its partition counted as parked. Its
        // pause is lifted, or it would stay paused when it comes back to this member.
        for (const [partition, p] of partitions)
          if (!assigned.includes(partition)) {
            p.handOver();
            partitions.delete(partition);
            overBudget.delete(partition);
            const labels = { group: groupId, topic, partition: String(partition) };
            metrics.oldestUnprocessedAge.remove(labels);
            metrics.partitionParkedSeconds.remove(labels);
          }
        events.emit('join', assigned);
      },
      committed: (partition, offset) => events.emit('commit', partition, BigInt(offset)),
      restarting(err, delayMs) {
        metrics.retries.inc({ operation: 'consume' });
        log.warn({ err: err.message, errorClass: err.name, delayMs }, 'consumer failed; restarting it after a delay');
      },
      crashed(err) {
        metrics.failures.inc({ operation: 'consume', error_class: err.name });
        log.error({ err: err.message, errorClass: err.name }, 'consumer crashed');
      },
      restartFailed(err) {
        metrics.failures.inc({ operation: 'consume', error_class: err.name });
        log.error({ err: err.message }, 'restarting the consumer failed');
      },
      gaveUp(err) {
        metrics.failures.inc({ operation: 'consume', error_class: err.name });
        log.error({ err: err.message, errorClass: err.name }, 'consumer gave up: a failure no restart cures');
        // Emitted without listeners it would throw (EventEmitter's 'error' rule does not apply to 'failed').
        events.emit('failed', err);
      },
    },
  });

  function gate(operation: string, partition: number, park: () => void): BackoffGate {
    return new BackoffGate(retry, {
      onRetry: (err) => {
        metrics.retries.inc({ operation });
        metrics.failures.inc({ operation, error_class: err.name });
      },
      onBackoff: (err, delayMs) => {
        park();
        log.warn(
          { operation, partition, err: err.message, delayMs },
          'transient failure; partition parked, backing off',
        );
      },
    });
  }

  function partitionRun(partition: number): PartitionRun {
    let p = partitions.get(partition);
    if (!p) {
      const park = () => p!.park();
      p = new PartitionRun(
        partition,
        {
          deliver: gate('deliver', partition, park),
          deadLetter: gate('dead-letter', partition, park),
          commit: gate('commit', partition, park),
        },
        consumer,
        runOptions,
      );
      partitions.set(partition, p);
    }
    return p;
  }

  /** Partitions already logged as parked past the budget, in their current parked spell. */
  const overBudget = new Set<number>();
  /** Per partition: the age of its oldest fetched but unfinished record, and how long it has been parked. */
  function publishGauges(): void {
    const now = Date.now();
    publishTenantGauges(now, partitions.values(), slots, tenantLabels, metrics);
    for (const [partition, run] of partitions) {
      const labels = { group: groupId, topic, partition: String(partition) };
      const oldest = run.tracker.oldestPendingTimestamp();
      metrics.oldestUnprocessedAge.set(labels, oldest === undefined ? 0 : Math.max(0, (now - oldest) / 1000));
      const parkedMs = run.parkedForMs(now);
      metrics.partitionParkedSeconds.set(labels, parkedMs / 1000);
      if (parkedMs <= parkedBudgetMs) overBudget.delete(partition);
      else if (!overBudget.has(partition)) {
        overBudget.add(partition);
        log.error(
          { partition, parkedSeconds: Math.round(parkedMs / 1000), budgetSeconds: parkedBudgetMs / 1000 },
          'partition parked longer than its budget: a dependency has refused it all that time',
        );
      }
    }
  }

  return {
    events,
    kafkaStatus() {
      if (refused) return { ok: false, reason: `the bridge stopped: ${refused.message}` };
      const member = consumer.status();
      if (!member.joined) return { ok: false, reason: `Kafka: ${member.reason ?? 'not in the consumer group'}` };
      const now = Date.now();
      // Writes refused (fewer replicas in sync than the topic's minimum) while reads may still answer: commits or dead
      // letters refused for longer than the session timeout make the bridge unready, saying which. Checked first: a
      // member whose batches wait on a refused commit stops heartbeating too, and this is the cause to name.
      for (const run of partitions.values()) {
        for (const operation of ['commit', 'deadLetter'] as const) {
          const failingMs = run.gates[operation].failingForMs(now);
          if (failingMs > sessionTimeoutMs)
            return {
              ok: false,
              reason: `Kafka has refused the bridge's ${operation === 'commit' ? 'offset commits' : 'dead letters'} on partition ${run.partition} for ${Math.round(failingMs / 1000)} s`,
            };
        }
      }
      const silentMs = now - member.lastContactAt;
      if (silentMs > sessionTimeoutMs) {
        return {
          ok: false,
          reason: `Kafka has not answered the consumer for ${Math.round(silentMs / 1000)} s (session timeout ${sessionTimeoutMs} ms)`,
        };
      }
      return { ok: true };
    },
    async start() {
      await sender.connect();
      await consumer.start();
      metrics.parkedBudget.set(parkedBudgetMs / 1000);
      ageTimer ??= setInterval(publishGauges, 1000);
      ageTimer.unref();
    },
    stop() {
      stopped ??= (async () => {
        stopping.abort();
        if (ageTimer) clearInterval(ageTimer);
        consumer.pauseAll();
        // Each step is logged: a stop that outlasts its deadline says where it waited.
        log.info({ partitions: partitions.size }, "bridge stopping: settling the partitions' running records");
        await Promise.allSettled([...partitions.values()].map((p) => p.settle()));
        for (const p of partitions.values()) p.dispose();
        log.info('bridge stopping: leaving the consumer group');
        await consumer
          .disconnect()
          .catch((err: unknown) => log.warn({ err: (err as Error).message }, 'consumer disconnect failed'));
        log.info('bridge stopping: disconnecting the dead-letter sender');
        await sender.disconnect();
        log.info('bridge stopped');
      })();
      return stopped;
    },
  };
}
