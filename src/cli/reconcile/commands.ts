/** `fulfilment reconcile`: every order checked end to end across the service's sources, registered by main.ts. */
import type { Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as arg from '../options.js';
import * as orderArg from '../order/options.js';
import { parseTime } from '../time.js';
import type { CheckName } from '../../reconcile/mismatch.js';
import {
  checkList,
  checkReconcileOptions,
  DEFAULT_REPAIR_RATE,
  DEFAULT_SETTLE,
  DEFAULT_SINCE,
  settle,
  type ReconcileOptions,
} from './options.js';

interface Flags {
  since?: Date;
  until?: Date;
  tenant?: string[];
  check?: CheckName[];
  settle?: number;
  json?: boolean;
  repair?: boolean;
  yes?: boolean;
  reason?: string;
  by?: string;
  rate?: number;
}

export function registerReconcileCommand(program: Command, run: Runner): void {
  program
    .command('reconcile')
    .description(
      'check every order of a time window end to end: the orders topic against the ledger and the dead letters, the store against Temporal, the warehouse and the status outbox and topic; exit 0 when all agree, 1 otherwise',
    )
    .option('--since <time>', `start of the window (default ${DEFAULT_SINCE} ago)`, arg.time)
    .option('--until <time>', 'end of the window, exclusive (default now)', arg.time)
    .option(
      '--tenant <tenant>',
      "only this tenant (repeatable; default: the tenants the window's records name)",
      (v: string, prev: string[] = []) => [...prev, orderArg.tenant(v)],
    )
    .option('--check <names>', 'only these checks: skipped, runs, shipments, status (comma-separated)', checkList)
    .option('--settle <duration>', `how old a state must be before it is judged (default ${DEFAULT_SETTLE})`, settle)
    .option('--json', 'print the report as one JSON object')
    .option('--repair', 'plan the repair of every mismatch found (a dry run: nothing changes without --yes)')
    .option('--yes', 'with --repair: carry the repairs out')
    .option('--reason <text>', 'why the repairs are made (required with --yes; audited)', orderArg.reason)
    .option('--by <name>', 'who makes the repairs (audited; default: <user>@<host>)', orderArg.by)
    .option('--rate <repairs/s>', `repairs per second at most (default ${DEFAULT_REPAIR_RATE})`, arg.rate)
    .action(async (flags: Flags) => {
      const opts: ReconcileOptions = {
        since: flags.since ?? parseTime(DEFAULT_SINCE)!,
        until: flags.until ?? new Date(),
        tenants: flags.tenant,
        checks: flags.check,
        settleMs: flags.settle ?? settle(DEFAULT_SETTLE),
        json: flags.json,
        repair: flags.repair,
        yes: flags.yes,
        reason: flags.reason,
        by: flags.by,
        rate: flags.rate ?? DEFAULT_REPAIR_RATE,
      };
      checkReconcileOptions(opts);
      await runCommand(run, opts, async () => (await import('./reconcile.js')).reconcile);
    });
}
