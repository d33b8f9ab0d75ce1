/**
 * `fulfilment` — the project's one operator CLI: inspect and redrive the dead-letter topic, redeliver order history,
 * show one order, re-drive an order held as failed, replay and export workflow histories, provision what the
 * service needs.
 * Each command family registers itself from its folder (dlq/commands.ts, redeliver/command.ts, reconcile/commands.ts, order/commands.ts,
 * status/commands.ts, shipping/commands.ts, tenant/commands.ts, workflow/commands.ts, deployment/commands.ts, lag/commands.ts, codec/command.ts, provision/command.ts). Options are validated before
 * anything is read or changed; bad input exits 2 with a message naming the option: each action checks its options
 * first (commander's parsers in options.ts, then each family's checks across options) and only then imports its
 * command module — and with it kafkajs, Temporal or pg. Nothing the registrations import loads those, so `--help` and
 * bad input stay quick (test/unit/cli/cli-heavy-imports.unit.test.ts holds that).
 *
 * Configuration comes from the environment through src/base/config.ts, exactly as for the service, so the CLI sees
 * the topics, group and task queue the service runs with.
 */
import { pathToFileURL } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { ConfigError, loadConfig, type Config } from '../base/config.js';
import { permanentKafkaFailure } from '../adapters/kafka/failures.js';
import { isKafkaClientError } from '../adapters/kafka/records.js';
import { registerCodecServerCommand } from './codec/command.js';
import type { Runner } from './command.js';
import { cliLogger, type CliContext } from './context.js';
import { registerDeploymentCommands } from './deployment/commands.js';
import { registerDlqCommands } from './dlq/commands.js';
import { EXIT, InterruptedError, NotFoundError, UsageError } from './cli-errors.js';
import { registerLagCommands } from './lag/commands.js';
import { registerOrderCommands } from './order/commands.js';
import { eprintln, processOutput, type Output } from './output.js';
import { registerProvisionCommand } from './provision/command.js';
import { registerReconcileCommand } from './reconcile/commands.js';
import { registerRedeliverCommand } from './redeliver/command.js';
import { registerShippingCommands } from './shipping/commands.js';
import { registerStatusCommands } from './status/commands.js';
import { registerTenantCommands } from './tenant/commands.js';
import { registerWorkflowCommands } from './workflow/commands.js';

/** The command families, in the order --help lists them; each registers its commands from its own folder. */
const COMMANDS: ((program: Command, run: Runner) => void)[] = [
  registerDlqCommands,
  registerRedeliverCommand,
  registerReconcileCommand,
  registerOrderCommands,
  registerShippingCommands,
  registerTenantCommands,
  registerStatusCommands,
  registerWorkflowCommands,
  registerDeploymentCommands,
  registerLagCommands,
  registerCodecServerCommand,
  registerProvisionCommand,
];

export interface CliIo {
  out?: Output;
  /** Environment the configuration is read from. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Use this configuration instead of reading `env`. */
  config?: Config;
  signal?: AbortSignal;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const OVERVIEW = `
All commands:
  dlq list          list dead letters (filters: --since --until --error-class --tenant; paging: --limit --offset/--page)
  dlq show          one dead letter in full, personal data redacted unless --reveal
  dlq redrive       publish dead letters back to the orders topic (--id p:o | filters | --all), rate-limited;
                    re-validated first (still malformed: refused unless --force), each recorded (again: --again)
  dlq purge         delete the dead letters written before a time (--before); a dry run unless --yes
  redeliver         deliver a stretch of the orders topic's history again, in a separate consumer group
  reconcile         check a window's orders end to end (orders topic ↔ ledger and dead letters, store ↔ Temporal,
                    warehouse, status outbox and topic); exit 1 on any mismatch or blind spot; --repair [--yes]
  order show        one order: its row (tenant-scoped), workflow status and notes, shipment, dead letters
  order retry       ship an order held as failed again, its run open or closed, or a tenant's failed orders in bulk
  order resolve     settle an order whose recall the warehouse refused (--action retry-recall | recalled-by-hand)
  shipping pause    stop shipping before a planned warehouse window (all tenants, or --tenant): orders wait, attempts
                    unspent; --dry-run first; who, when and why are recorded
  shipping resume   end a pause: the workers wake the held orders, oldest first, paced (--rate: this command does)
  shipping status   the pauses in force and how many orders wait for the warehouse
  tenant show       one tenant: its weight and share among the tenants with open runs, its orders not settled
                    (pending, waiting, failed; the oldest's age), its open runs, whether shipping is paused for it
  status tail       the status events of a tenant or an order (<tenant>[/<order>]) from the outbox, sent or waiting;
                    --follow prints new ones until SIGINT
  workflow replay   replay a run's history (from Temporal, or --file) on this checkout's workflow code;
                    nondeterminism exits 1 with the SDK's message and the event where it diverged
  workflow export   write a run's history as JSON into test/histories/ (the replay gate), or --out
  deployment show   the worker deployment's versions (one per build): current, ramping, draining; open runs of each
  deployment current  send every new order to a version (refused for one with no live workers unless --force)
  deployment ramp   send a share of new orders to a version (the same refusal)
  deployment rollback  send new orders back to the previous version (the same refusal; waiting orders stay put)
  deployment retire remove a drained version whose workers have stopped
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

/**
 * Builds the program; `run` receives each command's work so runCli can own context creation and errors.
 * An action checks its options, then hands `run` work that imports the command module: never the other way round.
 */
export function buildProgram(
  out: Output,
  run: (work: (ctx: CliContext) => Promise<unknown>, logLevel: string) => Promise<void>,
): Command {
  const program = new Command('fulfilment')
    .description(
      'Operate the order-fulfilment consumer: inspect and redrive dead letters, redeliver order history, show and retry orders, replay workflow histories, provision what it needs.',
    )
    .addOption(new Option('--log-level <level>', 'client diagnostics on stderr').choices(LOG_LEVELS).default('silent'))
    .exitOverride()
    .configureOutput({ writeOut: (s) => out.write(s), writeErr: (s) => out.writeErr(s) })
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', OVERVIEW);
  const logLevel = () => program.opts<{ logLevel: string }>().logLevel;
  // Each command family registers itself from its folder; its actions check their options, then hand the runner
  // work that imports the command's module.
  for (const register of COMMANDS) register(program, (work) => run(work, logLevel()));
  // The earlier name of `redeliver`, refused with the new one named: one word, one meaning (a replay is a workflow
  // history's, `workflow replay`), and a script that used the old name is told what to run instead.
  program
    .command('replay', { hidden: true })
    .allowUnknownOption()
    .allowExcessArguments()
    .helpOption(false)
    .action(() => {
      throw new UsageError(
        '`fulfilment replay` is now `fulfilment redeliver`, with the same options (`replay` is kept for workflow histories: `fulfilment workflow replay`)',
      );
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
