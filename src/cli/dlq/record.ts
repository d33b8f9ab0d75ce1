/**
 * A record of the dead-letter topic as the CLI sees it: the original key, value and headers, untouched, plus the
 * `dlq-*` headers the bridge added (src/adapters/dlq/dead-letter.ts DLQ_HEADERS), summarised for listing.
 */
import { DLQ_HEADERS } from '../../adapters/dlq/dead-letter.js';
import { headerString, type RecordHeaders } from '../../adapters/kafka/records.js';
import { formatPosition } from '../position.js';
import { displayText } from '../redact.js';

export interface DlqRecord {
  partition: number;
  offset: string;
  /** When the record was written to the DLQ, ms since the epoch (Kafka record timestamp). */
  timestamp: string;
  key: Buffer | null;
  /** In clear: decrypted by the reader when it was stored encrypted. */
  value: Buffer | null;
  headers: RecordHeaders;
  /** The key id the value was decrypted with, when it was stored encrypted (reader.ts). */
  decryptedWith?: string;
}

export interface DlqSummary {
  /** `partition:offset` in the DLQ topic. */
  position: string;
  partition: number;
  offset: string;
  /** RFC 3339: the last failure time from the headers, else when the record was written. */
  failedAt: string;
  errorClass: string | null;
  errorMessage: string | null;
  tenantId: string | null;
  eventId: string | null;
  correlationId: string | null;
  /** `topic partition:offset` the record was consumed from, when the headers say. */
  originalTopic: string | null;
  originalPosition: string | null;
  consumerGroup: string | null;
  attempts: number | null;
}

export function header(record: Pick<DlqRecord, 'headers'>, name: string): string | undefined {
  return headerString(record.headers, name);
}

/** Every header as text (first value of a repeated header), in the record's order. */
export function headerTexts(headers: RecordHeaders): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) out.push([k, displayText(one)]);
  }
  return out;
}

export function failedAt(record: DlqRecord): Date {
  const fromHeader = Date.parse(header(record, DLQ_HEADERS.lastFailure) ?? '');
  return new Date(Number.isNaN(fromHeader) ? Number(record.timestamp) : fromHeader);
}

export function summarize(record: DlqRecord): DlqSummary {
  const h = (name: string) => header(record, name) ?? null;
  const originalPartition = h(DLQ_HEADERS.partition);
  const originalOffset = h(DLQ_HEADERS.offset);
  const attempts = Number(h(DLQ_HEADERS.attempts));
  return {
    position: formatPosition(record.partition, record.offset),
    partition: record.partition,
    offset: record.offset,
    failedAt: failedAt(record).toISOString(),
    errorClass: h(DLQ_HEADERS.errorClass),
    errorMessage: h(DLQ_HEADERS.errorMessage),
    tenantId: h(DLQ_HEADERS.tenantId),
    eventId: h(DLQ_HEADERS.eventId),
    correlationId: h(DLQ_HEADERS.correlationId),
    originalTopic: h(DLQ_HEADERS.topic),
    originalPosition:
      originalPartition !== null && originalOffset !== null
        ? formatPosition(Number(originalPartition), originalOffset)
        : null,
    consumerGroup: h(DLQ_HEADERS.group),
    attempts: Number.isFinite(attempts) && h(DLQ_HEADERS.attempts) !== null ? attempts : null,
  };
}
