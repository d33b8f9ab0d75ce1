/**
 * `fulfilment dlq redrive`: publishes chosen dead letters back to the orders topic — the original key and value
 * bytes and the original headers, without the `dlq-*` ones, plus `redriven-from: <partition:offset>` and the
 * dead letter's history (src/dlq/dead-letter.ts REDRIVE_HEADERS) — at most `rate` per second (token bucket). The
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
 */
import { classify, type Classified } from '../../bridge/record-pipeline.js';
import type { PayloadKeys } from '../../codec/keys.js';
import { DLQ_HEADERS, redriveHistoryHeaders, type RedriveHistory } from '../../dlq/dead-letter.js';
import { MalformedEventError } from '../../errors.js';
import { withAdmin } from '../../kafka/admin.js';
import type { Kafka } from '../../kafka/client.js';
import type { RecordHeaders } from '../../kafka/records.js';
import { createSender } from '../../kafka/sender.js';
import type { CliContext } from '../context.js';
import { NotFoundError, UsageError } from '../errors.js';
import { cliKafka } from '../kafka.js';
import { println } from '../output.js';
import { formatPosition, type Position } from '../position.js';
import { displayText } from '../redact.js';
import { TokenBucket, type Clock } from '../token-bucket.js';
import { audit, defaultOperator } from './audit.js';
import {
  allCopies,
  describeFolded,
  describeOrigin,
  groupCopies,
  originOf,
  summarizeCopies,
  type DeadLetterCopies,
  type DeadLetterSummary,
} from './copies.js';
import { describeFilter, matches, type DlqFilter } from './filter.js';
import {
  ensureRedriveLog,
  redriveLogKey,
  redriveLogTopicOf,
  readRedriveLog,
  recordRedrive,
  type RedriveLogEntry,
} from './redrive-log.js';
import { readDlq } from './reader.js';
import { failedAt, header, type DlqRecord } from './record.js';
import { checkSelection, type DlqSelection } from './selection.js';

/** Header naming the DLQ position a redriven record came from. */
export const REDRIVEN_FROM_HEADER = 'redriven-from';

/** Records per second when `--rate` is not given. */
export const DEFAULT_REDRIVE_RATE = 10;

/** What to redrive (`ids`, `filter` or `all`: selection.ts) and how. */
export interface DlqRedriveOptions extends DlqSelection {
  /** Records per second. Default 10. */
  rate?: number;
  /** Print what would be sent; send nothing. */
  dryRun?: boolean;
  /** Send dead letters the edge parser still refuses (malformed) anyway. */
  force?: boolean;
  /** Send dead letters the redrive log says were redriven already. */
  again?: boolean;
  /** Who runs it, for the audit line and the redrive log. Default: the OS user (audit.ts defaultOperator). */
  operator?: string;
  clock?: Clock;
}

/** What the edge parser makes of a dead letter, as the bridge would see it redriven. */
export type Verdict = 'order-event' | 'unknown-type' | 'malformed';

export interface RedriveResult {
  dryRun: boolean;
  operator: string;
  /** The redrive log consulted and written (`<DLQ_TOPIC>.redrives`). */
  redriveLogTopic: string;
  /** The dead letters chosen, one per origin, in DLQ order; skipped and refused ones included. */
  selected: DeadLetterSummary[];
  /** What was published: DLQ position → orders topic position, and what the edge parser made of it. Empty on a dry run. */
  sent: { from: string; to: string; verdict: Verdict; forced: boolean }[];
  /** What would be published (a dry run) or was meant to be (a real run), with the verdict. */
  planned: { position: string; verdict: Verdict; forced: boolean }[];
  /** Dead letters whose value the DLQ does not hold (also on a dry run), with why. */
  skipped: { position: string; reason: string }[];
  /** Dead letters not sent because the redrive log says they were redriven already (no `--again`). */
  alreadyRedriven: { position: string; at: string; operator: string; to: string }[];
  /** Dead letters refused because the edge parser still refuses them (no `--force`): the field ('' for the whole value) and why. */
  refused: { position: string; field: string; reason: string }[];
  /** Positions of the copies not sent because their origin's dead letter was chosen. */
  folded: string[];
}

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

/** Why a dead letter cannot be redriven, or undefined when it can. */
export function unredrivable(record: DlqRecord): string | undefined {
  if (header(record, DLQ_HEADERS.valueForm) !== 'too-large') return undefined;
  const size = header(record, DLQ_HEADERS.valueSize) ?? '?';
  const sha = header(record, DLQ_HEADERS.valueSha256) ?? '?';
  return `the DLQ holds no value for it: the original value was too large to keep (${size} bytes, SHA-256 ${sha}); there is nothing to redrive`;
}

/**
 * The history a dead letter passes on when redriven: its attempts (1 when the header is missing or not a count)
 * and its first failure (else its last failure, else its DLQ write time), and its position.
 */
export function historyOf(record: DlqRecord): RedriveHistory {
  const attemptsText = header(record, DLQ_HEADERS.attempts);
  const attempts =
    attemptsText !== undefined && /^\d{1,7}$/.test(attemptsText) && Number(attemptsText) >= 1
      ? Number(attemptsText)
      : 1;
  const first = Date.parse(header(record, DLQ_HEADERS.firstFailure) ?? '');
  return {
    attempts,
    firstFailureAt: Number.isNaN(first) ? failedAt(record) : new Date(first),
    from: formatPosition(record.partition, record.offset),
  };
}

/**
 * The headers a redriven record carries: the original ones (no `dlq-*`, no earlier `redriven-from`), its DLQ
 * position, and its history (attempts, first failure, position) for the bridge's dead-letter step.
 */
export function redriveHeaders(record: DlqRecord): RecordHeaders {
  const headers: RecordHeaders = {};
  for (const [k, v] of Object.entries(record.headers)) {
    if (v === undefined || k.startsWith('dlq-') || k === REDRIVEN_FROM_HEADER) continue;
    headers[k] = v;
  }
  headers[REDRIVEN_FROM_HEADER] = formatPosition(record.partition, record.offset);
  return { ...headers, ...redriveHistoryHeaders(historyOf(record)) };
}

/** The edge parser's verdict on a dead letter as it would be redriven: its value with the headers it would carry. */
export function revalidate(record: DlqRecord, target: string): Classified {
  const partition = Number(header(record, DLQ_HEADERS.partition) ?? 0);
  return classify(
    {
      key: record.key,
      value: record.value,
      headers: redriveHeaders(record),
      offset: record.offset,
      timestamp: record.timestamp,
    },
    target,
    Number.isSafeInteger(partition) ? partition : 0,
  );
}

/** What a run does with one dead letter. */
type Step =
  | { kind: 'no-value'; reason: string }
  | { kind: 'already'; entry: RedriveLogEntry }
  | { kind: 'refuse'; field: string; reason: string }
  | { kind: 'send'; verdict: Verdict; note: string };

const them = (n: number) => (n === 1 ? 'it' : 'them');

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

interface RunPlan {
  rate: number;
  dryRun: boolean;
  force: boolean;
  again: boolean;
  operator: string;
  target: string;
  redriveLogTopic: string;
  filter: DlqFilter;
  result: RedriveResult;
}

/** One dead letter of a run: the record sent (its first copy), what is shown of it, and what is done with it. */
interface Planned {
  record: DlqRecord;
  summary: DeadLetterSummary;
  step: Step;
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

/**
 * Reads the redrive log and the selected dead letters (by position, or by filter among those not redriven yet), and
 * decides each one's step, into the result's lists; undefined when nothing matches. Values come back decrypted
 * (reader.ts): a redriven record carries the original bytes.
 */
async function planRun(
  { config }: CliContext,
  kafka: ReturnType<typeof cliKafka>,
  opts: DlqRedriveOptions,
  p: RunPlan,
): Promise<Planned[] | undefined> {
  const { result } = p;
  const read = {
    kafka,
    topic: config.DLQ_TOPIC,
    clientId: `${config.KAFKA_CLIENT_ID}-cli`,
    encryption: config.payloadEncryption,
  };
  const redriveLog = await readRedriveLog(kafka, p.redriveLogTopic, read.clientId);
  const recorded = (g: DeadLetterCopies) => (p.again ? undefined : redriveLog.get(redriveLogKey(g.deadLetter)));
  const groups = opts.ids?.length
    ? groupCopies((await readDlq({ ...read, positions: dedupe(opts.ids) })).records)
    : await selectGroups(
        read,
        opts.all ? undefined : p.filter,
        (g) => unredrivable(g.deadLetter) === undefined && recorded(g) === undefined,
      );
  result.selected = groups.map(summarizeCopies);
  result.folded = result.selected.flatMap((s) => s.copyPositions);
  if (groups.length === 0) return undefined;
  const plan = groups.map((g, i) => ({
    record: g.deadLetter,
    summary: result.selected[i]!,
    step: stepOf(g, recorded(g), p.target, p.force),
  }));
  for (const { summary: s, step } of plan) {
    if (step.kind === 'no-value') result.skipped.push({ position: s.position, reason: step.reason });
    else if (step.kind === 'already')
      result.alreadyRedriven.push({
        position: s.position,
        at: step.entry.at,
        operator: step.entry.operator,
        to: step.entry.to,
      });
    else if (step.kind === 'refuse')
      result.refused.push({ position: s.position, field: step.field, reason: step.reason });
    else result.planned.push({ position: s.position, verdict: step.verdict, forced: step.verdict === 'malformed' });
  }
  return plan;
}

/** The run's words: one dead letter, one not sent and why, and the summary's extras for `sent` sent. */
function runLines({ dryRun, result }: RunPlan) {
  const describe = (r: DlqRecord, s: DeadLetterSummary) =>
    `key=${r.key === null ? '(none)' : displayText(r.key)} event=${s.eventId ?? '-'} tenant=${s.tenantId ?? '-'} error=${s.errorClass ?? '-'}` +
    (s.copyPositions.length > 0
      ? `  ${s.copyPositions.length === 1 ? 'copy' : 'copies'} ${s.copyPositions.join(',')} not sent`
      : '');
  const would = (word: string, past: string) => (dryRun ? `would ${word}` : past);
  const notSent = (s: DeadLetterSummary, step: Exclude<Step, { kind: 'send' }>) => {
    if (step.kind === 'no-value') return `${would('skip', 'skipped')} ${s.position}: ${step.reason}`;
    if (step.kind === 'already') {
      return `${would('skip', 'skipped')} ${s.position}: already redriven at ${step.entry.at} by ${step.entry.operator} → ${step.entry.to}; not sent again (--again sends it again)`;
    }
    return `${would('refuse', 'refused')} ${s.position}: still malformed, the bridge would dead-letter it again: ${step.reason}; not sent (--force sends it anyway)`;
  };
  const summary = (sent: number) => {
    const extras: string[] = [];
    if (result.folded.length > 0) extras.push(describeFolded(result.folded.length));
    if (result.skipped.length > 0) extras.push(`${result.skipped.length} skipped (no value in the DLQ)`);
    if (result.alreadyRedriven.length > 0)
      extras.push(
        `${result.alreadyRedriven.length} skipped as already redriven (--again sends ${them(result.alreadyRedriven.length)} again)`,
      );
    if (result.refused.length > 0)
      extras.push(
        `${result.refused.length} refused as still malformed (--force sends ${them(result.refused.length)} anyway)`,
      );
    const count = (v: Verdict) => result.planned.filter((x) => x.verdict === v).length;
    const [valid, unknown, forced] = [count('order-event'), count('unknown-type'), count('malformed')];
    if (sent > 0 && forced > 0)
      extras.push(
        `${forced} forced though malformed: the bridge will dead-letter ${them(forced)} again, attempts and first failure carried forward`,
      );
    if (sent > 0 && unknown > 0) extras.push(`${unknown} of an unknown type: the bridge will ignore ${them(unknown)}`);
    if (!dryRun && valid > 0)
      extras.push(
        valid === sent
          ? 'duplicates are absorbed downstream by event id'
          : `duplicates of the ${valid} valid event(s) are absorbed downstream by event id`,
      );
    return extras.map((e) => `; ${e}`).join('');
  };
  return { describe, notSent, summary };
}

/** Sends the plan at ≤ rate per second on an idempotent producer, recording each redrive in the redrive log. */
async function sendPlan(
  { out }: CliContext,
  kafka: ReturnType<typeof cliKafka>,
  opts: DlqRedriveOptions,
  p: RunPlan,
  plan: Planned[],
  lines: ReturnType<typeof runLines>,
): Promise<void> {
  const { target, result } = p;
  if (!(await withAdmin(kafka, (admin) => admin.topicExists(target))))
    throw new NotFoundError(`topic ${target} (ORDERS_TOPIC) does not exist on the brokers`);
  await ensureRedriveLog(kafka, p.redriveLogTopic);
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

/** The step for one dead letter: skipped (no value, or redriven already), refused (still malformed) or sent. */
function stepOf(g: DeadLetterCopies, recorded: RedriveLogEntry | undefined, target: string, force: boolean): Step {
  const noValue = unredrivable(g.deadLetter);
  if (noValue !== undefined) return { kind: 'no-value', reason: noValue };
  if (recorded) return { kind: 'already', entry: recorded };
  const verdict = revalidate(g.deadLetter, target);
  if (verdict.kind === 'order-event') return { kind: 'send', verdict: 'order-event', note: '' };
  if (verdict.kind === 'unknown-type')
    return {
      kind: 'send',
      verdict: 'unknown-type',
      note: `  type ${displayText(verdict.type)} is unknown to the bridge: it will be ignored`,
    };
  const field = verdict.error instanceof MalformedEventError ? verdict.error.field : '';
  if (!force) return { kind: 'refuse', field, reason: verdict.error.message };
  return { kind: 'send', verdict: 'malformed', note: `  forced: still malformed (${verdict.error.message})` };
}

/**
 * The dead letters a filter selects (every one without a filter), grouped by origin over the whole DLQ. The DLQ is
 * read twice: headers only to group and select, then the values of just the dead letters `needsValue` names (those
 * that may be sent).
 */
async function selectGroups(
  read: { kafka: Kafka; topic: string; clientId: string; encryption: PayloadKeys | undefined },
  filter: DlqFilter | undefined,
  needsValue: (g: DeadLetterCopies) => boolean,
): Promise<DeadLetterCopies[]> {
  const index = await readDlq({ ...read, headersOnly: true });
  const groups = groupCopies(index.records).filter(
    (g) => filter === undefined || allCopies(g).some((r) => matches(filter, r)),
  );
  const wanted = groups
    .filter(needsValue)
    .map((g) => ({ partition: g.deadLetter.partition, offset: BigInt(g.deadLetter.offset) }));
  if (wanted.length === 0) return groups;
  const full = new Map(
    (await readDlq({ ...read, positions: wanted })).records.map((r) => [formatPosition(r.partition, r.offset), r]),
  );
  return groups.map((g) => ({
    ...g,
    deadLetter: full.get(formatPosition(g.deadLetter.partition, g.deadLetter.offset)) ?? g.deadLetter,
  }));
}

function dedupe(ids: Position[]): Position[] {
  const seen = new Map<string, Position>();
  for (const p of ids) seen.set(formatPosition(p.partition, p.offset), p);
  return [...seen.values()];
}
