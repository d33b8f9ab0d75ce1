/**
 * Composes the running service: the roles it runs — the worker (src/worker/role.ts), the bridge (src/bridge/role.ts),
 * each loaded only when run — their readiness, and one shutdown that stops them in order. The service, the demo and
 * the integration tests all start through here, so what is tested is what runs.
 */
import type { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import type { Bridge } from './bridge/bridge.js';
import type { BridgeRoleOptions } from './bridge/role.js';
import type { Config } from './config.js';
import { Health } from './health.js';
import type { Logger } from './log.js';
import { createMetrics, serveMetrics, type Metrics } from './metrics.js';
import { connectSharedClient, type RoleContext, type Stop } from './role.js';
import type { Db } from './db.js';
import { permanentTemporalError } from './temporal.js';
import { startTracing, type Tracing } from './tracing/index.js';

export interface AppOptions extends Omit<BridgeRoleOptions, 'workerConnection'> {
  logger: Logger;
  /** Run the worker, the bridge, or both (default: config.FULFILMENT_ROLES). */
  roles?: { worker?: boolean; bridge?: boolean };
  /** Serve /metrics on config.METRICS_PORT (default true when METRICS_PORT > 0). */
  serveMetrics?: boolean;
  /** Aborting it gives up start-up while a dependency is still down (StartupAborted). */
  signal?: AbortSignal;
  /** The registry and readiness to report to when the caller serves them itself (src/service.ts); then not served here. */
  observability?: { metrics: Metrics; health: Health };
}

export interface App {
  config: Config;
  metrics: Metrics;
  /** The process's shared Temporal client. */
  client: Client;
  /** The worker's PostgreSQL pool (worker role only). */
  db?: Db;
  worker?: Worker;
  bridge?: Bridge;
  /** Readiness of the roles this app runs (served as /readyz). */
  health: Health;
  tracing?: Tracing;
  /** Resolves (never rejects) once a role stopped for good on its own, with why: the process must then exit non-zero. */
  failed: Promise<Error>;
  /** What stop() has not finished stopping yet, in the order it stops them (empty before stop() and once done). */
  stillStopping(): string[];
  stop(): Promise<void>;
}

export async function startApp(config: Config, opts: AppOptions): Promise<App> {
  const { logger, signal } = opts;
  const runWorker = opts.roles?.worker ?? config.FULFILMENT_ROLES.includes('worker');
  const runBridge = opts.roles?.bridge ?? config.FULFILMENT_ROLES.includes('bridge');
  const metrics = opts.observability?.metrics ?? createMetrics({ defaultMetrics: opts.serveMetrics ?? false });
  const health = opts.observability?.health ?? new Health();
  // Served before anything is waited for: readiness says what start-up is waiting for.
  const server =
    !opts.observability && (opts.serveMetrics ?? true) && config.METRICS_PORT > 0
      ? await serveMetrics(metrics.registry, config.METRICS_PORT, config.METRICS_HOST, health)
      : undefined;
  // Off unless configured: then undefined, and nothing makes a span or registers anything.
  const tracing = await startTracing(config, logger);
  // An untrusted certificate, a refused client certificate or API key stops start-up at once (src/temporal.ts).
  const permanent = { permanent: (err: unknown) => permanentTemporalError(config, err) };
  const client = await connectSharedClient(config, logger, health, signal, permanent);
  const ctx: RoleContext = { config, logger, metrics, health, client, tracing, signal, permanent };

  const worker = runWorker
    ? await (await import('./worker/role.js')).startWorkerRole(ctx, { alone: !runBridge })
    : undefined;
  const bridge = runBridge
    ? await (
        await import('./bridge/role.js')
      ).startBridgeRole(ctx, { ...opts, workerConnection: worker?.connection, workerDb: worker?.db })
    : undefined;
  // The bridge stops first (nothing new reaches workflows while the worker drains), the tracing last (its last spans).
  const stops: Stop[] = [...(bridge?.stops ?? []), ...(worker?.stops ?? [])];
  if (server)
    stops.push({ name: 'metrics and health server', stop: () => new Promise((resolve) => server.close(resolve)) });
  stops.push({ name: 'Temporal client', stop: () => client.connection.close() });
  if (tracing) stops.push({ name: 'tracing (exporting the last spans)', stop: () => tracing.shutdown() });
  if (!opts.observability) health.started();

  let stopped: Promise<void> | undefined;
  let next = stops.length;
  return {
    config,
    metrics,
    client,
    db: worker?.db,
    worker: worker?.worker,
    bridge: bridge?.bridge,
    health,
    tracing,
    // A role failing while the app stops is part of stopping, not a failure.
    failed: Promise.race([worker?.failed, bridge?.failed].filter((f): f is Promise<Error> => f !== undefined)).then(
      (err) => (stopped ? new Promise<Error>(() => undefined) : err),
    ),
    stillStopping: () => (stopped === undefined ? [] : stops.slice(next).map((s) => s.name)),
    stop() {
      health.stopping('stopping');
      stopped ??= (async () => {
        for (next = 0; next < stops.length; next += 1) {
          await stops[next]!.stop().catch((err: unknown) =>
            logger.warn({ err, stopping: stops[next]!.name }, 'error while stopping'),
          );
        }
      })();
      return stopped;
    },
  };
}
