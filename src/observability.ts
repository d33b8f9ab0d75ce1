/**
 * The process's metrics registry and readiness, and the one HTTP server of /metrics, /livez and /readyz
 * (METRICS_PORT), started before start-up waits for anything so readiness can say what it is waiting for. The service
 * (src/service.ts) starts it before the app; an app started without one (tests, the demo) starts its own.
 */
import type { Config } from './config.js';
import { Health } from './health.js';
import { createMetrics, serveMetrics, type Metrics } from './metrics.js';

export interface Observability {
  metrics: Metrics;
  health: Health;
  /** Stops serving (idempotent); resolves at once when nothing was served. */
  close(): Promise<void>;
}

/**
 * A registry and readiness, served on METRICS_PORT unless `serve` is false or the port is 0. The process metrics
 * (CPU, memory, event loop) are collected only when served.
 */
export async function serveObservability(config: Config, opts: { serve?: boolean } = {}): Promise<Observability> {
  const served = (opts.serve ?? true) && config.METRICS_PORT > 0;
  const metrics = createMetrics({ defaultMetrics: served });
  const health = new Health();
  const server = served
    ? await serveMetrics(metrics.registry, config.METRICS_PORT, config.METRICS_HOST, health)
    : undefined;
  let closed: Promise<void> | undefined;
  return {
    metrics,
    health,
    close: () => (closed ??= new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()))),
  };
}
