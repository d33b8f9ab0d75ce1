/**
 * `fulfilment dlq redrive`: publishes chosen dead letters back to the orders topic — the original key and value
 * bytes and the original headers, without the `dlq-*` ones, plus `redriven-from: <partition:offset>` — at most
 * `rate` per second (token bucket). The DLQ itself is left as it is.
 *
 * Redriving a record twice is safe by design, not by bookkeeping here: the event id is the dedupe key of the
 * order's workflow and of `processed_events`, so a second copy is recognised as a duplicate downstream.
 *
 * Rules:
 * - each origin is sent once per run (copies.ts): filters and `--all` select dead letters, a dead letter
 *   being selected when any of its copies is, and send its first-written copy; of several `--id`s holding copies
 *   of one origin, only the first written is sent;
 * - a dead letter whose value the DLQ does not hold (`dlq-value-form: too-large`) is skipped with its size and
 *   SHA-256, and the run goes on.
 */
import { DLQ_HEADERS } from '../../dlq/dead-letter.js';
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
import { allCopies, describeFolded, groupCopies, summarizeCopies, type DeadLetterCopies, type DeadLetterSummary } from './copies.js';
import { describeFilter, matches, type DlqFilter } from './filter.js';
import { readDlq } from './reader.js';
import { header, type DlqRecord } from './record.js';
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
  clock?: Clock;
}

export interface RedriveResult {
  dryRun: boolean;
  /** The dead letters chosen, one per origin, in DLQ order; skipped ones included. */
  selected: DeadLetterSummary[];
  /** What was published: DLQ position → orders topic position. Empty on a dry run. */
  sent: { from: string; to: string }[];
  /** Dead letters not sent (also on a dry run), with why. */
  skipped: { position: string; reason: string }[];
  /** Positions of the copies not sent because their origin's dead letter was chosen. */
  folded: string[];
}

/** Why a dead letter cannot be redriven, or undefined when it can. */
export function unredrivable(record: DlqRecord): string | undefined {
  if (header(record, DLQ_HEADERS.valueForm) !== 'too-large') return undefined;
  const size = header(record, DLQ_HEADERS.valueSize) ?? '?';
  const sha = header(record, DLQ_HEADERS.valueSha256) ?? '?';
  return `the DLQ holds no value for it: the original value was too large to keep (${size} bytes, SHA-256 ${sha}); there is nothing to redrive`;
}

/** The headers a redriven record carries: the original ones (no `dlq-*`, no earlier `redriven-from`) plus its origin. */
export function redriveHeaders(record: DlqRecord): RecordHeaders {
  const headers: RecordHeaders = {};
  for (const [k, v] of Object.entries(record.headers)) {
    if (v === undefined || k.startsWith('dlq-') || k === REDRIVEN_FROM_HEADER) continue;
    headers[k] = v;
  }
  headers[REDRIVEN_FROM_HEADER] = formatPosition(record.partition, record.offset);
  return headers;
}

export async function dlqRedrive(ctx: CliContext, opts: DlqRedriveOptions): Promise<RedriveResult> {
  const { config, out } = ctx;
  checkSelection(opts);
  const rate = opts.rate ?? DEFAULT_REDRIVE_RATE;
  if (!(rate > 0) || !Number.isFinite(rate)) throw new UsageError(`--rate: expected a number of records per second > 0, got ${rate}`);
  const dryRun = opts.dryRun ?? false;
  const kafka = cliKafka(ctx);
  const filter = opts.filter ?? {};
  const read = { kafka, topic: config.DLQ_TOPIC, clientId: `${config.KAFKA_CLIENT_ID}-cli` };
  const groups = opts.ids?.length ? groupCopies((await readDlq({ ...read, positions: dedupe(opts.ids) })).records) : await selectGroups(read, opts.all ? undefined : filter);
  const selected = groups.map(summarizeCopies);
  const result: RedriveResult = { dryRun, selected, sent: [], skipped: [], folded: selected.flatMap((s) => s.copyPositions) };
  const target = config.ORDERS_TOPIC;
  if (groups.length === 0) {
    println(out, `nothing to redrive: no dead letters in ${config.DLQ_TOPIC} match (${describeFilter(filter)})`);
    return result;
  }
  const describe = (r: DlqRecord, s: DeadLetterSummary) =>
    `key=${r.key === null ? '(none)' : displayText(r.key)} event=${s.eventId ?? '-'} tenant=${s.tenantId ?? '-'} error=${s.errorClass ?? '-'}` +
    (s.copyPositions.length > 0 ? `  ${s.copyPositions.length === 1 ? 'copy' : 'copies'} ${s.copyPositions.join(',')} not sent` : '');
  const plan = groups.map((g, i) => ({ record: g.deadLetter, summary: selected[i]!, skip: unredrivable(g.deadLetter) }));
  const skipLine = (s: DeadLetterSummary, reason: string) => `${dryRun ? 'would skip' : 'skipped'} ${s.position}: ${reason}`;
  for (const { summary: s, skip } of plan) if (skip !== undefined) result.skipped.push({ position: s.position, reason: skip });
  const sending = plan.length - result.skipped.length;
  const extras = `${result.folded.length > 0 ? `; ${describeFolded(result.folded.length)}` : ''}` +
    `${result.skipped.length > 0 ? `; ${result.skipped.length} skipped (no value in the DLQ)` : ''}`;

  if (dryRun || sending === 0) {
    for (const { record: r, summary: s, skip } of plan) {
      println(out, skip === undefined ? `would redrive ${s.position} → ${target}  ${describe(r, s)}` : skipLine(s, skip));
    }
    if (dryRun) println(out, `dry run: ${sending} dead letter(s) would be redriven to ${target} at ≤ ${rate}/s${extras}; nothing was sent`);
    else println(out, `redrove 0 dead letter(s) to ${target}${extras}`);
    return result;
  }

  if (!(await withAdmin(kafka, (admin) => admin.topicExists(target)))) throw new NotFoundError(`topic ${target} (ORDERS_TOPIC) does not exist on the brokers`);
  // Idempotent: a retried request never writes a second copy.
  const sender = createSender(kafka, { idempotent: true });
  const bucket = TokenBucket.perSecond(rate, opts.clock);
  await sender.connect();
  try {
    for (const { record: r, summary: s, skip } of plan) {
      if (skip !== undefined) {
        println(out, skipLine(s, skip));
        continue;
      }
      await bucket.take();
      const at = await sender.sendOne(target, { key: r.key, value: r.value, headers: redriveHeaders(r) });
      const to = at ? formatPosition(at.partition, at.offset) : '?';
      result.sent.push({ from: s.position, to });
      println(out, `redriven ${s.position} → ${target} ${to}  ${describe(r, s)}`);
    }
  } finally {
    await sender.disconnect();
  }
  println(out, `redrove ${result.sent.length} dead letter(s) to ${target} at ≤ ${rate}/s${extras}; duplicates are absorbed downstream by event id`);
  return result;
}

/**
 * The dead letters a filter selects (every one without a filter), grouped by origin over the whole DLQ. The DLQ is
 * read twice: headers only to group and select, then the values of just the dead letters to be sent.
 */
async function selectGroups(read: { kafka: Kafka; topic: string; clientId: string }, filter: DlqFilter | undefined): Promise<DeadLetterCopies[]> {
  const index = await readDlq({ ...read, headersOnly: true });
  const groups = groupCopies(index.records).filter((g) => filter === undefined || allCopies(g).some((r) => matches(filter, r)));
  const wanted = groups.filter((g) => unredrivable(g.deadLetter) === undefined).map((g) => ({ partition: g.deadLetter.partition, offset: BigInt(g.deadLetter.offset) }));
  if (wanted.length === 0) return groups;
  const full = new Map((await readDlq({ ...read, positions: wanted })).records.map((r) => [formatPosition(r.partition, r.offset), r]));
  return groups.map((g) => ({ ...g, deadLetter: full.get(formatPosition(g.deadLetter.partition, g.deadLetter.offset)) ?? g.deadLetter }));
}

function dedupe(ids: Position[]): Position[] {
  const seen = new Map<string, Position>();
  for (const p of ids) seen.set(formatPosition(p.partition, p.offset), p);
  return [...seen.values()];
}
