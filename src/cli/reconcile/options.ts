/**
 * What `fulfilment reconcile` is asked: the window, the tenants, the checks, how long a state may settle, and whether
 * and how to repair. Parsers for commander (each names what it expected) and the checks across options, run before
 * the command module is loaded. Light: no kafkajs, Temporal or pg.
 */
import { InvalidArgumentError } from 'commander';
import { CHECKS, type CheckName } from '../../reconcile/mismatch.js';
import { UsageError } from '../cli-errors.js';
import { parseDuration } from '../time.js';

export interface ReconcileOptions {
  since: Date;
  until: Date;
  tenants?: string[];
  checks?: CheckName[];
  /** How old a state must be before it is judged, ms. */
  settleMs: number;
  json?: boolean;
  /** Plan the repairs of what the pass found (a dry run unless `yes`). */
  repair?: boolean;
  /** Carry the repairs out. */
  yes?: boolean;
  /** Why the repairs are made: recorded in the audit line and on each repair. Required with --yes. */
  reason?: string;
  /** Who makes them. */
  by?: string;
  /** Repairs per second at most. */
  rate: number;
}

/** Default window: the last hour. */
export const DEFAULT_SINCE = '1h';
/** Default time a state may settle before it is judged. */
export const DEFAULT_SETTLE = '1m';
/** Default repairs per second. */
export const DEFAULT_REPAIR_RATE = 5;

/** `--check skipped,runs`: some of the checks. */
export function checkList(value: string, previous: CheckName[] = []): CheckName[] {
  const names = value
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  const bad = names.filter((n) => !(CHECKS as readonly string[]).includes(n));
  if (names.length === 0 || bad.length > 0)
    throw new InvalidArgumentError(`expected a comma-separated list of ${CHECKS.join(', ')}.`);
  return [...previous, ...(names as CheckName[])];
}

/** `--settle 30s`: a duration, 0s allowed. */
export function settle(value: string): number {
  const ms = value.trim() === '0' ? 0 : parseDuration(value);
  if (ms === undefined) throw new InvalidArgumentError('expected a duration such as 0s, 30s, 2m.');
  return ms;
}

/** Throws UsageError for options no pass may run with; checked before anything is read. */
export function checkReconcileOptions(opts: ReconcileOptions): void {
  if (opts.since.getTime() >= opts.until.getTime())
    throw new UsageError(
      `--since ${opts.since.toISOString()} is not before --until ${opts.until.toISOString()}: expected a window that starts before it ends`,
    );
  if (opts.until.getTime() > Date.now() + 60_000)
    throw new UsageError(`--until ${opts.until.toISOString()} is in the future: expected a time up to now`);
  if (opts.yes && !opts.repair) throw new UsageError('--yes carries out repairs: expected it with --repair');
  if (opts.yes && !opts.reason)
    throw new UsageError('--reason <text> is required with --repair --yes: why the repairs are made (it is audited)');
}
