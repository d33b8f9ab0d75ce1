/**
 * `fulfilment dlq purge --before <time>`: deletes old dead letters. A dry run unless `--yes`: it reports what would
 * go (records, dead letters, the oldest and newest write time, the count per error class) and deletes nothing.
 *
 * Rules:
 * - Kafka can only delete a prefix of a partition (DeleteRecords moves its log start up), so "before" means: in
 *   each partition, the records in front of the first one written at or after the time (the broker's time index,
 *   on the DLQ record timestamp — when the dead letter was written). A record written before the time that sits
 *   behind a later one stays, and the report counts it;
 * - the DLQ is read (headers only) up to the high watermarks captured at the start, so records written while the
 *   purge runs are never deleted;
 * - after deleting, the redrive log (redrive-log.ts) forgets the origins none of whose copies remain;
 * - the run ends with one audit line on stderr (audit.ts), whatever happened.
 */
import { withAdmin } from '../../adapters/kafka/admin.js';
import { createSender } from '../../adapters/kafka/sender.js';
import { DLQ_HEADERS } from '../../adapters/dlq/dead-letter.js';
import type { CliContext } from '../context.js';
import { cliKafka, topicPartitions } from '../kafka.js';
import { println } from '../output.js';
import { audit, defaultOperator } from './audit.js';
import { describeFolded, groupCopies } from './copies.js';
import { forgetRedrives, redriveLogKey, redriveLogTopicOf, readRedriveLog } from './redrive-log.js';
import { checkPurgeOptions, type DlqPurgeOptions } from './purge-options.js';
import { readDlq } from './reader.js';
import { header, type DlqRecord } from './record.js';

export type { DlqPurgeOptions } from './purge-options.js';

export interface PurgeResult {
  dryRun: boolean;
  topic: string;
  before: string;
  operator: string;
  /** Per partition with something to delete: offsets [from, to) (to exclusive). */
  ranges: { partition: number; from: string; to: string }[];
  /** Records in the ranges. */
  records: number;
  /** Dead letters among them: copies of one origin counted once. */
  deadLetters: number;
  /** DLQ write time of the oldest and newest record in the ranges, RFC 3339; null when there are none. */
  oldest: string | null;
  newest: string | null;
  /** Records in the ranges per `dlq-error-class` (`-` when absent), most first. */
  byErrorClass: Record<string, number>;
  /** Records that stay: written at or after the time, or behind such a record. */
  kept: number;
  /** Of the kept, those written before the time (behind a later record in their partition). */
  keptOlder: number;
  /** Dead letters in the ranges the redrive log has no redrive of. */
  neverRedriven: number;
  /** Redrive-log entries removed (a real run) or that would be. */
  redriveLogForgotten: number;
  /** Each partition's log start after the purge (a real run only). */
  lowAfter?: Record<number, string>;
}

const ranges = (r: PurgeResult['ranges']) => r.map((x) => `${x.partition}:[${x.from},${x.to})`).join(' ');

export async function dlqPurge(ctx: CliContext, opts: DlqPurgeOptions): Promise<PurgeResult> {
  checkPurgeOptions(opts);
  const { config, out } = ctx;
  const dryRun = !opts.yes;
  const operator = opts.operator ?? defaultOperator();
  const startedAt = new Date();
  const topic = config.DLQ_TOPIC;
  const result: PurgeResult = {
    dryRun,
    topic,
    before: opts.before.toISOString(),
    operator,
    ranges: [],
    records: 0,
    deadLetters: 0,
    oldest: null,
    newest: null,
    byErrorClass: {},
    kept: 0,
    keptOlder: 0,
    neverRedriven: 0,
    redriveLogForgotten: 0,
  };
  const entry = (extra: Record<string, unknown> = {}) => ({
    audit: 'dlq purge',
    at: startedAt.toISOString(),
    operator,
    dlqTopic: topic,
    dryRun,
    selection: { before: result.before },
    ranges: ranges(result.ranges),
    outcome: {
      records: result.records,
      deadLetters: result.deadLetters,
      byErrorClass: result.byErrorClass,
      neverRedriven: result.neverRedriven,
      kept: result.kept,
      redriveLogForgotten: result.redriveLogForgotten,
      deleted: !dryRun && result.lowAfter !== undefined,
    },
    ...extra,
  });
  try {
    await purge(ctx, opts, result);
  } catch (err) {
    audit(out, entry({ error: (err as Error)?.message ?? String(err) }));
    throw err;
  }
  audit(out, entry());
  return result;
}

/** Purges (or, dry, plans to purge) in steps: where each partition is cut, what goes, what the redrive log forgets. */
async function purge(ctx: CliContext, opts: DlqPurgeOptions, result: PurgeResult): Promise<void> {
  const { config, out } = ctx;
  const { topic, dryRun } = result;
  const kafka = cliKafka(ctx);
  const clientId = `${config.KAFKA_CLIENT_ID}-cli`;
  const cuts = await cutPartitions(kafka, topic, opts.before, result);
  const all = (await readDlq({ kafka, topic, clientId, headersOnly: true })).records;
  const doomed = (r: DlqRecord) => BigInt(r.offset) < (cuts.get(r.partition) ?? 0n);
  const gone = all.filter(doomed);
  const stay = all.filter((r) => !doomed(r));
  countWhatGoes(gone, stay, opts.before, result);
  // Origins none of whose copies stay are forgotten by the redrive log.
  const redriveLogTopic = redriveLogTopicOf(topic);
  const redriveLog = gone.length > 0 ? await readRedriveLog(kafka, redriveLogTopic, clientId) : new Map();
  result.neverRedriven = groupCopies(gone).filter((g) => !redriveLog.has(redriveLogKey(g.deadLetter))).length;
  const staying = new Set(stay.map(redriveLogKey));
  const forget = [...new Set(gone.map(redriveLogKey))].filter((k) => !staying.has(k) && redriveLog.has(k));
  result.redriveLogForgotten = forget.length;

  if (gone.length === 0) {
    println(
      out,
      `nothing to purge: no partition of ${topic} starts with records written before ${result.before}` +
        (result.keptOlder > 0
          ? ` (${result.keptOlder} record(s) written before it sit behind later ones: Kafka deletes only a prefix of a partition)`
          : ''),
    );
    return;
  }
  if (!dryRun) {
    const low = await withAdmin(kafka, (admin) =>
      admin.deleteRecordsBefore(topic, new Map(result.ranges.map((r) => [r.partition, BigInt(r.to)]))),
    );
    result.lowAfter = Object.fromEntries([...low].map(([p, o]) => [p, o.toString()]));
    if (forget.length > 0) {
      const sender = createSender(kafka);
      try {
        await forgetRedrives(sender, redriveLogTopic, forget);
      } finally {
        await sender.disconnect();
      }
    }
  }
  printPurge(ctx, result);
}

/**
 * The cut of each partition — the first offset written at or after `before`, within what the partition holds now —
 * and the ranges it deletes (into `result`).
 */
async function cutPartitions(
  kafka: ReturnType<typeof cliKafka>,
  topic: string,
  before: Date,
  result: PurgeResult,
): Promise<Map<number, bigint>> {
  const { partitions, cut } = await withAdmin(kafka, async (admin) => ({
    partitions: await topicPartitions(admin, topic),
    cut: await admin.offsetsAt(topic, before),
  }));
  const cuts = new Map(
    partitions.map((p) => {
      const at = cut.get(p.partition) ?? p.high;
      return [p.partition, at < p.low ? p.low : at > p.high ? p.high : at] as const;
    }),
  );
  result.ranges = partitions
    .filter((p) => cuts.get(p.partition)! > p.low)
    .map((p) => ({ partition: p.partition, from: p.low.toString(), to: cuts.get(p.partition)!.toString() }));
  return cuts;
}

/** What goes (records, dead letters, when written, by error class) and what stays (older ones behind newer). */
function countWhatGoes(gone: DlqRecord[], stay: DlqRecord[], before: Date, result: PurgeResult): void {
  result.records = gone.length;
  result.deadLetters = groupCopies(gone).length;
  const times = gone.map((r) => Number(r.timestamp)).filter(Number.isFinite);
  if (times.length > 0) {
    result.oldest = new Date(Math.min(...times)).toISOString();
    result.newest = new Date(Math.max(...times)).toISOString();
  }
  const classes = new Map<string, number>();
  for (const r of gone) {
    const c = header(r, DLQ_HEADERS.errorClass) ?? '-';
    classes.set(c, (classes.get(c) ?? 0) + 1);
  }
  result.byErrorClass = Object.fromEntries([...classes].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
  result.kept = stay.length;
  result.keptOlder = stay.filter((r) => Number(r.timestamp) < before.getTime()).length;
}

function printPurge({ out }: CliContext, result: PurgeResult): void {
  const { topic, dryRun } = result;
  const head = dryRun
    ? `would purge ${result.records} record(s) of ${topic} written before ${result.before}: ${ranges(result.ranges)}`
    : `purged ${result.records} record(s) of ${topic} written before ${result.before}: ${ranges(result.ranges)}; ` +
      Object.entries(result.lowAfter!)
        .map(([p, o]) => `partition ${p} now starts at offset ${o}`)
        .join(', ');
  const folded = result.records - result.deadLetters;
  const rows: [string, string][] = [
    ['dead letters', `${result.deadLetters}${folded > 0 ? ` (${describeFolded(folded)})` : ''}`],
    ['oldest written', result.oldest ?? '-'],
    ['newest written', result.newest ?? '-'],
    ...Object.entries(result.byErrorClass).map(([c, n]): [string, string] => [c, String(n)]),
    ['never redriven', `${result.neverRedriven} of the ${result.deadLetters} dead letters`],
    [
      'kept',
      `${result.kept} (from the first record written at or after the time on` +
        `${result.keptOlder > 0 ? `; ${result.keptOlder} of them written before it: Kafka deletes only a prefix of a partition` : ''})`,
    ],
  ];
  if (result.redriveLogForgotten > 0)
    rows.push([
      'redrive log',
      `${result.redriveLogForgotten} entr${result.redriveLogForgotten === 1 ? 'y' : 'ies'} of purged dead letters ${dryRun ? 'would be ' : ''}removed`,
    ]);
  const width = Math.max(...rows.map(([k]) => k.length));
  println(out, head);
  for (const [k, v] of rows) println(out, `  ${k.padEnd(width)}  ${v}`);
  println(
    out,
    dryRun
      ? 'dry run: nothing was deleted; add --yes to delete these records'
      : `deleted ${result.records} record(s) for good`,
  );
}
