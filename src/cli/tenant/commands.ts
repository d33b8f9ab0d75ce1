/** `fulfilment tenant show`: one tenant's weight, share, backlog, runs and pause, registered on the program by main.ts. */
import type { Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as arg from '../options.js';
import * as orderArg from '../order/options.js';
import { DEFAULT_TENANT_SHOW_TIMEOUT_SECONDS, type TenantShowOptions } from './options.js';

export function registerTenantCommands(program: Command, run: Runner): void {
  const tenant = program
    .command('tenant')
    .description('one tenant as the service sees it: its weight and share of capacity, its backlog, runs and pause');
  tenant
    .command('show')
    .description(
      "one tenant: its weight (TENANT_WEIGHTS) and share among the tenants with open order runs, its orders the store holds unsettled (pending, waiting for the warehouse, failed) and the oldest one's age, its open runs in Temporal, and whether shipping is paused for it",
    )
    .argument('<tenant>', 'the tenant id (e.g. acme-eu)', orderArg.tenant)
    .option(
      '--timeout <seconds>',
      'how long to wait for each source (PostgreSQL, Temporal)',
      arg.wholeNumber(1),
      DEFAULT_TENANT_SHOW_TIMEOUT_SECONDS,
    )
    .option('--json', 'print the tenant as one JSON object')
    .action(async (tenantId: string, flags: { timeout: number; json?: boolean }) => {
      const opts: TenantShowOptions = { tenantId, timeoutSeconds: flags.timeout, json: flags.json };
      await runCommand(run, opts, async () => (await import('./show.js')).tenantShow);
    });
}
