/**
 * `fulfilment redeliver`: feeds a stretch of the orders topic's history through the bridge's own delivery path
 * again, in a consumer group of its own, at a bounded rate. Per record, as the bridge does:
 *
 *   1. classify — the bridge's own classify (src/roles/bridge/record-pipeline.ts); a malformed record is counted and
 *                 reported, NOT dead-lettered again: the bridge dead-lettered it when it first consumed it, and a
 *                 second copy would only mislead the DLQ
 *   2. route    — unknown event types are counted and ignored
 *   3. deliver  — the bridge's order starter (signal-with-start); transient failures back off and retry a bounded
 *                 number of times (REDELIVERY_RETRY), then the redelivery stops with its progress committed
 *
 * Redelivering never double-applies: every event reaches the order's workflow, which dedupes by event id, and the
 * activities claim the event id in processed_events before any effect; an order whose run closed is not reopened.
 * The service's consumer group is never touched — the redelivery group must differ from CONSUMER_GROUP.
 */
import { ExponentialBackoff, handleWhen, retry } from 'cockatiel';
import { createOrderStarter, type OrderStarter } from '../../roles/bridge/order-starter.js';
import { classify } from '../../roles/bridge/record-pipeline.js';
import { PermanentError, TransientError } from '../../base/errors.js';
import { withAdmin } from '../../adapters/kafka/admin.js';
import type { ReadOptions } from '../../adapters/kafka/topic-reader.js';
import { REDELIVERY_RETRY } from '../../base/retry-policies.js';
import { PermanentStartupError } from '../../base/startup.js';
import { connectClient } from '../../domain/temporal.js';
import { workflowSettings } from '../../domain/workflow-settings.js';
import { tenantWeights } from '../../base/tenants/weights.js';
import type { CliContext } from '../context.js';
import { UsageError } from '../cli-errors.js';
import { cliKafka, readTopic, topicPartitions } from '../kafka.js';
import { eprintln, println } from '../output.js';
import { formatPosition } from '../position.js';
import { startProgress, type Progress } from '../progress.js';
import { TokenBucket } from '../token-bucket.js';
import { createLedger } from './ledger.js';
import { createLateEventRecorder } from '../../roles/bridge/late-events.js';
import { checkRedeliveryOptions, DEFAULT_REDELIVERY_GROUP, type RedeliveryOptions } from './options.js';
import { describeRanges, planRedelivery } from './range.js';
import { describePoint } from '../range-point.js';

export { checkRedeliveryOptions, DEFAULT_REDELIVERY_GROUP, type RedeliveryOptions } from './options.js';

/** Delivery attempts per event before a transient failure stops the redelivery (REDELIVERY_RETRY). */
export const DELIVERY_ATTEMPTS = REDELIVERY_RETRY.attempts;

/** Partitions redelivered at once; one partition's records are always delivered in order. */
const PARTITIONS_AT_ONCE = 4;

export interface RedeliverySummary {
  topic: string;
  /** The redelivery group, or null on a dry run (which reads in a throwaway group and commits nothing). */
  group: string | null;
  dryRun: boolean;
  from: string;
  to: string;
  /** Half-open offset ranges per partition, e.g. `0:[0,12)`. */
  ranges: string;
  /** Records in the ranges. */
  records: number;
  /** Records read so far. */
  read: number;
  /** Valid order events read. */
  valid: number;
  /** Valid events a run of their order accepted (0 on a dry run). */
  delivered: number;
  /** Valid events whose id was already in processed_events before this redelivery reached them; null when unknown. */
  alreadyProcessed: number | null;
  /** Events for an order whose run had closed: not reopened, recorded through the store as a run would. */
  recordedLate: number;
  /** Events Temporal refused permanently (e.g. too large); not dead-lettered by a redelivery. */
  rejected: number;
  malformed: number;
  unknownType: number;
  /** False when the redelivery stopped early (interrupted or a dependency stayed down). */
  completed: boolean;
}

/** Redelivers in steps: plan the ranges, count what the ledger holds, then read and hand over each record, paced. */
export async function redeliver(ctx: CliContext, opts: RedeliveryOptions): Promise<RedeliverySummary> {
  checkRedeliveryOptions(ctx, opts);
  const { config, out } = ctx;
  const dryRun = opts.dryRun ?? false;
  const group = opts.group ?? DEFAULT_REDELIVERY_GROUP;
  const topic = config.ORDERS_TOPIC;
  const kafka = cliKafka(ctx);
  const plan = await planRange(kafka, topic, opts);
  for (const note of plan.notes) eprintln(out, `note: ${note}`);
  const s = emptySummary(topic, dryRun ? null : group, opts, plan);
  eprintln(
    out,
    dryRun
      ? `dry run: reading ${s.records} record(s) of ${topic} ${s.ranges}; nothing will be delivered or committed`
      : `redelivering ${s.records} record(s) of ${topic} ${s.ranges} as group ${group} at ≤ ${opts.rate}/s`,
  );
  const ledger = createLedger(config);
  const wasProcessed = await processedCounter(ctx, ledger, s);
  const client = dryRun ? undefined : await connectClient(config);
  // An event whose order's run has closed is recorded through the store, as the bridge records it.
  const starter =
    client &&
    createOrderStarter(
      client,
      config.TEMPORAL_TASK_QUEUE,
      workflowSettings(config),
      createLateEventRecorder({ db: ledger.db, statusTopic: config.STATUS_TOPIC }),
      { weightOf: tenantWeights(config) },
    );
  const reached = new Map<number, bigint>();
  const progress = startProgress(out, dryRun ? 'dry run' : 'redelivery', s.records, { everyMs: opts.progressEveryMs });
  try {
    await readTopic({
      kafka,
      topic,
      ranges: plan.ranges,
      group: dryRun ? undefined : group,
      clientId: `${config.KAFKA_CLIENT_ID}-cli`,
      concurrency: PARTITIONS_AT_ONCE,
      signal: ctx.signal,
      onAdvance: (partition, next) => reached.set(partition, next),
      onRecord: recordHandler(ctx, opts, { summary: s, topic, wasProcessed, starter, progress }),
    });
    s.completed = true;
  } catch (err) {
    progress.done();
    printSummary(ctx, s, opts.json);
    const left = plan.ranges.filter((r) => (reached.get(r.partition) ?? r.start) < r.end);
    if (!dryRun && !(err instanceof UsageError) && left.length > 0) {
      const from = left.map((r) => formatPosition(r.partition, reached.get(r.partition) ?? r.start)).join(',');
      const to = left.map((r) => formatPosition(r.partition, r.end)).join(',');
      eprintln(
        out,
        `redelivery stopped early; group ${group} committed every record it finished. To go on: --from ${from} --to ${to}`,
      );
    }
    throw err;
  } finally {
    progress.done();
    await ledger.close().catch(() => undefined);
    await client?.connection.close().catch(() => undefined);
  }
  printSummary(ctx, s, opts.json);
  return s;
}

/** The half-open offset range of every partition, `--from` and `--to` resolved (a time through the brokers). */
function planRange(kafka: ReturnType<typeof cliKafka>, topic: string, opts: RedeliveryOptions) {
  return withAdmin(kafka, async (admin) => {
    const partitions = await topicPartitions(admin, topic);
    return planRedelivery(partitions, opts.from, opts.to, {
      from: opts.from.kind === 'time' ? await admin.offsetsAt(topic, opts.from.at) : undefined,
      to: opts.to?.kind === 'time' ? await admin.offsetsAt(topic, opts.to.at) : undefined,
    });
  });
}

function emptySummary(
  topic: string,
  group: string | null,
  opts: RedeliveryOptions,
  plan: Awaited<ReturnType<typeof planRange>>,
): RedeliverySummary {
  return {
    topic,
    group,
    dryRun: opts.dryRun ?? false,
    from: describePoint(opts.from),
    to: opts.to ? describePoint(opts.to) : 'latest',
    ranges: describeRanges(plan.ranges),
    records: Number(plan.ranges.reduce((n, r) => n + (r.end - r.start), 0n)),
    read: 0,
    valid: 0,
    delivered: 0,
    alreadyProcessed: 0,
    recordedLate: 0,
    rejected: 0,
    malformed: 0,
    unknownType: 0,
    completed: false,
  };
}

/**
 * Counts, into the summary, the events the dedupe ledger already holds (for reporting only). A role refused for good
 * stops the redelivery; PostgreSQL unreachable only makes the count unknown (a warning, once).
 */
async function processedCounter(
  { out }: CliContext,
  ledger: ReturnType<typeof createLedger>,
  s: RedeliverySummary,
): Promise<(tenantId: string, eventId: string) => Promise<void>> {
  let ledgerDown = false;
  const down = (err: unknown) => {
    ledgerDown = true;
    s.alreadyProcessed = null;
    eprintln(
      out,
      `warning: cannot read processed_events (${(err as Error).message}); the already-processed count is unknown`,
    );
  };
  try {
    await ledger.checkRole();
  } catch (err) {
    if (err instanceof PermanentStartupError) {
      await ledger.close();
      throw err;
    }
    down(err);
  }
  return async (tenantId, eventId) => {
    if (ledgerDown) return;
    try {
      if (await ledger.alreadyProcessed(tenantId, eventId)) s.alreadyProcessed! += 1;
    } catch (err) {
      down(err);
    }
  };
}

/**
 * What happens to one record, as the bridge does it: 1. classify (the bridge's own verdict), 2. route (malformed and
 * unknown types counted, not delivered), 3. deliver at ≤ rate, a transient failure retried (REDELIVERY_RETRY) and a
 * permanent refusal counted as rejected.
 */
function recordHandler(
  { out }: CliContext,
  opts: RedeliveryOptions,
  run: {
    summary: RedeliverySummary;
    topic: string;
    wasProcessed: (tenantId: string, eventId: string) => Promise<void>;
    starter: OrderStarter | undefined;
    progress: Progress;
  },
): ReadOptions['onRecord'] {
  const { summary: s, topic, progress } = run;
  const bucket = TokenBucket.perSecond(opts.rate ?? 1);
  const transient = retry(
    handleWhen((err) => err instanceof TransientError),
    {
      maxAttempts: REDELIVERY_RETRY.attempts - 1,
      backoff: new ExponentialBackoff({
        initialDelay: REDELIVERY_RETRY.initialDelayMs,
        maxDelay: REDELIVERY_RETRY.maxDelayMs,
      }),
    },
  );
  transient.onRetry((reason) => {
    const error = 'error' in reason ? reason.error : undefined;
    eprintln(
      out,
      `warning: delivery failed (${error?.message ?? 'unknown'}); retrying in ${Math.round(reason.delay)} ms`,
    );
  });
  return async ({ partition, record }, { heartbeat }) => {
    const at = formatPosition(partition, record.offset);
    const classified = classify(record, topic, partition);
    s.read += 1;
    if (classified.kind === 'malformed') s.malformed += 1;
    else if (classified.kind === 'unknown-type') s.unknownType += 1;
    else {
      const { event } = classified;
      s.valid += 1;
      await run.wasProcessed(event.tenantId, event.eventId);
      if (run.starter) {
        await bucket.take(1, { maxSleepMs: 1000, onWait: heartbeat });
        try {
          const outcome = await transient.execute(async ({ attempt }) => {
            if (attempt > 0) await heartbeat();
            return run.starter!.deliver([event]);
          });
          if (outcome === 'accepted') s.delivered += 1;
          else s.recordedLate += 1;
        } catch (err) {
          if (!(err instanceof PermanentError)) {
            throw new Error(
              `delivering ${at} (event ${event.eventId}) failed after ${DELIVERY_ATTEMPTS} attempts: ${(err as Error).message}`,
              { cause: err },
            );
          }
          s.rejected += 1;
          eprintln(
            out,
            `warning: ${at} (event ${event.eventId}) refused by Temporal: ${err.message}; counted as rejected, not dead-lettered`,
          );
        }
      }
    }
    progress.tick();
  };
}

function printSummary(ctx: CliContext, s: RedeliverySummary, json?: boolean): void {
  const { out } = ctx;
  if (json) {
    println(out, JSON.stringify(s));
    return;
  }
  const n = (v: number | null) => String(v ?? '?').padStart(6);
  const head = s.dryRun
    ? `dry run of a redelivery of ${s.topic} from ${s.from} to ${s.to}: nothing delivered, nothing committed`
    : `redelivery of ${s.topic} from ${s.from} to ${s.to} as group ${s.group}: ${s.completed ? 'complete' : 'STOPPED EARLY'}`;
  const lines = [
    head,
    `  records in range   ${n(s.records)}  ${s.ranges}`,
    `  read               ${n(s.read)}`,
    s.dryRun
      ? `  would deliver      ${n(s.valid)}  valid order events`
      : `  delivered          ${n(s.delivered)}  accepted by a run of the order (signal-with-start)`,
    `    already applied  ${n(s.alreadyProcessed)}  event id in processed_events: duplicates, absorbed by the workflow and the ledger`,
  ];
  if (!s.dryRun) {
    lines.push(
      `  recorded late      ${n(s.recordedLate)}  the order's run had closed: not reopened, recorded through the store`,
      `  rejected           ${n(s.rejected)}  refused by Temporal (permanent); not dead-lettered by a redelivery`,
    );
  }
  lines.push(
    `  malformed          ${n(s.malformed)}  counted only: the bridge dead-lettered them when it first consumed them`,
    `  unknown type       ${n(s.unknownType)}  ignored, as the bridge does`,
  );
  for (const l of lines) println(out, l);
}
