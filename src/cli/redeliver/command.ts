/** `fulfilment redeliver`: a stretch of the orders topic's history delivered again, registered on the program by main.ts. */
import type { Command } from 'commander';
import type { Runner } from '../command.js';
import * as arg from '../options.js';
import { checkRedeliveryOptions, DEFAULT_REDELIVERY_GROUP, type RedeliveryOptions } from './options.js';
import type { RangePoint } from '../range-point.js';

export function registerRedeliverCommand(program: Command, run: Runner): void {
  program
    .command('redeliver')
    .description(
      "deliver the orders topic's history again through the bridge's path, in a separate consumer group; the event-id dedupe makes it safe",
    )
    .requiredOption(
      '--from <point>',
      'where to start: earliest, a time (RFC 3339 or 2h), an offset on every partition, or p:o[,p:o...]',
      arg.rangePoint,
    )
    .option('--to <point>', 'where to stop, exclusive (default: the end as of the start)', arg.rangePoint)
    .option('--rate <events/s>', 'deliveries per second at most (required unless --dry-run)', arg.rate)
    .option(
      '--group <name>',
      'consumer group of the redelivery; must differ from CONSUMER_GROUP',
      arg.name,
      DEFAULT_REDELIVERY_GROUP,
    )
    .option('--dry-run', 'count what would be redelivered; deliver and commit nothing')
    .option('--json', 'print the summary as one JSON object')
    .action(
      async (flags: {
        from: RangePoint;
        to?: RangePoint;
        rate?: number;
        group: string;
        dryRun?: boolean;
        json?: boolean;
      }) => {
        const opts: RedeliveryOptions = {
          from: flags.from,
          to: flags.to,
          rate: flags.rate,
          group: flags.group,
          dryRun: flags.dryRun,
          json: flags.json,
        };
        await run(async (ctx) => {
          checkRedeliveryOptions(ctx, opts); // needs the configuration (CONSUMER_GROUP), so it runs in `run`, before the import
          const { redeliver } = await import('./redeliver.js');
          return redeliver(ctx, opts);
        });
      },
    );
}
