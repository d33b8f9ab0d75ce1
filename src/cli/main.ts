/**
 * `fulfilment` — the project's one operator CLI: inspect and redrive the dead-letter topic, replay order history,
 * show one order, re-drive an order held as failed, replay and export workflow histories, provision what the
 * service needs.
 * Options are validated before anything is read or changed; bad input exits 2 with a message naming the option.
 * Each action checks its options first (commander's parsers in options.ts, then the checks across options in
 * dlq/selection.ts, replay/options.ts, order/options.ts and workflow/options.ts) and only then imports its command module — and with it kafkajs, Temporal
 * or pg. Nothing this file imports statically loads those, so `--help` and bad input stay quick
 * (test/unit/cli-heavy-imports.unit.test.ts holds that).
 *
 * Configuration comes from the environment through src/config.ts, exactly as for the service, so the CLI sees
 * the topics, group and task queue the service runs with.
 */
import { pathToFileURL } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { permanentKafkaFailure } from '../kafka/failures.js';
import { isKafkaClientError } from '../kafka/records.js';
import { cliLogger, type CliContext } from './context.js';
import { operatorName } from './dlq/audit.js';
import type { DlqFilter } from './dlq/filter.js';
import { checkPurgeOptions, type DlqPurgeOptions } from './dlq/purge-options.js';
import { checkSelection } from './dlq/selection.js';
import { EXIT, InterruptedError, NotFoundError, UsageError } from './errors.js';
import * as arg from './options.js';
import { eprintln, processOutput, type Output } from './output.js';
import type { Position } from './position.js';
import * as orderArg from './order/options.js';
import { DEFAULT_REDACT_FIELDS } from './redact.js';
import { PROVISION_STEPS, type ProvisionStep } from '../provision/steps.js';
import { checkReplayOptions, DEFAULT_REPLAY_GROUP, type ReplayOptions } from './replay/options.js';
import type { ReplayPoint } from './replay/range.js';
import * as workflowArg from './workflow/options.js';

export interface CliIo {
  out?: Output;
  /** Environment the configuration is read from. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Use this configuration instead of reading `env`. */
  config?: Config;
  signal?: AbortSignal;
}

interface FilterFlags {
  since?: Date;
  until?: Date;
  errorClass?: string;
  tenant?: string;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const OVERVIEW = `
All commands:
  dlq list          list dead letters (filters: --since --until --error-class --tenant; paging: --limit --offset/--page)
  dlq show          one dead letter in full, personal data redacted unless --reveal
  dlq redrive       publish dead letters back to the orders topic (--id p:o | filters | --all), rate-limited;
                    re-validated first (still malformed: refused unless --force), each recorded (again: --again)
  dlq purge         delete the dead letters written before a time (--before); a dry run unless --yes
  replay            deliver a stretch of the orders topic's history again, in a separate consumer group
  order show        one order: its row (tenant-scoped), workflow status and notes, shipment, dead letters
  order retry       re-drive an order held as failed on its running workflow (--reason required; --request-id)
  workflow replay   replay a run's history (from Temporal, or --file) on this checkout's workflow code;
                    nondeterminism exits 1 with the SDK's message and the event where it diverged
  workflow export   write a run's history as JSON into test/histories/ (the replay gate), or --out
  lag               records behind and age of the oldest uncommitted record per group and partition (--group, --json)
  lag-exporter      serve that lag as Prometheus metrics on LAG_EXPORTER_PORT
  codec-server      serve the payload codec (POST /decode, /encode) for the Temporal Web UI and temporal --codec-endpoint:
                    PAYLOAD_ENCRYPTION_KEYS, bearer token CODEC_SERVER_TOKEN, CORS for CODEC_SERVER_CORS_ORIGINS
  provision         create the Kafka topics, register the Temporal search attributes, apply the migrations as
                    DATABASE_MIGRATION_URL and grant the runtime role (DATABASE_URL); idempotent (--only kafka,...)

Configuration comes from the same environment variables as the service (ORDERS_TOPIC, DLQ_TOPIC,
CONSUMER_GROUP, KAFKA_BROKERS, TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE, DATABASE_URL, ...); Temporal TLS, mTLS and
API key too (TEMPORAL_TLS_*, TEMPORAL_API_KEY, or a profile: TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE).
Times: RFC 3339 (2026-01-31T12:00:00Z) or a duration ago (90s, 15m, 2h, 7d). Positions: partition:offset.
Exit codes: 0 ok, 1 failed (not found, dependency down, a redrive refused records, a replay diverged), 2 bad input,
130 interrupted.`;

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

/**
 * Builds the program; `run` receives each command's work so runCli can own context creation and errors.
 * An action checks its options, then hands `run` work that imports the command module: never the other way round.
 */
export function buildProgram(out: Output, run: (work: (ctx: CliContext) => Promise<unknown>, logLevel: string) => Promise<void>): Command {
  const program = new Command('fulfilment')
    .description('Operate the order-fulfilment consumer: inspect and redrive dead letters, replay order history, show and retry orders, replay workflow histories, provision what it needs.')
    .addOption(new Option('--log-level <level>', 'client diagnostics on stderr').choices(LOG_LEVELS).default('silent'))
    .exitOverride()
    .configureOutput({ writeOut: (s) => out.write(s), writeErr: (s) => out.writeErr(s) })
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', OVERVIEW);
  const logLevel = () => program.opts<{ logLevel: string }>().logLevel;

  const dlq = program.command('dlq').description('inspect, redrive and purge records of the dead-letter topic (DLQ_TOPIC)');

  withFilters(dlq.command('list').description('list dead letters in DLQ order (partition, offset), a page at a time; reads without committing anything'))
    .option('--limit <n>', 'records per page', arg.wholeNumber(1), 20)
    .option('--offset <k>', 'skip the first k matching records', arg.wholeNumber(0))
    .option('--page <p>', 'page number, from 1 (pages of --limit records)', arg.wholeNumber(1))
    .option('--json', 'one JSON object per line instead of a table')
    .action(async (flags: FilterFlags & { limit: number; offset?: number; page?: number; json?: boolean }) => {
      if (flags.offset !== undefined && flags.page !== undefined) throw new UsageError('--offset and --page both say where the page starts: give one of them');
      const skip = flags.offset ?? ((flags.page ?? 1) - 1) * flags.limit;
      await run(async (ctx) => {
        const { dlqList } = await import('./dlq/list.js');
        return dlqList(ctx, { filter: filterFrom(flags), limit: flags.limit, skip, json: flags.json });
      }, logLevel());
    });

  dlq
    .command('show')
    .description('show one dead letter in full: all headers and the payload, personal data redacted unless --reveal')
    .argument('<partition:offset>', 'the record, as dlq list shows it (e.g. 0:42)', arg.position)
    .option('--reveal', 'show the values of sensitive fields')
    .option('--redact-fields <list>', `comma-separated fields to redact (default ${DEFAULT_REDACT_FIELDS.join(',')})`, arg.fieldList)
    .option('--json', 'print the record as one JSON object')
    .action(async (position: Position, flags: { reveal?: boolean; redactFields?: string[]; json?: boolean }) => {
      await run(async (ctx) => {
        const { dlqShow } = await import('./dlq/show.js');
        return dlqShow(ctx, { position, reveal: flags.reveal, redactFields: flags.redactFields, json: flags.json });
      }, logLevel());
    });

  withFilters(
    dlq
      .command('redrive')
      .description('publish dead letters back to the orders topic (ORDERS_TOPIC) with their original key, value and headers, each re-validated first and recorded in the redrive ledger')
      .option('--id <partition:offset>', 'a record to redrive (repeatable)', arg.positions),
  )
    .option('--all', 'every record in the DLQ')
    .option('--rate <per-second>', 'records per second at most', arg.rate, 10)
    .option('--dry-run', 'print what would be sent; send nothing')
    .option('--force', 'send dead letters that are still malformed anyway (the bridge dead-letters them again)')
    .option('--again', 'send dead letters the redrive ledger says were redriven already')
    .option('--operator <name>', 'who runs the redrive, for the audit line and the ledger (default: the OS user)', operatorName)
    .action(async (flags: FilterFlags & { id?: Position[]; all?: boolean; rate: number; dryRun?: boolean; force?: boolean; again?: boolean; operator?: string }) => {
      const opts = {
        ids: flags.id, filter: filterFrom(flags), all: flags.all, rate: flags.rate, dryRun: flags.dryRun,
        force: flags.force, again: flags.again, operator: flags.operator,
      };
      checkSelection(opts);
      await run(async (ctx) => {
        const { dlqRedrive, refusalOf } = await import('./dlq/redrive.js');
        const result = await dlqRedrive(ctx, opts);
        // Refused dead letters were reported above; the exit code (1) tells a script that some were not sent.
        const refused = refusalOf(result);
        if (refused) throw refused;
        return result;
      }, logLevel());
    });

  dlq
    .command('purge')
    .description('delete the dead letters written before a time: the prefix of each partition (Kafka deletes no other records); a dry run unless --yes')
    .requiredOption('--before <time>', 'delete what was written before this time (RFC 3339 or a duration ago: 30d)', arg.time)
    .option('--yes', 'delete for real (without it: report what would be deleted)')
    .option('--dry-run', 'report what would be deleted; delete nothing (the default)')
    .option('--operator <name>', 'who runs the purge, for the audit line (default: the OS user)', operatorName)
    .action(async (flags: { before: Date; yes?: boolean; dryRun?: boolean; operator?: string }) => {
      const opts: DlqPurgeOptions = { before: flags.before, yes: flags.yes, dryRun: flags.dryRun, operator: flags.operator };
      checkPurgeOptions(opts);
      await run(async (ctx) => {
        const { dlqPurge } = await import('./dlq/purge.js');
        return dlqPurge(ctx, opts);
      }, logLevel());
    });

  program
    .command('replay')
    .description("deliver the orders topic's history again through the bridge's path, in a separate consumer group; the event-id dedupe makes it safe")
    .requiredOption('--from <point>', 'where to start: earliest, a time (RFC 3339 or 2h), an offset on every partition, or p:o[,p:o...]', arg.replayPoint)
    .option('--to <point>', 'where to stop, exclusive (default: the end as of the start)', arg.replayPoint)
    .option('--rate <events/s>', 'deliveries per second at most (required unless --dry-run)', arg.rate)
    .option('--group <name>', 'consumer group of the replay; must differ from CONSUMER_GROUP', arg.name, DEFAULT_REPLAY_GROUP)
    .option('--dry-run', 'count what would be replayed; deliver and commit nothing')
    .option('--json', 'print the summary as one JSON object')
    .action(async (flags: { from: ReplayPoint; to?: ReplayPoint; rate?: number; group: string; dryRun?: boolean; json?: boolean }) => {
      const opts: ReplayOptions = { from: flags.from, to: flags.to, rate: flags.rate, group: flags.group, dryRun: flags.dryRun, json: flags.json };
      await run(async (ctx) => {
        checkReplayOptions(ctx, opts); // needs the configuration (CONSUMER_GROUP), so it runs in `run`, before the import
        const { replay } = await import('./replay/replay.js');
        return replay(ctx, opts);
      }, logLevel());
    });

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
      await run(async (ctx) => {
        const { orderShow } = await import('./order/show.js');
        return orderShow(ctx, opts);
      }, logLevel());
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
      await run(async (ctx) => {
        const { orderRetry } = await import('./order/retry.js');
        return orderRetry(ctx, opts);
      }, logLevel());
    });

  const workflow = program.command('workflow').description("debug an order's workflow: replay its history on the current code, export it for the replay gate");

  workflow
    .command('replay')
    .description("replay a run's history on this checkout's workflow code (the worker's bundle and options): exit 0 if it decides as it did, 1 with the SDK's message and the event where it diverged if not")
    .argument('[workflowId]', 'the workflow (e.g. order/acme-eu/o-1008); with --file, only the id it is replayed under (default: the file name)', workflowArg.workflowId)
    .option('--run-id <id>', 'the run (default: the latest)', workflowArg.runId)
    .option('--file <path>', 'an exported history (`fulfilment workflow export`, `temporal workflow show --output json`) instead of fetching it', workflowArg.path)
    .addOption(new Option('--workflows <path>', 'development: the workflows entry point to replay against instead of workflows/index.ts').argParser(workflowArg.path).hideHelp())
    .option('--json', 'print the outcome as one JSON object')
    .action(async (workflowId: string | undefined, flags: { runId?: string; file?: string; workflows?: string; json?: boolean }) => {
      const opts: workflowArg.ReplayOptions = { workflowId, runId: flags.runId, file: flags.file, workflowsPath: flags.workflows, json: flags.json };
      workflowArg.checkReplayOptions(opts);
      await run(async (ctx) => {
        const { workflowReplay } = await import('./workflow/replay.js');
        return workflowReplay(ctx, opts);
      }, logLevel());
    });

  workflow
    .command('export')
    .description("write a run's history as JSON (the format `temporal workflow show --output json` writes) into test/histories/, where the replay gate replays it on every test run")
    .argument('<workflowId>', 'the workflow (e.g. order/acme-eu/o-1008)', workflowArg.workflowId)
    .option('--run-id <id>', 'the run (default: the latest)', workflowArg.runId)
    .option('--out <path>', 'where to write (default: test/histories/<workflow id made a file name>.json)', workflowArg.path)
    .option('--force', 'replace the file if it exists (default: keep it and refuse)')
    .action(async (workflowId: string, flags: { runId?: string; out?: string; force?: boolean }) => {
      const opts: workflowArg.ExportOptions = { workflowId, runId: flags.runId, out: flags.out, force: flags.force };
      workflowArg.checkExportOptions(opts);
      await run(async (ctx) => {
        const { workflowExport } = await import('./workflow/export.js');
        return workflowExport(ctx, opts);
      }, logLevel());
    });

  const groupList = (value: string, previous: string[] = []) => [...previous, ...value.split(',').map((g) => arg.name(g))];

  program
    .command('lag')
    .description("per consumer group and partition: committed offset, end offset, records behind and the age of the oldest record not yet committed, read from the brokers (no bridge needs to run)")
    .option('--group <name>', 'consumer group (repeatable, or comma-separated; default CONSUMER_GROUP)', groupList)
    .option('--topic <name>', 'topic (default ORDERS_TOPIC)', arg.name)
    .option('--json', 'print one JSON object: {at, topic, groups, partitions: [...]}')
    .action(async (flags: { group?: string[]; topic?: string; json?: boolean }) => {
      await run(async (ctx) => {
        const { lag } = await import('./lag.js');
        return lag(ctx, { groups: flags.group, topic: flags.topic, json: flags.json });
      }, logLevel());
    });

  program
    .command('lag-exporter')
    .description('serve the same lag as Prometheus metrics on LAG_EXPORTER_PORT (/metrics, /livez, /readyz), polling every LAG_EXPORTER_INTERVAL_MS, until SIGINT/SIGTERM')
    .option('--group <name>', 'consumer group (repeatable, or comma-separated; default CONSUMER_GROUP)', groupList)
    .option('--topic <name>', 'topic (default ORDERS_TOPIC)', arg.name)
    .action(async (flags: { group?: string[]; topic?: string }) => {
      await run(async (ctx) => {
        const { lagExporter } = await import('./lag.js');
        return lagExporter(ctx, { groups: flags.group, topic: flags.topic });
      }, logLevel());
    });

  program
    .command('codec-server')
    .description('serve the payload codec the Temporal Web UI and `temporal --codec-endpoint` call (POST /decode, /encode) with the configured PAYLOAD_ENCRYPTION_KEYS, on CODEC_SERVER_HOST:CODEC_SERVER_PORT; every request needs Authorization: Bearer <CODEC_SERVER_TOKEN>; runs until interrupted')
    .option('--port <port>', 'port to listen on (default CODEC_SERVER_PORT, 8888; 0: any free port)', arg.wholeNumber(0))
    .action(async (flags: { port?: number }) => {
      if (flags.port !== undefined && flags.port > 65535) throw new UsageError(`--port: expected a port number 0–65535, got ${flags.port}`);
      await run(async (ctx) => {
        const { codecServerCommand } = await import('../codec/command.js');
        return codecServerCommand(ctx, { port: flags.port });
      }, logLevel());
    });

  program
    .command('provision')
    .description('create what the service needs and never creates itself: Kafka topics (ORDERS_TOPIC, DLQ_TOPIC), Temporal search attributes, the PostgreSQL schema (as DATABASE_MIGRATION_URL) and the runtime role\'s grants; changes only what is missing')
    .option('--only <steps>', `comma-separated steps to run (default all): ${PROVISION_STEPS.join(', ')}`, arg.provisionSteps)
    .option('--json', 'print what was done as one JSON object')
    .action(async (flags: { only?: ProvisionStep[]; json?: boolean }) => {
      await run(async (ctx) => {
        const { provisionCommand } = await import('./provision.js');
        return provisionCommand(ctx, { steps: flags.only ?? [...PROVISION_STEPS], json: flags.json });
      }, logLevel());
    });

  return program;
}

/** Runs the CLI with `argv` (without node and script); returns the exit code. Never calls process.exit. */
export async function runCli(argv: string[], io: CliIo = {}): Promise<number> {
  const out = io.out ?? processOutput();
  const program = buildProgram(out, async (work, logLevel) => {
    const config = io.config ?? loadConfig(io.env ?? process.env);
    try {
      await work({ config, out, logger: cliLogger(logLevel), signal: io.signal });
    } catch (err) {
      // A refused credential or certificate: say which variables to check.
      const security = permanentKafkaFailure(err, config);
      if (security !== undefined) throw new Error(security, { cause: err });
      // The Kafka client's errors say what failed, not where: name the brokers the configuration pointed at.
      if (isKafkaClientError(err)) {
        throw new Error(`Kafka at ${config.KAFKA_BROKERS.join(',')} (KAFKA_BROKERS): ${err.message}`, { cause: err });
      }
      throw err;
    }
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander printed the message already
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT.ok;
      return EXIT.usage;
    }
    if (err instanceof UsageError || err instanceof ConfigError) {
      eprintln(out, `error: ${err.message}`);
      return EXIT.usage;
    }
    if (err instanceof InterruptedError) {
      eprintln(out, 'interrupted');
      return EXIT.interrupted;
    }
    if (err instanceof NotFoundError) {
      eprintln(out, `error: ${err.message}`);
      return EXIT.failed;
    }
    eprintln(out, `error: ${(err as Error)?.message ?? String(err)}`);
    return EXIT.failed;
  }
}

/** Process entry point (bin/fulfilment.mjs and `npm run fulfilment`): SIGINT stops long commands cleanly. */
export async function main(argv: string[] = process.argv.slice(2)): Promise<never> {
  const interrupt = new AbortController();
  process.once('SIGINT', () => interrupt.abort());
  const code = await runCli(argv, { signal: interrupt.signal });
  // Clients (Temporal's native connection in particular) may hold the loop open for a while after closing.
  if (process.stdout.writableNeedDrain) await new Promise((resolve) => process.stdout.once('drain', resolve));
  process.exit(code);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
