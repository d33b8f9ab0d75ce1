/**
 * Which dead letters a command acts on — shared by `dlq list` and `dlq redrive`, so what a list shows is what the
 * same filters redrive. Time bounds apply to the failure time (dlq-last-failure-at, else the DLQ write time):
 * `since` inclusive, `until` exclusive. Error class and tenant match exactly (error class ignoring case).
 */
import { failedAt, header, type DlqRecord } from './record.js';
import { DLQ_HEADERS } from '../../adapters/dlq/dead-letter.js';

export interface DlqFilter {
  since?: Date;
  until?: Date;
  errorClass?: string;
  tenant?: string;
}

export function matches(f: DlqFilter, record: DlqRecord): boolean {
  const at = failedAt(record).getTime();
  if (f.since && at < f.since.getTime()) return false;
  if (f.until && at >= f.until.getTime()) return false;
  if (
    f.errorClass !== undefined &&
    header(record, DLQ_HEADERS.errorClass)?.toLowerCase() !== f.errorClass.toLowerCase()
  )
    return false;
  if (f.tenant !== undefined && header(record, DLQ_HEADERS.tenantId) !== f.tenant) return false;
  return true;
}

/** The filter as the options that express it, for messages ("--error-class X --tenant Y"). */
export function describeFilter(f: DlqFilter): string {
  const parts: string[] = [];
  if (f.since) parts.push(`--since ${f.since.toISOString()}`);
  if (f.until) parts.push(`--until ${f.until.toISOString()}`);
  if (f.errorClass !== undefined) parts.push(`--error-class ${f.errorClass}`);
  if (f.tenant !== undefined) parts.push(`--tenant ${f.tenant}`);
  return parts.length === 0 ? 'no filter' : parts.join(' ');
}
