/**
 * `npm run stack -- up|down|status|logs [--json]`: the local Kafka/Temporal/PostgreSQL/warehouse stack.
 * Progress goes to stderr; stdout carries only the result (a table, or one JSON object with --json).
 */
import { existsSync } from 'node:fs';
import { Command, Option } from 'commander';
import { temporalCliBinary } from './temporal-cli.js';
import { ConfigError } from '../../src/base/config.js';
import { SERVICE_NAMES, type ServiceName } from './addresses.js';
import { formatStatus } from './format.js';
import type { NodeAction } from './services/kafka-cluster.js';
import { StackError } from './log.js';
import { serviceLog } from './paths.js';
import { tailFile } from './proc.js';
import {
  stackDown,
  stackKafkaNode,
  stackResetTemporal,
  stackStatus,
  stackUp,
  temporalCliPath,
  testServerExecutablePath,
} from './index.js';

async function out(text: string): Promise<void> {
  await new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));
}

function parseServices(v: string | undefined): ServiceName[] | undefined {
  if (!v) return undefined;
  const list = v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  for (const x of list)
    if (!(SERVICE_NAMES as readonly string[]).includes(x))
      throw new StackError(`unknown service "${x}" (known: ${SERVICE_NAMES.join(', ')})`);
  return list as ServiceName[];
}

const program = new Command()
  .name('stack')
  .description(
    'Local stack for development and tests: Kafka, Temporal (+ Web UI), PostgreSQL, warehouse; a TLS Temporal on demand.\nState: <repo>/.stack (STACK_DIR); build cache: ~/.cache/fulfilment (FULFILMENT_CACHE_DIR).',
  )
  .showHelpAfterError();

program
  .command('up')
  .description(
    'start every service that is not running (idempotent; temporal-tls only when named in --only) and print the addresses',
  )
  .option('--for-tests', 'also make sure the time-skipping test server and the Temporal CLI exist')
  .addOption(new Option('--only <services>', `comma-separated subset of ${SERVICE_NAMES.join(',')}`))
  .option('--json', 'print the result as one JSON object')
  .option('-q, --quiet', 'no progress lines')
  .action(async (o: { forTests?: boolean; only?: string; json?: boolean; quiet?: boolean }) => {
    const info = await stackUp({ services: parseServices(o.only), quiet: !!o.quiet, forTests: !!o.forTests });
    const extra: Record<string, string> = {};
    if (o.forTests) extra['Test server'] = await testServerExecutablePath();
    if (o.forTests || existsSync(temporalCliBinary())) extra['Temporal CLI'] = await temporalCliPath();
    await out(
      o.json
        ? `${JSON.stringify(o.forTests ? { ...info, testServerPath: extra['Test server'], temporalCliPath: extra['Temporal CLI'] } : info)}\n`
        : formatStatus(info, extra),
    );
  });

program
  .command('down')
  .description('stop what this stack started (never external or foreign processes)')
  .addOption(new Option('--only <services>', `comma-separated subset of ${SERVICE_NAMES.join(',')}`))
  .option('-q, --quiet', 'no progress lines')
  .action(async (o: { only?: string; quiet?: boolean }) => {
    await stackDown({ services: parseServices(o.only), quiet: !!o.quiet });
  });

program
  .command('reset-temporal')
  .description(
    "stop the stack's Temporal and empty its store (every workflow in it is lost); the next `up` starts it afresh",
  )
  .action(async () => {
    await stackResetTemporal();
  });

program
  .command('status')
  .description('print every address and whether each service runs')
  .option('--json', 'print one JSON object (and nothing else) on stdout')
  .action(async (o: { json?: boolean }) => {
    const info = await stackStatus();
    const cli = temporalCliBinary();
    await out(
      o.json ? `${JSON.stringify(info)}\n` : formatStatus(info, existsSync(cli) ? { 'Temporal CLI': cli } : {}),
    );
  });

program
  .command('kafka-node')
  .description(
    'fault or restore one node of the Kafka cluster (STACK_KAFKA=cluster): stop (SIGTERM, a controlled shutdown), kill (SIGKILL), start (and wait until it is a live broker); with STACK_KAFKA_NETNS=1 also cut (its network link down) and restore; a stopped or killed node stays down until start',
  )
  .argument('<action>', 'stop|kill|start|cut|restore')
  .argument('<node>', 'the node id: 1, 2 or 3')
  .action(async (action: string, node: string) => {
    if (!['stop', 'kill', 'start', 'cut', 'restore'].includes(action))
      throw new StackError(`kafka-node: unknown action "${action}" (expected stop, kill, start, cut or restore)`);
    if (!/^\d+$/.test(node)) throw new StackError(`kafka-node: the node is its id (1, 2 or 3), got "${node}"`);
    await stackKafkaNode(action as NodeAction, Number(node));
  });

program
  .command('logs')
  .description("print the tail of a service's log")
  .argument('<service>', SERVICE_NAMES.join('|'))
  .option('-n, --lines <n>', 'lines', '50')
  .action(async (service: string, o: { lines: string }) => {
    const [name] = parseServices(service) ?? [];
    if (!name) return;
    await out(`${serviceLog(name)}:\n${tailFile(serviceLog(name), Number(o.lines) || 50)}\n`);
  });

try {
  await program.parseAsync(process.argv);
  process.exit(0);
} catch (e) {
  const msg =
    e instanceof StackError || e instanceof ConfigError
      ? e.message
      : e instanceof Error
        ? (e.stack ?? e.message)
        : String(e);
  process.stderr.write(`[stack] error: ${msg}\n`);
  process.exit(1);
}
