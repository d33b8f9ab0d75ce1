/** `fulfilment order show|retry`: one order, registered on the program by main.ts. */
import type { Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as arg from '../options.js';
import * as orderArg from './options.js';

export function registerOrderCommands(program: Command, run: Runner): void {
  const order = program.command('order').description('show one order, or re-drive it through its workflow (order/<tenant>/<order>)');

  order
    .command('show')
    .description("show one order: its row in fulfilments (read as the runtime role, scoped to the tenant), its workflow's status and notes, its shipment and any dead letters")
    .argument('<tenant/order>', 'the order, as <tenant>/<order> (e.g. acme-eu/o-1008)', orderArg.orderRef)
    .option('--reveal', 'show personal data (customer id, shipping address) instead of redacting it')
    .option('--timeout <seconds>', "how long to wait for each source (Temporal and the order's worker, PostgreSQL, the warehouse, Kafka)", arg.wholeNumber(1), orderArg.DEFAULT_SHOW_TIMEOUT_SECONDS)
    .option('--json', 'print the order as one JSON object')
    .action(async (ref: orderArg.OrderRef, flags: { reveal?: boolean; timeout: number; json?: boolean }) => {
      const opts: orderArg.ShowOptions = { ...ref, reveal: flags.reveal, timeoutSeconds: flags.timeout, json: flags.json };
      await runCommand(run, opts, async () => (await import('./show.js')).orderShow);
    });

  order
    .command('retry')
    .description('re-drive an order held as failed: its running workflow moves it back to pending and ships it again (same shipment key, so at most one shipment)')
    .argument('<tenant/order>', 'the order, as <tenant>/<order> (e.g. acme-eu/o-1008)', orderArg.orderRef)
    .requiredOption('--reason <text>', 'why it is tried again (recorded in the store and the order\'s notes)', orderArg.reason)
    .option('--request-id <id>', 'the update id (default: derived from the retry number and the reason); the same id applies once', orderArg.requestId)
    .option('--timeout <seconds>', 'how long to wait for Temporal and the order\'s worker', arg.wholeNumber(1), orderArg.DEFAULT_RETRY_TIMEOUT_SECONDS)
    .option('--json', 'print the result as one JSON object')
    .action(async (ref: orderArg.OrderRef, flags: { reason: string; requestId?: string; timeout: number; json?: boolean }) => {
      const opts: orderArg.RetryOptions = { ...ref, reason: flags.reason, requestId: flags.requestId, timeoutSeconds: flags.timeout, json: flags.json };
      orderArg.checkRetryOptions(opts);
      await runCommand(run, opts, async () => (await import('./retry.js')).orderRetry);
    });
}
