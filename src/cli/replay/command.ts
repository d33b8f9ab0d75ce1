/** `fulfilment replay`: a stretch of the orders topic's history delivered again, registered on the program by main.ts. */
import type { Command } from 'commander';
import type { Runner } from '../command.js';
import * as arg from '../options.js';
import { checkReplayOptions, DEFAULT_REPLAY_GROUP, type ReplayOptions } from './options.js';
import type { ReplayPoint } from './range.js';

export function registerReplayCommand(program: Command, run: Runner): void {
  program
    .command('replay')
    .description(
      "deliver the orders topic's history again through the bridge's path, in a separate consumer group; the event-id dedupe makes it safe",
    )
    .requiredOption(
      '--from <point>',
      'where to start: earliest, a time (RFC 3339 or 2h), an offset on every partition, or p:o[,p:o...]',
      arg.replayPoint,
    )
    .option('--to <point>', 'where to stop, exclusive (default: the end as of the start)', arg.replayPoint)
    .option('--rate <events/s>', 'deliveries per second at most (required unless --dry-run)', arg.rate)
    .option(
      '--group <name>',
      'consumer group of the replay; must differ from CONSUMER_GROUP',
      arg.name,
      DEFAULT_REPLAY_GROUP,
    )
    .option('--dry-run', 'count what would be replayed; deliver and commit nothing')
    .option('--json', 'print the summary as one JSON object')
    .action(
      async (flags: {
        from: ReplayPoint;
        to?: ReplayPoint;
        rate?: number;
        group: string;
        dryRun?: boolean;
        json?: boolean;
      }) => {
        const opts: ReplayOptions = {
          from: flags.from,
          to: flags.to,
          rate: flags.rate,
          group: flags.group,
          dryRun: flags.dryRun,
          json: flags.json,
        };
        await run(async (ctx) => {
          checkReplayOptions(ctx, opts); // needs the configuration (CONSUMER_GROUP), so it runs in `run`, before the import
          const { replay } = await import('./replay.js');
          return replay(ctx, opts);
        });
      },
    );
}
