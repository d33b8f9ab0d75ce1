/**
 * The service alone — what a container or any production launch runs: the roles in FULFILMENT_ROLES against
 * the configured Kafka, Temporal and PostgreSQL. It never starts a local dependency. Each role waits for what it
 * needs when that is down at start-up (src/startup.ts); the worker waits, too, until the schema is at the version its
 * code needs — it never migrates: `fulfilment provision` does, as the owner role. A start-up failure waiting cannot
 * cure (PermanentStartupError: e.g. DATABASE_URL connecting as a superuser or the tables' owner) exits 1 at once,
 * with the reason. SIGINT/SIGTERM stop it cleanly; a start-up given up by a signal exits 0.
 *
 *   node --import tsx src/service.ts
 */
import { pathToFileURL } from 'node:url';
import { startApp, type App } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger, type Logger } from './log.js';
import { PermanentStartupError, StartupAborted } from './startup.js';
import { installTemporalRuntime } from './temporal.js';

export interface RunningService {
  app: App;
  /** Stops the service (idempotent). */
  stop(): Promise<void>;
}

/**
 * Starts the configured roles, waiting out dependencies that are down. Aborting `signal` gives start-up up with
 * StartupAborted.
 */
export async function runService(config: Config, logger: Logger, signal?: AbortSignal): Promise<RunningService> {
  const app = await startApp(config, { logger, signal });
  logger.info({ roles: config.FULFILMENT_ROLES }, 'service ready');
  return { app, stop: () => app.stop() };
}

/** Runs the service until SIGINT/SIGTERM; `afterStop` runs once it stopped (the dev launcher stops its stack). */
export async function serveUntilSignalled(opts: { config: Config; logger: Logger; afterStop?: () => Promise<void>; onReady?: (s: RunningService) => void }): Promise<void> {
  const { config, logger } = opts;
  const starting = new AbortController();
  let service: RunningService | undefined;
  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'stopping');
    starting.abort();
    await service?.stop();
    await opts.afterStop?.();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  try {
    service = await runService(config, logger, starting.signal);
  } catch (err) {
    if (err instanceof StartupAborted) return;
    throw err;
  }
  if (shuttingDown) return void (await service.stop());
  opts.onReady?.(service);
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  installTemporalRuntime(logger);
  await serveUntilSignalled({ config, logger });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof ConfigError || err instanceof PermanentStartupError ? err.message : ((err as Error).stack ?? String(err))}\n`);
    process.exit(1);
  });
}
