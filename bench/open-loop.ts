/**
 * The bench's open loop: what a user meets. The service as production runs it (`node dist/src/service.js`: worker,
 * bridge and status relay in one process, eager start, every default, its /metrics served), orders produced at a
 * steady rate — one every 1/rate s on the clock, whether or not the service keeps up — for `seconds` per rate, each
 * order timed from the moment the bench hands it to Kafka to the moment its row reads `shipped` (`shipped_at`, the
 * time of the transaction that marked it; one clock on one machine).
 *
 * Rates rise until one falls behind: its p99 above OPEN_P99_BOUND_MS, or its latency growing through the run (the
 * service keeping up only on average: GROWTH). The knee is the highest rate that did neither; the loop then runs
 * once more at 80 % of it. Per rate: p50/p90/p99/max, and each process's CPU per order (the service's own, Temporal's,
 * PostgreSQL's, Kafka's). The service has a status topic of its own, so its relay leads and publishes what it
 * writes, as a lone service does. Nothing asserted (a bench is not a test).
 */
import { createServer } from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Partitioners } from 'kafkajs';
import {
  dropTopic,
  measured,
  placement,
  privateTopic,
  sleep,
  type Context,
  type Env,
  type PhaseResult,
} from './phases.js';
import { percentile } from './stats.js';
import { stackLogsDir as logsDir } from '../tools/stack/index.js';

/** Rates tried, orders per second, in order; the loop stops at the first one past the knee. */
export const OPEN_RATES = [5, 10, 15, 20, 25, 30, 35, 40, 50, 60, 70, 80, 90, 100, 120, 140];
/** The p99 produce→shipped a rate must stay under to count as kept up with. */
export const OPEN_P99_BOUND_MS = 500;
/**
 * Latency grows through a run when the last third's p90 exceeds twice the first third's plus 50 ms: the service is
 * falling behind even where the whole run's p99 is still under the bound.
 */
export const GROWTH = { factor: 2, slackMs: 50 } as const;
/** The warm-up before the first rate (not counted). */
export const WARMUP = { rate: 10, seconds: 10 } as const;
/** Seconds the idle service is measured for. */
const IDLE_SECONDS = 15;
/** How long after the last order was produced a rate may take to ship every order before it counts as behind. */
const SETTLE_MS = 120_000;

/** Node flags of the service process, e.g. `--cpu-prof --cpu-prof-dir=prof` to profile it; none by default. */
export const SERVICE_NODE_FLAGS = (process.env.BENCH_SERVICE_NODE_FLAGS ?? '').split(' ').filter(Boolean);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Service {
  proc: ChildProcess;
  pid: number;
  stop(): Promise<void>;
}

/** `node dist/src/service.js` with `env`, its log lines to `logFile`; resolves once its /readyz answers 200. */
export async function startService(env: Env, logFile: string): Promise<Service> {
  const port = await freePort();
  const proc = spawn(process.execPath, [...SERVICE_NODE_FLAGS, 'dist/src/service.js'], {
    env: { ...env, METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = createWriteStream(logFile);
  proc.stdout!.pipe(log);
  proc.stderr!.pipe(log);
  let dead = false;
  const exited = new Promise<void>((resolve) => proc.on('exit', () => ((dead = true), resolve())));
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (dead) throw new Error(`the service (pid ${proc.pid}) exited before it was ready; its output is in ${logFile}`);
    if (Date.now() > deadline)
      throw new Error(`the service (pid ${proc.pid}) was not ready within 180 s; its output is in ${logFile}`);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    await sleep(200);
  }
  return {
    proc,
    pid: proc.pid!,
    async stop() {
      if (dead) return;
      proc.kill('SIGTERM');
      await Promise.race([exited, sleep(30_000)]);
      if (!dead) proc.kill('SIGKILL');
    },
  };
}

/** Milliseconds since the epoch each shipped order of `tenant` was recorded (created) and marked shipped, by order id. */
export async function shippedOrders(
  ctx: Context,
  tenant: string,
): Promise<Map<string, { created: number; shipped: number }>> {
  const c = await ctx.db.connect();
  try {
    await c.query('BEGIN');
    await c.query("SELECT set_config('app.tenant_id', $1, true)", [tenant]);
    const r = await c.query<{ order_id: string; created: string; shipped: string }>(
      `SELECT order_id, (extract(epoch FROM created_at) * 1000)::float8 AS created,
              (extract(epoch FROM shipped_at) * 1000)::float8 AS shipped
         FROM fulfilments WHERE status = 'shipped'`,
    );
    await c.query('COMMIT');
    return new Map(r.rows.map((row) => [row.order_id, { created: Number(row.created), shipped: Number(row.shipped) }]));
  } finally {
    c.release();
  }
}

/** Milliseconds since the epoch each order of `tenant` was marked shipped, by order id. */
export async function shippedTimes(ctx: Context, tenant: string): Promise<Map<string, number>> {
  return new Map([...(await shippedOrders(ctx, tenant))].map(([id, t]) => [id, t.shipped]));
}

/** One rate's figures (PhaseResult.figures of phase `open-<rate>`). */
export interface RateFigures extends Record<string, number> {
  rate: number;
  orders: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** p90 of the first and of the last third of the orders, in production order. */
  firstThirdP90: number;
  lastThirdP90: number;
  /** 1 when the rate kept up (p99 under the bound, latency not growing), else 0. */
  keptUp: number;
  /** The rate the bench really produced at (it can lag the asked one on a loaded machine). */
  producedPerSecond: number;
}

/** One rate through the running service: `rate` orders/s for `seconds`, then until every order shipped (or SETTLE_MS). */
export async function oneRate(
  ctx: Context,
  service: Service,
  topic: string,
  tenant: string,
  rate: number,
  seconds: number,
  phase: string,
  /** Filled with when each order's placement was produced (ms since the epoch), by order id. */
  produced?: Map<string, number>,
): Promise<PhaseResult> {
  const producer = ctx.kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  try {
    return await measured(
      ctx,
      phase,
      () => ({ service: service.pid }),
      async () => {
        const n = Math.max(1, Math.round(rate * seconds));
        const producedAt = new Array<number>(n);
        const ids = new Array<string>(n);
        const sends: Promise<unknown>[] = [];
        const start = Date.now();
        for (let i = 0; i < n; i += 1) {
          const due = start + (i * 1000) / rate;
          if (due > Date.now()) await sleep(due - Date.now());
          const e = placement(tenant, i);
          ids[i] = e.orderId;
          producedAt[i] = Date.now();
          // Not awaited one by one: a slow acknowledgement must not hold back the next order's arrival.
          sends.push(producer.send({ topic, acks: -1, messages: [{ key: e.orderId, value: JSON.stringify(e) }] }));
        }
        await Promise.all(sends);
        ids.forEach((id, i) => produced?.set(id, producedAt[i]!));
        const producedPerSecond = n / ((producedAt[n - 1]! - producedAt[0]! || 1) / 1000);
        let shipped = new Map<string, number>();
        const lastProduced = Date.now();
        let lastProgress = Date.now();
        while (Date.now() - lastProduced < SETTLE_MS) {
          shipped = await shippedTimes(ctx, tenant);
          if (shipped.size >= n) break;
          if (Date.now() - lastProgress > 10_000) {
            lastProgress = Date.now();
            ctx.progress(`${phase}: ${shipped.size}/${n} shipped`);
          }
          await sleep(250);
        }
        // An order not shipped within SETTLE_MS counts as infinitely late.
        const latency = ids.map((id, i) => (shipped.get(id) ?? Number.POSITIVE_INFINITY) - producedAt[i]!);
        const third = Math.max(1, Math.floor(n / 3));
        const sorted = [...latency].sort((a, b) => a - b);
        const firstThirdP90 = percentile(
          latency.slice(0, third).sort((a, b) => a - b),
          0.9,
        );
        const lastThirdP90 = percentile(
          latency.slice(n - third).sort((a, b) => a - b),
          0.9,
        );
        const p99 = percentile(sorted, 0.99);
        const grows = lastThirdP90 > GROWTH.factor * firstThirdP90 + GROWTH.slackMs;
        const figures: RateFigures = {
          rate,
          orders: n,
          p50: percentile(sorted, 0.5),
          p90: percentile(sorted, 0.9),
          p99,
          max: sorted[n - 1]!,
          firstThirdP90,
          lastThirdP90,
          keptUp: p99 <= OPEN_P99_BOUND_MS && !grows ? 1 : 0,
          producedPerSecond,
        };
        return figures;
      },
    );
  } finally {
    await producer.disconnect();
  }
}

/**
 * The open loop: one service process, `rates` in turn (each its own tenant) until one does not keep up, then 80 % of
 * the knee. Phases `open-<rate>` and `open-knee80`; the knee is the figure `knee` of every one of them.
 */
export async function openLoop(
  ctx: Context,
  rep: number,
  rates: readonly number[],
  seconds: number,
): Promise<Record<string, PhaseResult>> {
  // A status topic of its own: the relay's lead is per topic, and on the shared one the bench's worker child would
  // lead and publish this service's status events — work a lone production service does itself.
  const { topic, group, env } = await privateTopic(ctx, `open-${rep}`, 6, { ownStatusTopic: true });
  const logFile = join(logsDir(), `bench-service-${ctx.suffix}-${rep}.log`);
  // The service at its defaults: both roles, eager start, the stack's addresses, a task queue of its own.
  const serviceEnv: Env = {
    ...env,
    FULFILMENT_ROLES: 'worker,bridge',
    LOG_LEVEL: process.env.BENCH_SERVICE_LOG_LEVEL ?? 'info',
    TEMPORAL_TASK_QUEUE: `bench-${ctx.suffix}-open-${rep}`,
  };
  for (const k of ['BRIDGE_EAGER_START', 'ORDER_LINGER_SECONDS', 'LEDGER_PRUNE_INTERVAL']) delete serviceEnv[k];
  const service = await startService(serviceEnv, logFile);
  ctx.say(`   the service: pid ${service.pid}, log ${logFile}`);
  const out: Record<string, PhaseResult> = {};
  try {
    // Warm-up, not counted: the consumer group's first assignment, the first connections, the JIT's first passes.
    await oneRate(
      ctx,
      service,
      topic,
      `b-${ctx.suffix}-open-${rep}-warmup`,
      WARMUP.rate,
      WARMUP.seconds,
      'open-warmup',
    );
    // What the service spends doing nothing: its pollers (relay, resumer, pause book), timers, the Temporal core's own.
    out['open-idle'] = await measured(
      ctx,
      'open-idle',
      () => ({ service: service.pid }),
      async () => {
        await sleep(IDLE_SECONDS * 1000);
        return {};
      },
    );
    ctx.say(
      `   idle: the service ${(((out['open-idle'].cpu.service ?? 0) / out['open-idle'].wallSeconds) * 100).toFixed(1)} % of a core`,
    );
    let knee = 0;
    for (const rate of rates) {
      const phase = `open-${rate}`;
      const r = await oneRate(ctx, service, topic, `b-${ctx.suffix}-open-${rep}-${rate}`, rate, seconds, phase);
      out[phase] = r;
      const f = r.figures as RateFigures;
      ctx.say(
        `   ${rate}/s: p50 ${f.p50.toFixed(0)} p90 ${f.p90.toFixed(0)} p99 ${f.p99.toFixed(0)} max ${f.max.toFixed(0)} ms; service CPU ${(((r.cpu.service ?? 0) / f.orders) * 1000).toFixed(1)} ms/order; load ${r.load1After.toFixed(1)}`,
      );
      if (!f.keptUp) break;
      knee = rate;
    }
    if (knee > 0) {
      const rate = Math.round(knee * 0.8);
      const r = await oneRate(ctx, service, topic, `b-${ctx.suffix}-open-${rep}-knee80`, rate, seconds, 'open-knee80');
      out['open-knee80'] = r;
      const f = r.figures as RateFigures;
      ctx.say(`   80 % of the knee, ${rate}/s: p50 ${f.p50.toFixed(0)} p99 ${f.p99.toFixed(0)} ms`);
    }
    for (const r of Object.values(out)) r.figures.knee = knee;
    return out;
  } finally {
    await service.stop();
    await dropTopic(ctx, topic, group, env.STATUS_TOPIC);
  }
}
