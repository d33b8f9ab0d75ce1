/**
 * The service alone — what a container or any production launch runs: the roles in FULFILMENT_ROLES against the
 * configured Kafka, Temporal and PostgreSQL. It never starts a local dependency. Each role waits for what it needs when
 * that is down at start-up (src/base/startup.ts); the worker waits, too, until the schema is at the version its code
 * needs — it never migrates: `fulfilment provision` does, as the owner role. A start-up failure waiting cannot cure
 * (PermanentStartupError: e.g. DATABASE_URL connecting as a superuser or the tables' owner) exits 1 at once, with the
 * reason. /metrics, /livez and /readyz are served from the start. SIGINT/SIGTERM stop it within SHUTDOWN_DEADLINE_MS
 * (exit 0, or 2 past the deadline); a start-up given up by a signal exits 0; a role that stops for good (the Temporal
 * worker, the bridge's consumer) makes it stop the rest and exit 1.
 *
 *   node --import tsx src/service.ts
 */
import { pathToFileURL } from 'node:url';
import { startApp, type App } from './app.js';
import { ConfigError, loadConfig, type Config } from './base/config.js';
import { createLogger, type Logger } from './base/log.js';
import { serveObservability, type Observability } from './base/observability.js';
import { PermanentStartupError, StartupAborted } from './base/startup.js';
import { installTemporalRuntime } from './domain/temporal.js';

export interface RunningService {
  app: App;
  /** Stops the service (idempotent). */
  stop(): Promise<void>;
}

/** Exit codes of the service process (docs/operating.md "Health and lifecycle"). */
export const EXIT = {
  /** Stopped by SIGTERM/SIGINT within SHUTDOWN_DEADLINE_MS. */
  stopped: 0,
  /** Bad configuration, a start-up failure waiting cannot cure, or a role (worker, bridge) that stopped for good. */
  failed: 1,
  /** A shutdown that did not finish within SHUTDOWN_DEADLINE_MS. */
  deadline: 2,
} as const;

/**
 * Starts the configured roles, waiting out dependencies that are down. Aborting `signal` gives start-up up with
 * StartupAborted. /metrics, /livez and /readyz are served from the start (not ready until the roles run).
 */
export async function runService(
  config: Config,
  logger: Logger,
  signal?: AbortSignal,
  served?: Observability,
): Promise<RunningService> {
  const observed = served ?? (await serveObservability(config));
  const { health } = observed;
  try {
    const app = await startApp(config, { logger, signal, observability: observed });
    health.started();
    logger.info({ roles: config.FULFILMENT_ROLES }, 'service ready');
    return {
      app,
      async stop() {
        await app.stop();
        await observed.close();
      },
    };
  } catch (err) {
    if (!served) await observed.close();
    throw err;
  }
}

/**
 * Runs the service until SIGINT/SIGTERM, or until a role stops for good (exit 1); `afterStop` runs once it stopped
 * (the dev launcher stops its stack). Stopping takes at most SHUTDOWN_DEADLINE_MS: past it the process logs what
 * was still stopping and exits 2.
 */
export async function serveUntilSignalled(opts: {
  config: Config;
  logger: Logger;
  afterStop?: () => Promise<void>;
  onReady?: (s: RunningService) => void;
}): Promise<void> {
  const { config, logger } = opts;
  const starting = new AbortController();
  const observed = await serveObservability(config);
  let service: RunningService | undefined;
  let shuttingDown = false;
  const shutdown = async (why: { signal: string } | { failure: Error }) => {
    if (shuttingDown) return;
    shuttingDown = true;
    const code = 'signal' in why ? EXIT.stopped : EXIT.failed;
    observed.health.stopping('signal' in why ? `${why.signal} received` : why.failure.message);
    if ('signal' in why) logger.info({ signal: why.signal, deadlineMs: config.SHUTDOWN_DEADLINE_MS }, 'stopping');
    else
      logger.fatal(
        { err: why.failure.message, deadlineMs: config.SHUTDOWN_DEADLINE_MS },
        'a role stopped for good; stopping the rest and exiting non-zero',
      );
    const deadline = setTimeout(() => {
      const stillStopping = service?.app.stillStopping() ?? [];
      logger.fatal(
        { deadlineMs: config.SHUTDOWN_DEADLINE_MS, stillStopping },
        `shutdown deadline of ${config.SHUTDOWN_DEADLINE_MS} ms passed; still stopping: ${stillStopping.join(', ') || 'nothing'}`,
      );
      process.exit(EXIT.deadline);
    }, config.SHUTDOWN_DEADLINE_MS);
    starting.abort();
    await (service?.stop() ?? observed.close());
    // The deadline bounds the service's own shutdown; what the dev launcher does afterwards (stopping the local
    // stack it started) is not cut short by it.
    clearTimeout(deadline);
    await opts.afterStop?.();
    logger.info({ exitCode: code }, 'stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown({ signal: 'SIGINT' }));
  process.on('SIGTERM', () => void shutdown({ signal: 'SIGTERM' }));
  try {
    service = await runService(config, logger, starting.signal, observed);
  } catch (err) {
    if (err instanceof StartupAborted) return;
    await observed.close();
    throw err;
  }
  if (shuttingDown) return void (await service.stop());
  void service.app.failed.then((failure) => shutdown({ failure }));
  opts.onReady?.(service);
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL, undefined, config.LOG_FORMAT);
  // The SDK's runtime routes the worker's own logs; a bridge-only process has no worker and never loads it.
  if (config.FULFILMENT_ROLES.includes('worker')) await installTemporalRuntime(logger);
  await serveUntilSignalled({ config, logger });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(
      `${err instanceof ConfigError || err instanceof PermanentStartupError ? err.message : ((err as Error).stack ?? String(err))}\n`,
    );
    process.exit(1);
  });
}
