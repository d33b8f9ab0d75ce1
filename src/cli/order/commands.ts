/** `fulfilment order show|retry|resolve`: one order (or a tenant's held orders), registered on the program by main.ts. */
import type { Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as arg from '../options.js';
import { UsageError } from '../cli-errors.js';
import * as orderArg from './options.js';

/** Over 80 lines: one declaration per subcommand (its options and help) — a list, not logic. */
export function registerOrderCommands(program: Command, run: Runner): void {
  const order = program
    .command('order')
    .description('show one order, or re-drive it through its workflow (order/<tenant>/<order>)');

  order
    .command('show')
    .description(
      "show one order: its row in fulfilments (read as the runtime role, scoped to the tenant), its workflow's status and notes, its shipment and any dead letters",
    )
    .argument('<tenant/order>', 'the order, as <tenant>/<order> (e.g. acme-eu/o-1008)', orderArg.orderRef)
    .option('--reveal', 'show personal data (customer id, shipping address) instead of redacting it')
    .option(
      '--timeout <seconds>',
      "how long to wait for each source (Temporal and the order's worker, PostgreSQL, the warehouse, Kafka)",
      arg.wholeNumber(1),
      orderArg.DEFAULT_SHOW_TIMEOUT_SECONDS,
    )
    .option('--json', 'print the order as one JSON object')
    .action(async (ref: orderArg.OrderRef, flags: { reveal?: boolean; timeout: number; json?: boolean }) => {
      const opts: orderArg.ShowOptions = {
        ...ref,
        reveal: flags.reveal,
        timeoutSeconds: flags.timeout,
        json: flags.json,
      };
      await runCommand(run, opts, async () => (await import('./show.js')).orderShow);
    });

  order
    .command('retry')
    .description(
      "re-drive orders held as failed: one (<tenant/order>) or a tenant's (--tenant, --status failed, --since); whether its run is open or closed " +
        '(a repair run then loads it from the store), it goes back to pending and ships again under the same key, so at most one shipment; ' +
        'a pending order whose run is gone (terminated by hand) gets a run from the store that ships it',
    )
    .argument(
      '[tenant/order]',
      'the order, as <tenant>/<order> (e.g. acme-eu/o-1008); or select many with --tenant',
      orderArg.orderRef,
    )
    .requiredOption(
      '--reason <text>',
      "why it is tried again (recorded in the store and the order's notes)",
      orderArg.reason,
    )
    .option('--by <name>', 'who asks (recorded in the store; default: <user>@<host> of this shell)', orderArg.by)
    .option(
      '--request-id <id>',
      'one order: the update id (default: derived from the retry number and the reason); the same id applies once',
      orderArg.requestId,
    )
    .option('--tenant <tenant>', 'many orders: the tenant whose held orders are selected', orderArg.tenant)
    .option('--status <status>', 'many orders: the status selected (failed)', orderArg.heldStatus, 'failed' as const)
    .option(
      '--since <time>',
      'many orders: held at or after this time (RFC 3339, or a duration ago: 90m, 2h, 7d)',
      arg.time,
    )
    .option(
      '--limit <n>',
      'many orders: the most selected, oldest first',
      arg.wholeNumber(1),
      orderArg.DEFAULT_BULK_LIMIT,
    )
    .option('--rate <orders/s>', 'many orders: retried per second at most', arg.rate, orderArg.DEFAULT_BULK_RATE)
    .option('--dry-run', 'many orders: list the selection, change nothing')
    .option(
      '--timeout <seconds>',
      "how long to wait for Temporal and the order's worker (per order)",
      arg.wholeNumber(1),
      orderArg.DEFAULT_RETRY_TIMEOUT_SECONDS,
    )
    .option('--json', 'print the result as one JSON object')
    .action(async (ref: orderArg.OrderRef | undefined, flags: RetryFlags) => {
      const common = { reason: flags.reason, by: flags.by, timeoutSeconds: flags.timeout, json: flags.json };
      if (ref && flags.tenant !== undefined)
        throw new UsageError('order retry: give one order (<tenant/order>) or a selection (--tenant), not both');
      if (ref) {
        const opts: orderArg.RetryOptions = { ...ref, ...common, requestId: flags.requestId };
        orderArg.checkRetryOptions(opts);
        return runCommand(run, opts, async () => (await import('./retry.js')).orderRetry);
      }
      if (flags.tenant === undefined)
        throw new UsageError(
          'order retry: expected an order (<tenant/order>) or a selection (--tenant <tenant> --status failed)',
        );
      if (flags.requestId !== undefined)
        throw new UsageError('order retry --tenant: --request-id names one request; a selection derives one per order');
      const opts: orderArg.BulkRetryOptions = {
        ...common,
        tenantId: flags.tenant,
        status: flags.status,
        since: flags.since,
        limit: flags.limit,
        rate: flags.rate,
        dryRun: flags.dryRun,
      };
      orderArg.checkBulkRetryOptions(opts);
      return runCommand(run, opts, async () => (await import('./retry-many.js')).orderRetryMany);
    });

  order
    .command('resolve')
    .description(
      'resolve an order held as recall-failed (cancelled, its shipment not recalled): ask the warehouse to recall it again, or record that it was recalled by hand; open or closed run alike',
    )
    .argument('<tenant/order>', 'the order, as <tenant>/<order> (e.g. acme-eu/o-1008)', orderArg.orderRef)
    .requiredOption(
      '--action <action>',
      'retry-recall (ask the warehouse again) or recalled-by-hand (record it cancelled)',
      orderArg.resolution,
    )
    .requiredOption(
      '--reason <text>',
      "what was done or fixed (recorded in the store and the order's notes)",
      orderArg.reason,
    )
    .option('--by <name>', 'who asks (recorded in the store; default: <user>@<host> of this shell)', orderArg.by)
    .option(
      '--request-id <id>',
      'the update id (default: derived from the refusal count, the action and the reason); the same id applies once',
      orderArg.requestId,
    )
    .option(
      '--timeout <seconds>',
      "how long to wait for Temporal and the order's worker",
      arg.wholeNumber(1),
      orderArg.DEFAULT_RETRY_TIMEOUT_SECONDS,
    )
    .option('--json', 'print the result as one JSON object')
    .action(
      async (
        ref: orderArg.OrderRef,
        flags: {
          action: orderArg.ResolveOptions['action'];
          reason: string;
          by?: string;
          requestId?: string;
          timeout: number;
          json?: boolean;
        },
      ) => {
        const opts: orderArg.ResolveOptions = {
          ...ref,
          action: flags.action,
          reason: flags.reason,
          by: flags.by,
          requestId: flags.requestId,
          timeoutSeconds: flags.timeout,
          json: flags.json,
        };
        orderArg.checkResolveOptions(opts);
        await runCommand(run, opts, async () => (await import('./resolve.js')).orderResolve);
      },
    );
}

interface RetryFlags {
  reason: string;
  by?: string;
  requestId?: string;
  tenant?: string;
  status: 'failed';
  since?: Date;
  limit: number;
  rate: number;
  dryRun?: boolean;
  timeout: number;
  json?: boolean;
}
