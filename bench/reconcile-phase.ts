/**
 * The bench's reconcile phase: what the continuous reconciliation (src/roles/worker/continuous-reconcile.ts) costs, in
 * one run, on one private orders topic (6 partitions, a status topic of its own) and the service as production runs it
 * (open-loop.ts's `startService`: both roles, eager start, every default but the one setting named below).
 *
 *   reconcile-pass  `--reconcile-orders` orders (default 1,000) produced at once and shipped by the service with
 *                   RECONCILE_INTERVAL=0, then one `reconcilePass` (every check) in this process over their window:
 *                   its wall time and this process's CPU time (process.cpuUsage: the pass runs alone here), the items
 *                   each check compared, the mismatches and what it could not see — per 1,000 orders;
 *   reconcile-off   the same service, orders at `--reconcile-rate` (default 35/s) for `--reconcile-seconds` (default
 *                   60): p50/p99 produce→shipped and CPU per order, as the open loop measures a rate;
 *   reconcile-on    a new service on the same topic with RECONCILE_INTERVAL=--reconcile-interval, warmed up, its first
 *                   pass (the whole RECONCILE_WINDOW: every order of the phase so far) complete, then the same rate for
 *                   the same time, meeting the passes after the first, each over what came since the last.
 *
 * Rules a reader must not break:
 * - ON and OFF differ in RECONCILE_INTERVAL only, run back to back for equal durations at the same rate, each after
 *   a warm-up, OFF first in odd reps and ON first in even ones (a stack that slows through a run must favour neither),
 *   so their ratio is the reconciliation's cost and nothing else;
 * - the pass reads every source as the worker's does (the runtime role, the brokers, visibility, the warehouse) and
 *   writes nothing; its window is the phase's own (settle 0: every order of it had shipped before the pass began).
 */
import { join } from 'node:path';
import { loadConfig } from '../src/base/config.js';
import { reconcilePass } from '../src/reconcile/pass.js';
import { readFileSync } from 'node:fs';
import { backlog, dropTopic, measured, privateTopic, produce, waitShipped, type Context, type Env } from './phases.js';
import type { PhaseResult } from './phases.js';
import { stackLogsDir as logsDir } from '../tools/stack/index.js';
import { WARMUP, oneRate, startService, type RateFigures, type Service } from './open-loop.js';

/**
 * RECONCILE_INTERVAL of the ON service by default: 10 s, so a 60 s measured window holds about six passes. Each pass
 * reads what came since the last (about as many orders as the bridge handed over meanwhile), but its fixed part
 * (three throwaway consumers, the per-tenant reads) is paid 30 times as often as at the default 5m: the ON figures
 * bound the default's cost from above. `--reconcile-interval 60s --reconcile-seconds 120` comes nearer it.
 */
export const RECONCILE_ON_INTERVAL = '10s';

/** The knobs of the phase (bench/main.ts's flags). */
export interface ReconcileOptions {
  orders: number;
  rate: number;
  seconds: number;
  /** RECONCILE_INTERVAL of the ON service, in seconds. */
  intervalSeconds: number;
}

export const RECONCILE_DEFAULTS: ReconcileOptions = {
  orders: 1_000,
  rate: 35,
  seconds: 60,
  intervalSeconds: Number.parseInt(RECONCILE_ON_INTERVAL, 10),
};

/** The phases `reconcile-pass`, `reconcile-off` and `reconcile-on`. */
export async function reconcileCost(
  ctx: Context,
  rep: number,
  opts: ReconcileOptions,
): Promise<Record<string, PhaseResult>> {
  const { topic, group, env } = await privateTopic(ctx, `reconcile-${rep}`, 6, { ownStatusTopic: true });
  const serviceEnv = (interval: string): Env => {
    const e: Env = {
      ...env,
      FULFILMENT_ROLES: 'worker,bridge',
      LOG_LEVEL: process.env.BENCH_SERVICE_LOG_LEVEL ?? 'info',
      TEMPORAL_TASK_QUEUE: `bench-${ctx.suffix}-reconcile-${rep}`,
      RECONCILE_INTERVAL: interval,
    };
    for (const k of ['BRIDGE_EAGER_START', 'ORDER_LINGER_SECONDS', 'LEDGER_PRUNE_INTERVAL']) delete e[k];
    return e;
  };
  const logOf = (name: string) => join(logsDir(), `bench-service-${ctx.suffix}-reconcile-${rep}-${name}.log`);
  const tenant = (name: string) => `b-${ctx.suffix}-reconcile-${rep}-${name}`;
  const out: Record<string, PhaseResult> = {};
  let service: Service | undefined;
  try {
    service = await startService(serviceEnv('0'), logOf('off'));
    ctx.say(`   the service, RECONCILE_INTERVAL=0: pid ${service.pid}`);
    out['reconcile-pass'] = await onePass(ctx, env, tenant('pass'), topic, opts.orders);
    // OFF first in odd reps, ON first in even ones: a stack that slows through a run favours neither.
    const measureOff = async (fresh: boolean) => {
      if (fresh) {
        await service?.stop();
        service = await startService(serviceEnv('0'), logOf('off-after-on'));
        await oneRate(ctx, service, topic, tenant('off-warmup'), WARMUP.rate, WARMUP.seconds, 'reconcile-off-warmup');
      }
      // Else the pass's orders warmed the service up.
      out['reconcile-off'] = await oneRate(
        ctx,
        service!,
        topic,
        tenant('off'),
        opts.rate,
        opts.seconds,
        'reconcile-off',
      );
    };
    const measureOn = async () => {
      await service?.stop();
      const interval = `${opts.intervalSeconds}s`;
      service = await startService(serviceEnv(interval), logOf('on'));
      ctx.say(`   the service, RECONCILE_INTERVAL=${interval}: pid ${service.pid}`);
      await oneRate(ctx, service, topic, tenant('on-warmup'), WARMUP.rate, WARMUP.seconds, 'reconcile-on-warmup');
      // The first pass after start reads the whole window (every order of the phase so far); the measured rate meets
      // the passes after it, each over what came since the last.
      await waitForPass(logOf('on'), opts.intervalSeconds);
      const passesBefore = passesIn(logOf('on'));
      const on = await oneRate(ctx, service, topic, tenant('on'), opts.rate, opts.seconds, 'reconcile-on');
      on.figures.passes = passesIn(logOf('on')) - passesBefore;
      on.figures.intervalSeconds = opts.intervalSeconds;
      on.figures.onFirst = rep % 2 === 0 ? 1 : 0;
      out['reconcile-on'] = on;
    };
    if (rep % 2 === 1) {
      await measureOff(false);
      await measureOn();
    } else {
      await measureOn();
      await measureOff(true);
    }
    const on = out['reconcile-on']!;
    for (const name of ['reconcile-off', 'reconcile-on'] as const) {
      const f = out[name]!.figures as RateFigures;
      ctx.say(
        `   ${name}: p50 ${f.p50.toFixed(0)} p99 ${f.p99.toFixed(0)} ms; service CPU ${(((out[name]!.cpu.service ?? 0) / f.orders) * 1000).toFixed(1)} ms/order${name === 'reconcile-on' ? `; ${on.figures.passes} passes` : ''}`,
      );
    }
    return out;
  } finally {
    await service?.stop();
    await dropTopic(ctx, topic, group, env.STATUS_TOPIC);
  }
}

/** Until the service's log says it completed a pass (at most five intervals). */
async function waitForPass(logFile: string, intervalSeconds: number): Promise<void> {
  const deadline = Date.now() + 5 * intervalSeconds * 1000;
  while (passesIn(logFile) === 0) {
    if (Date.now() > deadline) throw new Error(`no reconcile pass completed within five intervals: see ${logFile}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Passes the service's log says it completed (its `reconcile pass complete` lines). */
function passesIn(logFile: string): number {
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('reconcile pass complete')).length;
}

/** `n` orders produced at once and shipped, then one pass over their window, timed. */
async function onePass(ctx: Context, env: Env, tenant: string, topic: string, n: number): Promise<PhaseResult> {
  const since = new Date(Date.now() - 1_000);
  await produce(
    ctx,
    topic,
    backlog(tenant, n).map((e) => ({ key: e.orderId, value: JSON.stringify(e) })),
  );
  await waitShipped(ctx, tenant, n, 'reconcile-pass');
  const config = loadConfig(env);
  return measured(
    ctx,
    'reconcile-pass',
    () => ({}),
    async () => {
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      const report = await reconcilePass(
        { config, kafka: ctx.kafka, db: ctx.db, client: ctx.client },
        { since, until: new Date(), settleMs: 0 },
      );
      const passMs = performance.now() - t0;
      const used = process.cpuUsage(cpu);
      const passCpuMs = (used.user + used.system) / 1000;
      const figures: Record<string, number> = {
        orders: n,
        passMs,
        passCpuMs,
        msPer1000: (passMs * 1000) / n,
        cpuMsPer1000: (passCpuMs * 1000) / n,
        tenants: report.tenants.length,
        mismatches: report.results.reduce((s, r) => s + r.mismatches.length, 0),
        unseen: report.results.reduce((s, r) => s + r.unseen.length, 0),
      };
      for (const r of report.results) figures[`compared.${r.check}`] = r.compared;
      ctx.say(
        `   one pass over ${n} orders: ${passMs.toFixed(0)} ms, ${passCpuMs.toFixed(0)} ms CPU; compared ${report.results.map((r) => `${r.check} ${r.compared}`).join(', ')}; ${figures.mismatches} mismatch(es), ${figures.unseen} unseen`,
      );
      return figures;
    },
  );
}
