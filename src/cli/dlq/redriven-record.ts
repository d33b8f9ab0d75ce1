/**
 * A dead letter as `dlq redrive` sends it back: the headers it carries (the original ones, its DLQ position, its
 * history for the bridge's dead-letter step), what the bridge's own edge parser makes of it, and why one cannot be
 * redriven at all (the DLQ holds no value for it).
 */
import { classify, type Classified } from '../../roles/bridge/record-pipeline.js';
import { DLQ_HEADERS, redriveHistoryHeaders, type RedriveHistory } from '../../adapters/dlq/dead-letter.js';
import type { RecordHeaders } from '../../adapters/kafka/records.js';
import { formatPosition } from '../position.js';
import { failedAt, header, type DlqRecord } from './record.js';

/** Header naming the DLQ position a redriven record came from. */
export const REDRIVEN_FROM_HEADER = 'redriven-from';

/** What the edge parser makes of a dead letter, as the bridge would see it redriven. */
export type Verdict = 'order-event' | 'unknown-type' | 'malformed';

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
