/**
 * `fulfilment dlq list`: the dead letters matching the filters, a page at a time, as a table or JSON lines.
 * Reading commits nothing (reader.ts). Error messages are redacted like `dlq show` does by default.
 *
 * Copies of one origin are one dead letter (copies.ts): counted and paged once, shown as the first-written
 * copy with the number of copies and where the others are. A dead letter matches the filters when any of its
 * copies does.
 */
import type { CliContext } from '../context.js';
import { cliKafka } from '../kafka.js';
import { describeFilter, matches, type DlqFilter } from './filter.js';
import {
  allCopies,
  describeFolded,
  foldedCount,
  groupCopies,
  summarizeCopies,
  type DeadLetterSummary,
} from './copies.js';
import { readDlq } from './reader.js';
import { eprintln, println } from '../output.js';
import { Redactor } from '../redact.js';
import { formatTable, truncate } from '../table.js';

export interface DlqListOptions {
  filter?: DlqFilter;
  /** Records per page. Default 20. */
  limit?: number;
  /** Matching records to skip before the page starts. Default 0. */
  skip?: number;
  /** JSON lines instead of a table. */
  json?: boolean;
}

export interface DlqListResult {
  topic: string;
  /** Dead letters matching the filter. */
  total: number;
  /** Records read from the topic, copies included. */
  scanned: number;
  /** Dead letters in the topic: records less the copies folded into them. */
  deadLetters: number;
  /** Copies folded into the matching dead letters. */
  folded: number;
  /** The page shown. */
  records: DeadLetterSummary[];
}

export const DEFAULT_PAGE_SIZE = 20;

export async function dlqList(ctx: CliContext, opts: DlqListOptions = {}): Promise<DlqListResult> {
  const { config, out } = ctx;
  const filter = opts.filter ?? {};
  const limit = opts.limit ?? DEFAULT_PAGE_SIZE;
  const skip = opts.skip ?? 0;
  const redactor = new Redactor();
  const { records, scanned } = await readDlq({
    kafka: cliKafka(ctx),
    topic: config.DLQ_TOPIC,
    clientId: `${config.KAFKA_CLIENT_ID}-cli`,
    headersOnly: true,
  });
  const groups = groupCopies(records);
  const matching = groups.filter((g) => allCopies(g).some((r) => matches(filter, r)));
  const page = matching.slice(skip, skip + limit).map((g) => {
    const s = summarizeCopies(g);
    return { ...s, errorMessage: s.errorMessage === null ? null : redactor.errorMessage(s.errorMessage) };
  });
  const result: DlqListResult = {
    topic: config.DLQ_TOPIC,
    total: matching.length,
    scanned,
    deadLetters: groups.length,
    folded: foldedCount(matching),
    records: page,
  };

  if (opts.json) {
    for (const s of page) println(out, JSON.stringify(s));
    eprintln(out, footer(result, filter, skip, limit));
    return result;
  }
  if (page.length > 0) {
    const rows = page.map((s) => [
      s.position,
      String(s.copies),
      s.failedAt,
      s.errorClass ?? '-',
      s.tenantId ?? '-',
      s.eventId ?? '-',
      truncate(s.errorMessage ?? '-', 60),
    ]);
    for (const line of formatTable(
      ['POSITION', 'COPIES', 'FAILED AT', 'ERROR CLASS', 'TENANT', 'EVENT ID', 'ERROR'],
      rows,
    ))
      println(out, line);
  }
  println(out, footer(result, filter, skip, limit));
  return result;
}

function footer(r: DlqListResult, filter: DlqFilter, skip: number, limit: number): string {
  const folded = r.folded > 0 ? `, ${describeFolded(r.folded)}` : '';
  const scope = `${r.total} of ${r.deadLetters} dead letters in ${r.topic} match (${describeFilter(filter)})${folded}`;
  if (r.total === 0) return scope;
  if (r.records.length === 0) return `${scope}; --offset ${skip} is past the last of them`;
  const shown = `showing ${skip + 1}–${skip + r.records.length}`;
  const more = skip + r.records.length < r.total;
  const pageHint = skip % limit === 0 ? ` or --page ${skip / limit + 2}` : '';
  const next = more ? `; next page: --offset ${skip + r.records.length}${pageHint}` : '';
  return `${scope}; ${shown}${next}`;
}
