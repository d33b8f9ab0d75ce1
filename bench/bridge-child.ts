/**
 * A process under measurement (bench/main.ts starts it): by default one bridge-only instance with the environment
 * it was given; `BENCH_ROLES=worker` makes it a worker-only one, `both` one process with both roles. Every 250 ms it prints one JSON line with its
 * memory and how many records it has handled, so the parent can follow heap as well as RSS (which it also reads
 * from /proc) and its CPU (from /proc as well) apart from the bench's own.
 */
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/base/config.js';
import { createLogger } from '../src/base/log.js';
import { installTemporalRuntime } from '../src/domain/temporal.js';

const logger = createLogger(process.env.BENCH_LOG_LEVEL ?? 'warn');
// As the service does: the process's SIGTERM handler below stops the roles in order, not the SDK's own.
if (['worker', 'both'].includes(process.env.BENCH_ROLES ?? '')) await installTemporalRuntime(logger);
const app = await startApp(loadConfig(), {
  logger,
  roles: {
    worker: ['worker', 'both'].includes(process.env.BENCH_ROLES ?? ''),
    bridge: process.env.BENCH_ROLES !== 'worker',
  },
  serveMetrics: false,
});

async function handled(): Promise<number> {
  const metric = app.metrics.registry.getSingleMetric('fulfilment_bridge_records_total');
  const values = metric ? (await metric.get()).values : [];
  return values
    .filter((v) => ['accepted', 'duplicate', 'stale'].includes(String(v.labels.outcome)))
    .reduce((sum, v) => sum + v.value, 0);
}

const report = async () => {
  const m = process.memoryUsage();
  process.stdout.write(
    `${JSON.stringify({ t: Date.now(), handled: await handled(), rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external })}\n`,
  );
};
const timer = setInterval(() => void report(), 250);
process.on('SIGTERM', () => {
  clearInterval(timer);
  void report()
    .then(() => app.stop())
    .then(() => process.exit(0));
});
await report();
