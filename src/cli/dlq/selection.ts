/**
 * Which records `dlq redrive` is asked for — `--id`s, filters or `--all`, exactly one of them — checked from the
 * options alone. main.ts runs this before it loads redrive.ts, so a bad selection exits 2 without loading the
 * Kafka client or anything else heavy; dlqRedrive checks again for callers that skip the CLI.
 */
import type { Position } from '../position.js';
import { UsageError } from '../cli-errors.js';
import type { DlqFilter } from './filter.js';

export interface DlqSelection {
  /** Exactly these records. */
  ids?: Position[];
  /** The records `dlq list` shows with the same filters. */
  filter?: DlqFilter;
  /** Every record in the DLQ. */
  all?: boolean;
}

export function isEmptyFilter(f: DlqFilter): boolean {
  return f.since === undefined && f.until === undefined && f.errorClass === undefined && f.tenant === undefined;
}

/** Checks that exactly one way of choosing records was used; throws UsageError otherwise. */
export function checkSelection(opts: DlqSelection): void {
  const ids = (opts.ids?.length ?? 0) > 0;
  const filtered = opts.filter !== undefined && !isEmptyFilter(opts.filter);
  if (!ids && !filtered && !opts.all) {
    throw new UsageError(
      'choose what to redrive: --id <partition:offset> (repeatable), filters (--since, --until, --error-class, --tenant), or --all',
    );
  }
  if (ids && (filtered || opts.all))
    throw new UsageError('--id cannot be combined with filters or --all: it already names the records');
  if (opts.all && filtered)
    throw new UsageError(
      '--all cannot be combined with filters (--since, --until, --error-class, --tenant): drop --all to redrive what they select',
    );
}
