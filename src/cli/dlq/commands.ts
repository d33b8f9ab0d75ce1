/** `fulfilment dlq list|show|redrive|purge`: the dead-letter topic's commands, registered on the program by main.ts. */
import type { Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as arg from '../options.js';
import { DEFAULT_REDACT_FIELDS } from '../redact.js';
import { UsageError } from '../cli-errors.js';
import type { Position } from '../position.js';
import { operatorName } from './audit.js';
import type { DlqFilter } from './filter.js';
import { checkPurgeOptions, type DlqPurgeOptions } from './purge-options.js';
import { checkSelection } from './selection.js';

interface FilterFlags {
  since?: Date;
  until?: Date;
  errorClass?: string;
  tenant?: string;
}

function filterFrom(flags: FilterFlags): DlqFilter {
  return { since: flags.since, until: flags.until, errorClass: flags.errorClass, tenant: flags.tenant };
}

function withFilters(cmd: Command): Command {
  return cmd
    .option('--since <time>', 'failed at or after this time (RFC 3339 or a duration ago: 2h)', arg.time)
    .option('--until <time>', 'failed before this time (RFC 3339 or a duration ago: 30m)', arg.time)
    .option('--error-class <name>', 'error class, e.g. MalformedEventError (case-insensitive)', arg.name)
    .option('--tenant <id>', 'tenant id', arg.name);
}

/** Over 80 lines: one declaration per subcommand (its options and help) — a list, not logic. */
export function registerDlqCommands(program: Command, run: Runner): void {
  const dlq = program
    .command('dlq')
    .description('inspect, redrive and purge records of the dead-letter topic (DLQ_TOPIC)');

  withFilters(
    dlq
      .command('list')
      .description(
        'list dead letters in DLQ order (partition, offset), a page at a time; reads without committing anything',
      ),
  )
    .option('--limit <n>', 'records per page', arg.wholeNumber(1), 20)
    .option('--offset <k>', 'skip the first k matching records', arg.wholeNumber(0))
    .option('--page <p>', 'page number, from 1 (pages of --limit records)', arg.wholeNumber(1))
    .option('--json', 'one JSON object per line instead of a table')
    .action(async (flags: FilterFlags & { limit: number; offset?: number; page?: number; json?: boolean }) => {
      if (flags.offset !== undefined && flags.page !== undefined)
        throw new UsageError('--offset and --page both say where the page starts: give one of them');
      const skip = flags.offset ?? ((flags.page ?? 1) - 1) * flags.limit;
      await runCommand(
        run,
        { filter: filterFrom(flags), limit: flags.limit, skip, json: flags.json },
        async () => (await import('./list.js')).dlqList,
      );
    });

  dlq
    .command('show')
    .description('show one dead letter in full: all headers and the payload, personal data redacted unless --reveal')
    .argument('<partition:offset>', 'the record, as dlq list shows it (e.g. 0:42)', arg.position)
    .option('--reveal', 'show the values of sensitive fields')
    .option(
      '--redact-fields <list>',
      `comma-separated fields to redact (default ${DEFAULT_REDACT_FIELDS.join(',')})`,
      arg.fieldList,
    )
    .option('--json', 'print the record as one JSON object')
    .action(async (position: Position, flags: { reveal?: boolean; redactFields?: string[]; json?: boolean }) => {
      await runCommand(
        run,
        { position, reveal: flags.reveal, redactFields: flags.redactFields, json: flags.json },
        async () => (await import('./show.js')).dlqShow,
      );
    });

  withFilters(
    dlq
      .command('redrive')
      .description(
        'publish dead letters back to the orders topic (ORDERS_TOPIC) with their original key, value and headers, each re-validated first and recorded in the redrive log',
      )
      .option('--id <partition:offset>', 'a record to redrive (repeatable)', arg.positions),
  )
    .option('--all', 'every record in the DLQ')
    .option('--rate <per-second>', 'records per second at most', arg.rate, 10)
    .option('--dry-run', 'print what would be sent; send nothing')
    .option('--force', 'send dead letters that are still malformed anyway (the bridge dead-letters them again)')
    .option('--again', 'send dead letters the redrive log says were redriven already')
    .option(
      '--operator <name>',
      'who runs the redrive, for the audit line and the redrive log (default: the OS user)',
      operatorName,
    )
    .action(
      async (
        flags: FilterFlags & {
          id?: Position[];
          all?: boolean;
          rate: number;
          dryRun?: boolean;
          force?: boolean;
          again?: boolean;
          operator?: string;
        },
      ) => {
        const opts = {
          ids: flags.id,
          filter: filterFrom(flags),
          all: flags.all,
          rate: flags.rate,
          dryRun: flags.dryRun,
          force: flags.force,
          again: flags.again,
          operator: flags.operator,
        };
        checkSelection(opts);
        await run(async (ctx) => {
          const { dlqRedrive, refusalOf } = await import('./redrive.js');
          const result = await dlqRedrive(ctx, opts);
          // Refused dead letters were reported above; the exit code (1) tells a script that some were not sent.
          const refused = refusalOf(result);
          if (refused) throw refused;
          return result;
        });
      },
    );

  dlq
    .command('purge')
    .description(
      'delete the dead letters written before a time: the prefix of each partition (Kafka deletes no other records); a dry run unless --yes',
    )
    .requiredOption(
      '--before <time>',
      'delete what was written before this time (RFC 3339 or a duration ago: 30d)',
      arg.time,
    )
    .option('--yes', 'delete for real (without it: report what would be deleted)')
    .option('--dry-run', 'report what would be deleted; delete nothing (the default)')
    .option('--operator <name>', 'who runs the purge, for the audit line (default: the OS user)', operatorName)
    .action(async (flags: { before: Date; yes?: boolean; dryRun?: boolean; operator?: string }) => {
      const opts: DlqPurgeOptions = {
        before: flags.before,
        yes: flags.yes,
        dryRun: flags.dryRun,
        operator: flags.operator,
      };
      checkPurgeOptions(opts);
      await runCommand(run, opts, async () => (await import('./purge.js')).dlqPurge);
    });
}
