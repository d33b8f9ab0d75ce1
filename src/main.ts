/**
 * `npm start`: brings up the local stack unless configured externally, applies migrations, runs the worker
 * and the bridge, and prints where to look. SIGINT/SIGTERM stop the service and every stack process this
 * run started (services that were already running are left running).
 */
import { startApp, type App } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './log.js';
import { stackDown, stackStatus, stackUp, type ServiceName } from './stack/index.js';
import { migrate } from './store/migrate.js';
import { installTemporalRuntime } from './temporal.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  installTemporalRuntime(logger);

  const before = await stackStatus();
  const after = await stackUp();
  const startedHere = (Object.keys(after.services) as ServiceName[]).filter(
    (name) => before.services[name].state !== 'running' && after.services[name].state === 'running',
  );

  let app: App | undefined = undefined;
  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'stopping');
    await app?.stop();
    if (startedHere.length > 0) await stackDown({ services: startedHere });
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  await migrate(config.DATABASE_URL);
  app = await startApp(config, { logger });
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
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : ((err as Error).stack ?? String(err))}\n`);
  process.exit(1);
});
