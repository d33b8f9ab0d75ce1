/** `fulfilment status tail`: the status events of an order or a tenant, registered on the program by main.ts. */
import { InvalidArgumentError, type Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as arg from '../options.js';
import { orderRef, tenant } from '../order/options.js';
import type { StatusTailOptions } from './tail.js';

/** Default of --limit: the last events shown before following. */
export const DEFAULT_TAIL_LIMIT = 20;

/** `<tenant>` or `<tenant>/<order>`. */
function scope(value: string): { tenantId: string; orderId?: string } {
  if (value.includes('/')) return orderRef(value);
  try {
    return { tenantId: tenant(value) };
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

export function registerStatusCommands(program: Command, run: Runner): void {
  const status = program
    .command('status')
    .description('the status events the service publishes (STATUS_TOPIC), as its outbox holds them');

  status
    .command('tail')
    .description(
      'the last status events of a tenant (<tenant>) or one order (<tenant>/<order>) in commit order, read from the status outbox as the runtime role scoped to the tenant, ' +
        'each with whether the relay has published it yet; with --follow, then every new one until SIGINT (sent rows are kept STATUS_OUTBOX_RETENTION_DAYS)',
    )
    .argument(
      '<tenant[/order]>',
      'a tenant (e.g. acme-eu) or an order as <tenant>/<order> (e.g. acme-eu/o-1008)',
      scope,
    )
    .option('--limit <n>', 'how many of the last events to show first', arg.wholeNumber(1), DEFAULT_TAIL_LIMIT)
    .option('--follow', 'keep printing new events as the store commits them, until SIGINT')
    .option('--json', 'one JSON object per line per event: {id, topic, sentAt, event}')
    .action(
      async (
        where: { tenantId: string; orderId?: string },
        flags: { limit: number; follow?: boolean; json?: boolean },
      ) => {
        const opts: StatusTailOptions = { ...where, limit: flags.limit, follow: flags.follow, json: flags.json };
        await runCommand(run, opts, async () => (await import('./tail.js')).statusTail);
      },
    );
}
