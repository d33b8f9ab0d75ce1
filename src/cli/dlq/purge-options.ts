/**
 * The checks of `dlq purge` that need only the options: main.ts runs them before it loads purge.ts, so bad input
 * exits 2 without loading the Kafka client; dlqPurge checks again for callers that skip the CLI.
 */
import { UsageError } from '../cli-errors.js';

export interface DlqPurgeOptions {
  /** Delete the prefix of each partition written before this time. */
  before: Date;
  /** Delete for real; without it the purge is a dry run that only reports. */
  yes?: boolean;
  /** Explicitly a dry run (the default); contradicts `yes`. */
  dryRun?: boolean;
  /** Who runs it, for the audit line. Default: the OS user. */
  operator?: string;
}

/** Slack for `--before now` and clocks a little apart, ms. */
const FUTURE_SLACK_MS = 5_000;

export function checkPurgeOptions(opts: DlqPurgeOptions, now: number = Date.now()): void {
  if (!(opts.before instanceof Date) || Number.isNaN(opts.before.getTime()))
    throw new UsageError('--before: expected a time');
  if (opts.yes && opts.dryRun)
    throw new UsageError('--yes and --dry-run contradict each other: a purge is a dry run unless --yes is given');
  if (opts.before.getTime() > now + FUTURE_SLACK_MS) {
    throw new UsageError(
      `--before ${opts.before.toISOString()} is in the future: a purge deletes records written before a past time (--before now selects every record written so far)`,
    );
  }
}
