/**
 * `npm start`: the development launcher. Builds the JavaScript (`npm run build`, incremental), brings up the
 * embedded local stack (tools/stack) unless configured externally, provisions it (`fulfilment provision`), then runs
 * the service as production runs it — `node dist/src/service.js`, a child process — and prints where to look once it
 * is ready. SIGINT/SIGTERM are passed to the service; when it has stopped, every stack process this run started is
 * stopped too (services that were already running are left running). The launcher exits with the service's code.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ConfigError, loadConfig, type Config } from '../src/base/config.js';
import { createLogger } from '../src/base/log.js';
import { sleep } from '../src/base/sleep.js';
import { describeReport, provision } from '../src/roles/provision/index.js';
import { repoRoot, stackDown, stackKafkaEnv, stackStatus, stackUp, type ServiceName } from './stack/index.js';
import { announceRuntime } from './runtime.js';

/** Waits until the service answers /readyz with 200 (or has exited); false when it exited first. */
async function ready(config: Config, exited: () => boolean): Promise<boolean> {
  if (config.METRICS_PORT <= 0) return !exited();
  const url = `http://127.0.0.1:${config.METRICS_PORT}/readyz`;
  while (!exited()) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return true;
    await sleep(250);
  }
  return false;
}

function banner(config: Config): string {
  const ui = `${config.TEMPORAL_UI_URL}/namespaces/${config.TEMPORAL_NAMESPACE}/workflows`;
  return [
    '',
    'fulfilment consumer running',
    `  consuming      ${config.ORDERS_TOPIC} as group ${config.CONSUMER_GROUP} on ${config.KAFKA_BROKERS.join(',')}`,
    `  dead letters   ${config.DLQ_TOPIC}`,
    `  Temporal       ${config.TEMPORAL_ADDRESS} (task queue ${config.TEMPORAL_TASK_QUEUE})`,
    `  Web UI         ${ui}`,
    `  metrics        ${config.METRICS_PORT > 0 ? `http://127.0.0.1:${config.METRICS_PORT}/metrics` : 'off'}`,
    '  Ctrl-C stops everything this run started.',
    '',
  ].join('\n');
}

async function main(): Promise<number> {
  announceRuntime('start');
  // STACK_KAFKA=cluster: the service (a child, with this environment) bootstraps from every node.
  Object.assign(process.env, stackKafkaEnv());
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL, undefined, config.LOG_FORMAT);
  const build = spawnSync(process.execPath, ['--import', 'tsx', join(repoRoot, 'tools', 'build.ts')], {
    stdio: 'inherit',
  });
  if (build.status !== 0) return build.status ?? 1;

  const before = await stackStatus();
  const after = await stackUp();
  // What the service never creates itself — topics, search attributes, schema and grants — as `fulfilment provision`
  // makes them (idempotent; the stack has done it for its own services, this covers configured external ones).
  for (const line of describeReport(await provision(config, logger), config)) process.stdout.write(`${line}\n`);
  const startedHere = (Object.keys(after.services) as ServiceName[]).filter(
    (name) => before.services[name].state !== 'running' && after.services[name].state === 'running',
  );

  // The service, as production runs it: the JavaScript tsc emitted, one process that receives the signals.
  const service = spawn(process.execPath, [join(repoRoot, 'dist', 'src', 'service.js')], { stdio: 'inherit' });
  let code: number | undefined;
  const done = new Promise<number>((resolve) =>
    service.on('exit', (c, signal) => resolve((code = c ?? (signal ? 1 : 0)))),
  );
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => service.kill(signal));
  if (await ready(config, () => code !== undefined)) process.stdout.write(`${banner(config)}\n`);
  const exitCode = await done;
  if (startedHere.length > 0) await stackDown({ services: startedHere });
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof ConfigError ? err.message : ((err as Error).stack ?? String(err))}\n`);
    process.exit(1);
  },
);
