/**
 * `fulfilment shipping pause|resume|status`: an operator's planned pause of shipping (all tenants, or one) before a
 * known warehouse window, and its end; registered on the program by main.ts.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as arg from '../options.js';
import * as orderArg from '../order/options.js';
import type { ShippingChangeOptions } from './pause.js';

/** The store's limit on a pause's reason (migration 008). */
export const PAUSE_REASON_MAX_LENGTH = 500;

function pauseReason(value: string): string {
  if (value.trim() === '')
    throw new InvalidArgumentError(
      'expected a reason: why shipping pauses or resumes, and the change or incident (e.g. "warehouse maintenance 02:00–04:00, CHG-812").',
    );
  const text = orderArg.reason(value);
  if (text.length > PAUSE_REASON_MAX_LENGTH)
    throw new InvalidArgumentError(
      `expected a reason of at most ${PAUSE_REASON_MAX_LENGTH} characters, not ${text.length}.`,
    );
  return text;
}

/** What `shipping pause` and `shipping resume` both parse. */
interface ChangeFlags {
  tenant?: string;
  reason: string;
  by?: string;
  dryRun?: boolean;
  json?: boolean;
}

function changeOptions(flags: ChangeFlags): ShippingChangeOptions {
  return { tenantId: flags.tenant, reason: flags.reason, by: flags.by, dryRun: flags.dryRun, json: flags.json };
}

export function registerShippingCommands(program: Command, run: Runner): void {
  const shipping = program
    .command('shipping')
    .description('pause shipping before a planned warehouse window (all tenants, or one), and resume it after');
  const change = (name: 'pause' | 'resume', description: string) =>
    shipping
      .command(name)
      .description(description)
      .option('--tenant <tenant>', 'only this tenant (default: every tenant)', orderArg.tenant)
      .requiredOption(
        '--reason <text>',
        'why (recorded with the pause: e.g. "warehouse maintenance 02:00–04:00, CHG-812")',
        pauseReason,
      )
      .option('--by <name>', 'who asks (recorded in the store; default: <user>@<host> of this shell)', orderArg.by)
      .option('--dry-run', 'say what would change and how many orders it holds; change nothing')
      .option('--json', 'print the result as one JSON object');
  change(
    'pause',
    'stop shipping: orders whose shipment comes up wait (pending, attempts unspent) instead of calling the warehouse; takes hold within 2 s on every worker',
  ).action(async (flags: ChangeFlags) => {
    await runCommand(run, changeOptions(flags), async () => (await import('./pause.js')).shippingPause);
  });
  change(
    'resume',
    "end a pause: the workers' shipment resumers wake the orders it held, oldest first, at WAREHOUSE_RESUME_PER_SECOND each; with --rate, this command wakes them first, at that pace, then ends the pause",
  )
    .option(
      '--rate <orders/s>',
      "wake the pause's orders from here, oldest first, at most this many per second, while the pause still holds the rest; then end it",
      arg.rate,
    )
    .action(async (flags: ChangeFlags & { rate?: number }) => {
      const opts = { ...changeOptions(flags), rate: flags.rate };
      await runCommand(run, opts, async () => (await import('./pause.js')).shippingResume);
    });
  shipping
    .command('status')
    .description(
      'the pauses in force (who, when, why) and the orders waiting for the warehouse now (how many, since when, how many a pause holds)',
    )
    .option('--json', 'print the result as one JSON object')
    .action(async (flags: { json?: boolean }) => {
      await runCommand(run, flags, async () => (await import('./pause.js')).shippingStatus);
    });
}
