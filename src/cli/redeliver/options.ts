/**
 * What a redelivery is asked to do, and the checks of it that need more than one option or the configuration
 * (commander checks each option alone: options.ts). main.ts runs checkRedeliveryOptions before it loads redeliver.ts,
 * so bad input exits 2 without loading Temporal, kafkajs or pg; redeliver() checks again for callers that skip the CLI.
 */
import type { CliContext } from '../context.js';
import { UsageError } from '../cli-errors.js';
import type { RangePoint } from '../range-point.js';

/** Consumer group a redelivery reads in when `--group` is not given. */
export const DEFAULT_REDELIVERY_GROUP = 'fulfilment-redelivery';

export interface RedeliveryOptions {
  from: RangePoint;
  /** Exclusive end. Default: the high watermarks captured at start. */
  to?: RangePoint;
  /** Deliveries per second (token bucket). Required unless dryRun. */
  rate?: number;
  /** Read and count; deliver nothing, commit nothing. */
  dryRun?: boolean;
  /** Consumer group to redeliver in. Default DEFAULT_REDELIVERY_GROUP; never CONSUMER_GROUP. */
  group?: string;
  /** Print the summary as one JSON object. */
  json?: boolean;
  /** Interval of plain progress lines when stderr is not a terminal, ms. Default 5000. */
  progressEveryMs?: number;
}

/** Throws UsageError for options no redelivery may run with; checked before anything is read. */
export function checkRedeliveryOptions(ctx: Pick<CliContext, 'config'>, opts: RedeliveryOptions): void {
  const group = opts.group ?? DEFAULT_REDELIVERY_GROUP;
  if (group === ctx.config.CONSUMER_GROUP) {
    throw new UsageError(
      `--group ${group} is the service's own consumer group (CONSUMER_GROUP): a redelivery must read in a separate group so the ` +
        `service's committed offsets stay untouched; use another --group (default ${DEFAULT_REDELIVERY_GROUP})`,
    );
  }
  if (!opts.dryRun && opts.rate === undefined) {
    throw new UsageError(
      '--rate <events/s> is required (deliveries per second into Temporal, e.g. --rate 50), unless --dry-run',
    );
  }
  if (opts.rate !== undefined && (!(opts.rate > 0) || !Number.isFinite(opts.rate))) {
    throw new UsageError(`--rate: expected a number of events per second > 0, got ${opts.rate}`);
  }
}
