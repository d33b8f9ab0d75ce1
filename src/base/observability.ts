/**
 * The process's metrics registry and readiness, and the one HTTP server of /metrics, /livez and /readyz
 * (METRICS_PORT), started before start-up waits for anything so readiness can say what it is waiting for. The service
 * (src/service.ts) starts it before the app; an app started without one (tests, the demo) starts its own. The lag
 * exporter (src/roles/lag/exporter.ts) serves its own registry with the same server (serveMetrics).
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { Config } from './config.js';
import { Health } from './health.js';
import { createMetrics, type Metrics } from './metrics.js';

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

/**
 * Serves GET /metrics on `port` (loopback unless `host` says otherwise), and with `health` also GET /livez and
 * GET /readyz: JSON bodies, 200 when live/ready, 503 with each check and its reason when not.
 */
export async function serveMetrics(
  registry: Registry,
  port: number,
  host = '127.0.0.1',
  health?: Health,
): Promise<Server> {
  const json = (res: ServerResponse, ok: boolean, body: unknown) =>
    res
      .writeHead(ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' })
      .end(`${JSON.stringify(body)}\n`);
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/metrics') {
      registry.metrics().then(
        (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    } else if (health && path === '/livez') {
      const live = health.liveness();
      json(res, live.live, live);
    } else if (health && path === '/readyz') {
      health.readiness().then(
        (r) => json(res, r.ready, r),
        (err: unknown) => json(res, false, { ready: false, error: String(err) }),
      );
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
