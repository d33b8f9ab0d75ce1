/**
 * Composes the running service: the roles it runs — the worker (src/roles/worker/role.ts), the bridge
 * (src/roles/bridge/role.ts), each loaded only when run — their readiness, and one shutdown that stops them in order.
 * The service, the demo and the integration tests all start through here, so what is tested is what runs.
 */
import type { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import type { Bridge } from './roles/bridge/bridge.js';
import type { BridgeRoleOptions } from './roles/bridge/role.js';
import type { Config } from './base/config.js';
import type { Health } from './base/health.js';
import { Lifecycle } from './base/lifecycle.js';
import type { Logger } from './base/log.js';
import type { Metrics } from './base/metrics.js';
import { serveObservability, type Observability } from './base/observability.js';
import { connectSharedClient, type RoleContext } from './roles/role.js';
import type { Db } from './adapters/store/db.js';
import { permanentTemporalError } from './domain/temporal.js';
import { startTracing, type Tracing } from './adapters/tracing/index.js';

export interface AppOptions extends Omit<BridgeRoleOptions, 'workerConnection'> {
  logger: Logger;
  /** Run the worker, the bridge, or both (default: config.FULFILMENT_ROLES). */
  roles?: { worker?: boolean; bridge?: boolean };
  /**
   * Serve /metrics, /livez and /readyz on config.METRICS_PORT (default true; never when METRICS_PORT is 0); the
   * process metrics (CPU, memory, event loop) are collected only when served.
   */
  serveMetrics?: boolean;
  /** Aborting it gives up start-up while a dependency is still down (StartupAborted). */
  signal?: AbortSignal;
  /** The registry and readiness to report to when the caller serves them itself (src/service.ts); then not served here. */
  observability?: Pick<Observability, 'metrics' | 'health'>;
  /** The workflow code's entry point (default workflows/index.ts): a test runs a changed version of it as a new build. */
  workflowsPath?: string;
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
  const life = new Lifecycle(logger);
  const started = await life.startOrUndo(async () => {
    // Served before anything is waited for: readiness says what start-up is waiting for.
    const observed = opts.observability ?? (await serveOwnObservability(config, opts, life));
    const { metrics, health } = observed;
    // Off unless configured: then undefined, and nothing makes a span or registers anything. Stopped after everything
    // but the metrics server (its last spans are exported once the roles have stopped).
    const tracing = await startTracing(config, logger);
    if (tracing) life.defer('tracing (exporting the last spans)', () => tracing.shutdown());
    // An untrusted certificate, a refused client certificate or API key stops start-up at once
    // (src/domain/temporal.ts).
    const permanent = { permanent: (err: unknown) => permanentTemporalError(config, err) };
    const client = await connectSharedClient(config, logger, health, signal, permanent);
    life.defer('Temporal client', () => client.connection.close());
    const ctx: RoleContext = { config, logger, metrics, health, client, tracing, signal, permanent };
    // The worker starts first and the bridge beside it, so the bridge stops first: nothing new reaches workflows
    // while the worker drains.
    const worker = runWorker
      ? await (
          await import('./roles/worker/role.js')
        ).startWorkerRole(ctx, {
          alone: !runBridge,
          ...(opts.workflowsPath ? { workflowsPath: opts.workflowsPath } : {}),
        })
      : undefined;
    if (worker) life.include('worker role', worker.lifecycle);
    const bridge = runBridge
      ? await (
          await import('./roles/bridge/role.js')
        ).startBridgeRole(ctx, {
          ...opts,
          workerConnection: worker?.connection,
          workerDb: worker?.db,
          workerTakesNewRuns: worker?.takesNewRuns,
        })
      : undefined;
    if (bridge) life.include('bridge role', bridge.lifecycle);
    return { metrics, health, tracing, client, worker, bridge };
  });
  const { metrics, health, tracing, client, worker, bridge } = started;
  if (!opts.observability) health.started();

  let stopping = false;
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
      (err) => (stopping ? new Promise<Error>(() => undefined) : err),
    ),
    stillStopping: () => life.stillStopping(),
    stop() {
      stopping = true;
      health.stopping('stopping');
      return life.stop();
    },
  };
}

/** The app's own metrics, readiness and their server (when not handed one): stopped last, so probes answer to the end. */
async function serveOwnObservability(config: Config, opts: AppOptions, life: Lifecycle): Promise<Observability> {
  const observed = await serveObservability(config, { serve: opts.serveMetrics ?? true });
  life.defer('metrics and health server', () => observed.close());
  return observed;
}
