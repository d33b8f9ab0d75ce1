/**
 * `fulfilment dlq redrive`: publishes chosen dead letters back to the orders topic — the original key and value
 * bytes and the original headers, without the `dlq-*` ones, plus `redriven-from: <partition:offset>` — at most
 * `rate` per second (token bucket). The DLQ itself is left as it is.
 *
 * Redriving a record twice is safe by design, not by bookkeeping here: the event id is the dedupe key of the
 * order's workflow and of `processed_events`, so a second copy is recognised as a duplicate downstream.
 */
import { Partitioners, type IHeaders } from 'kafkajs';
import { cliKafka, type CliContext } from './context.js';
import { describeFilter, isEmptyFilter, matches, type DlqFilter } from './dlq-filter.js';
import { readDlq } from './dlq-reader.js';
import { summarize, type DlqRecord, type DlqSummary } from './dlq-record.js';
import { NotFoundError, UsageError } from './errors.js';
import { println } from './output.js';
import { formatPosition, type Position } from './position.js';
import { displayText } from './redact.js';
import { TokenBucket, type Clock } from './token-bucket.js';

/** Header naming the DLQ position a redriven record came from. */
export const REDRIVEN_FROM_HEADER = 'redriven-from';

/** Records per second when `--rate` is not given. */
export const DEFAULT_REDRIVE_RATE = 10;

export interface DlqRedriveOptions {
  /** Exactly these records. */
  ids?: Position[];
  /** The records `dlq list` shows with the same filters. */
  filter?: DlqFilter;
  /** Every record in the DLQ. */
  all?: boolean;
  /** Records per second. Default 10. */
  rate?: number;
  /** Print what would be sent; send nothing. */
  dryRun?: boolean;
  clock?: Clock;
}

export interface RedriveResult {
  dryRun: boolean;
  selected: DlqSummary[];
  /** What was published: DLQ position → orders topic position. Empty on a dry run. */
  sent: { from: string; to: string }[];
}

/** The headers a redriven record carries: the original ones (no `dlq-*`, no earlier `redriven-from`) plus its origin. */
export function redriveHeaders(record: DlqRecord): IHeaders {
  const headers: IHeaders = {};
  for (const [k, v] of Object.entries(record.headers)) {
    if (v === undefined || k.startsWith('dlq-') || k === REDRIVEN_FROM_HEADER) continue;
    headers[k] = v;
  }
  headers[REDRIVEN_FROM_HEADER] = formatPosition(record.partition, record.offset);
  return headers;
}

/** Checks that exactly one way of choosing records was used; throws UsageError otherwise. */
export function checkSelection(opts: Pick<DlqRedriveOptions, 'ids' | 'filter' | 'all'>): void {
  const ids = (opts.ids?.length ?? 0) > 0;
  const filtered = opts.filter !== undefined && !isEmptyFilter(opts.filter);
  if (!ids && !filtered && !opts.all) {
    throw new UsageError('choose what to redrive: --id <partition:offset> (repeatable), filters (--since, --until, --error-class, --tenant), or --all');
  }
  if (ids && (filtered || opts.all)) throw new UsageError('--id cannot be combined with filters or --all: it already names the records');
  if (opts.all && filtered) throw new UsageError('--all cannot be combined with filters (--since, --until, --error-class, --tenant): drop --all to redrive what they select');
}

export async function dlqRedrive(ctx: CliContext, opts: DlqRedriveOptions): Promise<RedriveResult> {
  const { config, out } = ctx;
  checkSelection(opts);
  const rate = opts.rate ?? DEFAULT_REDRIVE_RATE;
  if (!(rate > 0) || !Number.isFinite(rate)) throw new UsageError(`--rate: expected a number of records per second > 0, got ${rate}`);
  const dryRun = opts.dryRun ?? false;
  const kafka = cliKafka(ctx);
  const filter = opts.filter ?? {};
  const { records } = await readDlq({
    kafka,
    topic: config.DLQ_TOPIC,
    clientId: `${config.KAFKA_CLIENT_ID}-cli`,
    positions: opts.ids?.length ? dedupe(opts.ids) : undefined,
    keep: opts.ids?.length || opts.all ? undefined : (r) => matches(filter, r),
  });
  const result: RedriveResult = { dryRun, selected: records.map(summarize), sent: [] };
  const target = config.ORDERS_TOPIC;
  if (records.length === 0) {
    println(out, `nothing to redrive: no dead letters in ${config.DLQ_TOPIC} match (${describeFilter(filter)})`);
    return result;
  }
  const describe = (r: DlqRecord, s: DlqSummary) =>
    `key=${r.key === null ? '(none)' : displayText(r.key)} event=${s.eventId ?? '-'} tenant=${s.tenantId ?? '-'} error=${s.errorClass ?? '-'}`;

  if (dryRun) {
    for (const [i, r] of records.entries()) println(out, `would redrive ${result.selected[i]!.position} → ${target}  ${describe(r, result.selected[i]!)}`);
    println(out, `dry run: ${records.length} dead letter(s) would be redriven to ${target} at ≤ ${rate}/s; nothing was sent`);
    return result;
  }

  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(target)) throw new NotFoundError(`topic ${target} (ORDERS_TOPIC) does not exist on the brokers`);
  } finally {
    await admin.disconnect();
  }
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  const bucket = TokenBucket.perSecond(rate, opts.clock);
  await producer.connect();
  try {
    for (const [i, r] of records.entries()) {
      const s = result.selected[i]!;
      await bucket.take();
      const [meta] = await producer.send({
        topic: target,
        acks: -1,
        messages: [{ key: r.key, value: r.value, headers: redriveHeaders(r) }],
      });
      const to = meta ? formatPosition(meta.partition, meta.baseOffset ?? meta.offset ?? '?') : '?';
      result.sent.push({ from: s.position, to });
      println(out, `redriven ${s.position} → ${target} ${to}  ${describe(r, s)}`);
    }
  } finally {
    await producer.disconnect();
  }
  println(out, `redrove ${result.sent.length} dead letter(s) to ${target} at ≤ ${rate}/s; duplicates are absorbed downstream by event id`);
  return result;
}

function dedupe(ids: Position[]): Position[] {
  const seen = new Map<string, Position>();
  for (const p of ids) seen.set(formatPosition(p.partition, p.offset), p);
  return [...seen.values()];
}
