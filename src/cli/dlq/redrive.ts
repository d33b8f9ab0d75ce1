/**
 * `fulfilment dlq redrive`: publishes chosen dead letters back to the orders topic — the original key and value
 * bytes and the original headers, without the `dlq-*` ones, plus `redriven-from: <partition:offset>` and the
 * dead letter's history (src/adapters/dlq/dead-letter.ts REDRIVE_HEADERS) — at most `rate` per second (token bucket). The
 * DLQ itself is left as it is; each redrive is recorded in the redrive log (redrive-log.ts).
 *
 * Rules:
 * - each origin is sent once per run (copies.ts): filters and `--all` select dead letters, a dead letter
 *   being selected when any of its copies is, and send its first-written copy; of several `--id`s holding copies
 *   of one origin, only the first written is sent;
 * - a dead letter whose value the DLQ does not hold (`dlq-value-form: too-large`) is skipped with its size and
 *   SHA-256, and the run goes on;
 * - a dead letter the redrive log says was redriven already is skipped, unless `--again`;
 * - every other one is first parsed with the bridge's own edge parser (record-pipeline.ts classify), as the bridge
 *   would see the redriven record: one that is still malformed is refused, naming the field and the reason, and not
 *   sent, unless `--force`; one of an unknown type is sent, with a note that the bridge will ignore it;
 * - "duplicates are absorbed downstream by event id" is said of valid events only: the event id is the dedupe key
 *   of the order's workflow and of `processed_events`; a malformed record has no such protection;
 * - a forced record that fails again is dead-lettered by the bridge with the attempts added up and the original
 *   first-failure time (the history headers), as a new dead letter whose origin is the redriven copy;
 * - the run ends with one audit line on stderr (audit.ts), whatever happened.
 *
 * The parts: what a redriven record is (redriven-record.ts), what a run will do (redrive-plan.ts), what it prints
 * (redrive-words.ts); here, the run itself: checked, planned, shown or sent, audited.
 */
import { withAdmin } from '../../adapters/kafka/admin.js';
import { createSender } from '../../adapters/kafka/sender.js';
import type { CliContext } from '../context.js';
import { NotFoundError, UsageError } from '../cli-errors.js';
import { cliKafka } from '../kafka.js';
import { println } from '../output.js';
import { formatPosition } from '../position.js';
import { TokenBucket } from '../token-bucket.js';
import { audit, defaultOperator } from './audit.js';
import { describeOrigin, originOf } from './copies.js';
import { describeFilter } from './filter.js';
import { ensureRedriveLog, recordRedrive, redriveLogKey, redriveLogTopicOf } from './redrive-log.js';
import { planRun, type DlqRedriveOptions, type Planned, type RedriveResult, type RunPlan } from './redrive-plan.js';
import { runLines } from './redrive-words.js';
import { checkSelection } from './selection.js';
import { redriveHeaders } from './redriven-record.js';

export type { DlqRedriveOptions, RedriveResult } from './redrive-plan.js';

/** Records per second when `--rate` is not given. */
export const DEFAULT_REDRIVE_RATE = 10;

/** Raised by the CLI after a run that refused dead letters, so the exit code says so (1); the result was printed. */
export class RedriveRefused extends Error {
  override name = 'RedriveRefused';
}

/** The error a finished (not dry) run ends with when it refused dead letters; undefined when it refused none. */
export function refusalOf(result: RedriveResult): RedriveRefused | undefined {
  if (result.dryRun || result.refused.length === 0) return undefined;
  const n = result.refused.length;
  return new RedriveRefused(
    `${n} dead letter(s) refused as still malformed and not sent (${result.refused.map((r) => r.position).join(', ')}): ` +
      `fix the producer and purge ${n === 1 ? 'it' : 'them'}, or send ${n === 1 ? 'it' : 'them'} anyway with --force`,
  );
}

export async function dlqRedrive(ctx: CliContext, opts: DlqRedriveOptions): Promise<RedriveResult> {
  const { config, out } = ctx;
  checkSelection(opts);
  const rate = opts.rate ?? DEFAULT_REDRIVE_RATE;
  if (!(rate > 0) || !Number.isFinite(rate))
    throw new UsageError(`--rate: expected a number of records per second > 0, got ${rate}`);
  const dryRun = opts.dryRun ?? false;
  const force = opts.force ?? false;
  const again = opts.again ?? false;
  const operator = opts.operator ?? defaultOperator();
  const startedAt = new Date();
  const target = config.ORDERS_TOPIC;
  const redriveLogTopic = redriveLogTopicOf(config.DLQ_TOPIC);
  const filter = opts.filter ?? {};
  const result: RedriveResult = {
    dryRun,
    operator,
    redriveLogTopic,
    selected: [],
    sent: [],
    planned: [],
    skipped: [],
    alreadyRedriven: [],
    refused: [],
    folded: [],
  };
  const auditEntry = (extra: Record<string, unknown> = {}) => ({
    audit: 'dlq redrive',
    at: startedAt.toISOString(),
    operator,
    dlqTopic: config.DLQ_TOPIC,
    target,
    dryRun,
    selection: opts.ids?.length
      ? { ids: opts.ids.map((p) => formatPosition(p.partition, p.offset)) }
      : opts.all
        ? { all: true }
        : { filter: describeFilter(filter) },
    force,
    again,
    rate,
    outcome: {
      selected: result.selected.length,
      sent: result.sent.length,
      refused: result.refused.length,
      alreadyRedriven: result.alreadyRedriven.length,
      noValue: result.skipped.length,
      folded: result.folded.length,
      forced: result.sent.filter((s) => s.forced).length,
    },
    sent: result.sent.map((s) => `${s.from}→${s.to}`),
    refused: result.refused.map((r) => r.position),
    ...extra,
  });
  try {
    await run(ctx, opts, { rate, dryRun, force, again, operator, target, redriveLogTopic, filter, result });
  } catch (err) {
    audit(out, auditEntry({ error: (err as Error)?.message ?? String(err) }));
    throw err;
  }
  audit(out, auditEntry());
  return result;
}

/** A run in steps: select and plan, then either show the plan (dry run, or nothing to send) or send it, paced. */
async function run(ctx: CliContext, opts: DlqRedriveOptions, p: RunPlan): Promise<void> {
  const { config, out } = ctx;
  const { rate, dryRun, target, result } = p;
  const kafka = cliKafka(ctx);
  const plan = await planRun(ctx, kafka, opts, p);
  if (!plan) {
    println(out, `nothing to redrive: no dead letters in ${config.DLQ_TOPIC} match (${describeFilter(p.filter)})`);
    return;
  }
  const lines = runLines(p);
  if (dryRun || result.planned.length === 0) {
    for (const { record: r, summary: s, step } of plan)
      println(
        out,
        step.kind === 'send'
          ? `would redrive ${s.position} → ${target}  ${lines.describe(r, s)}${step.note}`
          : lines.notSent(s, step),
      );
    if (dryRun)
      println(
        out,
        `dry run: ${result.planned.length} dead letter(s) would be redriven to ${target} at ≤ ${rate}/s${lines.summary(result.planned.length)}; nothing was sent`,
      );
    else println(out, `redrove 0 dead letter(s) to ${target}${lines.summary(0)}`);
    return;
  }
  await sendPlan(ctx, kafka, opts, p, plan, lines);
  println(
    out,
    `redrove ${result.sent.length} dead letter(s) to ${target} at ≤ ${rate}/s${lines.summary(result.sent.length)}`,
  );
}

/** Sends the plan at ≤ rate per second on an idempotent producer, recording each redrive in the redrive log. */
async function sendPlan(
  { config, out }: CliContext,
  kafka: ReturnType<typeof cliKafka>,
  opts: DlqRedriveOptions,
  p: RunPlan,
  plan: Planned[],
  lines: ReturnType<typeof runLines>,
): Promise<void> {
  const { target, result } = p;
  if (!(await withAdmin(kafka, (admin) => admin.topicExists(target))))
    throw new NotFoundError(`topic ${target} (ORDERS_TOPIC) does not exist on the brokers`);
  await ensureRedriveLog(kafka, p.redriveLogTopic, config.KAFKA_REPLICATION_FACTOR);
  // Idempotent: a retried request never writes a second copy.
  const sender = createSender(kafka, { idempotent: true });
  const bucket = TokenBucket.perSecond(p.rate, opts.clock);
  await sender.connect();
  try {
    for (const { record: r, summary: s, step } of plan) {
      if (step.kind !== 'send') {
        println(out, lines.notSent(s, step));
        continue;
      }
      await bucket.take();
      const at = await sender.sendOne(target, { key: r.key, value: r.value, headers: redriveHeaders(r) });
      const to = at ? formatPosition(at.partition, at.offset) : '?';
      const forced = step.verdict === 'malformed';
      result.sent.push({ from: s.position, to, verdict: step.verdict, forced });
      const origin = originOf(r);
      await recordRedrive(sender, p.redriveLogTopic, redriveLogKey(r), {
        dlqPosition: s.position,
        origin: origin ? describeOrigin(origin) : null,
        to: `${target} ${to}`,
        at: new Date().toISOString(),
        operator: p.operator,
        verdict: step.verdict,
        forced,
        again: p.again,
        attempts: s.attempts,
      });
      println(out, `redriven ${s.position} → ${target} ${to}  ${lines.describe(r, s)}${step.note}`);
    }
  } finally {
    await sender.disconnect();
  }
}
