/**
 * `npm start`: the development launcher. Brings up the embedded local stack (tools/stack) unless configured
 * externally, provisions it (`fulfilment provision`), then runs the service (src/service.ts) and prints where to look. SIGINT/SIGTERM stop the service
 * and every stack process this run started (services that were already running are left running).
 * Production launches run src/service.ts alone.
 */
import { ConfigError, loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { describeReport, provision } from '../src/provision/index.js';
import { serveUntilSignalled } from '../src/service.js';
import { stackDown, stackStatus, stackUp, type ServiceName } from './stack/index.js';
import { installTemporalRuntime } from '../src/temporal.js';
import { announceRuntime } from './runtime.js';

async function main(): Promise<void> {
  announceRuntime('start');
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  await installTemporalRuntime(logger);

  const before = await stackStatus();
  const after = await stackUp();
  // What the service never creates itself — topics, search attributes, schema and grants — as `fulfilment provision`
  // makes them (idempotent; the stack has done it for its own services, this covers configured external ones).
  for (const line of describeReport(await provision(config, logger), config)) process.stdout.write(`${line}\n`);
  const startedHere = (Object.keys(after.services) as ServiceName[]).filter(
    (name) => before.services[name].state !== 'running' && after.services[name].state === 'running',
  );
  await serveUntilSignalled({
    config,
    logger,
    afterStop: async () => {
      if (startedHere.length > 0) await stackDown({ services: startedHere });
    },
    onReady: () => {
      const ui = `${config.TEMPORAL_UI_URL}/namespaces/${config.TEMPORAL_NAMESPACE}/workflows`;
      process.stdout.write(
        [
          '',
          'fulfilment consumer running',
          `  consuming      ${config.ORDERS_TOPIC} as group ${config.CONSUMER_GROUP} on ${config.KAFKA_BROKERS.join(',')}`,
          `  dead letters   ${config.DLQ_TOPIC}`,
          `  Temporal       ${config.TEMPORAL_ADDRESS} (task queue ${config.TEMPORAL_TASK_QUEUE})`,
          `  Web UI         ${ui}`,
          `  metrics        ${config.METRICS_PORT > 0 ? `http://127.0.0.1:${config.METRICS_PORT}/metrics` : 'off'}`,
          '  Ctrl-C stops everything this run started.',
          '',
        ].join('\n') + '\n',
      );
    },
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : ((err as Error).stack ?? String(err))}\n`);
  process.exit(1);
});
