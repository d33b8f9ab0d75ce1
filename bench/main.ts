/**
 * `npm run bench` — every performance figure of the service side by side, in one run on one stack, as ratios with
 * the raw figures behind them. Per Temporal (`--temporal`), per repetition (`--reps`), on `--orders` distinct orders:
 *
 *   bare    the bridge's signal-with-start with no worker polling (what a bare start costs Temporal)
 *   open    the service as production runs it (dist/src/service.js, both roles, eager start, defaults), orders produced
 *           at steady rates (`--rates`, `--rate-seconds` each) until one falls behind: produce→shipped p50/p90/p99/max
 *           per rate, the knee, 80 % of it, CPU per order per process (bench/open-loop.ts). What users meet.
 *   raw     the bridge's own signal-with-start call from a loop at the bridge's effective concurrency, worker running
 *   drain6  one bridge child drains a pre-loaded backlog on 6 partitions (bridge and worker in separate processes, no
 *           eager start: a backlog's shape, not a steady arrival's): until committed (delivery), until shipped (end to end)
 *   drain1  the same on 1 partition
 *   dup     the 6-partition backlog with 10 % duplicate records
 *   life    the 6-partition backlog until every order's run has closed (life-phases.ts), at the default linger
 *   linger  the same with a 1 s linger
 *   eager   the life phase in one process with both roles, runs started eagerly on the worker's connection
 *   late    the eager shape's orders shipped and closed, then a late cancellation of each (recorded through the store)
 *   burst   a retry storm of 6,000 events on one order, then other orders on its partition and the others
 *   cache   1,000 runs left open in the worker's cache: its RSS per cached run
 *   plain   a plain transactional kafkajs consumer on the same backlog (the "obvious build")
 *   outage  (first rep only) one process with both roles at the defaults, orders at 5/s, the warehouse down for
 *           `--outage` seconds (default 240: longer than an order's whole retry budget of about 3 minutes): orders the
 *           outage held as failed, requests/s the warehouse received while down, recovery time and its peak rate
 *   failover (first rep only; on the stack's three-node Kafka, STACK_KAFKA=cluster, else "not run") one process with
 *           both roles at the defaults, orders at 10/s on 6 partitions with 3 replicas, the leader of most of them
 *           SIGKILLed: produce→shipped p50/p99 before, around and after it, the stall, the time to catch up
 *           (bench/failover-phase.ts)
 *   reconcile the continuous reconciliation's cost (bench/reconcile-phase.ts): one pass over `--reconcile-orders`
 *           shipped orders (wall and CPU ms per 1,000), then the service at `--reconcile-rate` orders/s for
 *           `--reconcile-seconds` with it off and on (RECONCILE_INTERVAL `--reconcile-interval` seconds): p50/p99
 *           produce→shipped and CPU per order, ON ÷ OFF
 *   memory  (`--memory N`, once per Temporal) one bridge child over an N-record backlog, peak RSS
 *
 * with CPU per process (Temporal server, Kafka, PostgreSQL, worker, bridge, warehouse, the bench) and the 1-minute
 * load for each phase. Prints a table (or Markdown, `--markdown`) and writes JSON (`--json path`).
 *
 *   npm run bench -- [--orders 3000] [--reps 2] [--burst 6000] [--cache 1000] [--outage 240] [--rates 5,10,15,…] [--rate-seconds 30] [--quiet-wait 120] [--reconcile-orders 1000] [--reconcile-rate 35] [--reconcile-seconds 60] [--reconcile-interval 10] [--fresh-temporal] [--temporal current|dev|server|dev,server] [--memory 100000]
 *                    [--phases bare,open,raw,drain6,drain1,dup,life,linger,eager,late,burst,cache,plain,outage,failover,reconcile|none] [--json out.json] [--markdown]
 *   npm run bench -- --from-json out.json [--markdown]     prints the tables of an earlier run again, runs nothing
 *
 * `--temporal dev,server` brings the stack's Temporal up as each in turn (STACK_TEMPORAL, same ports) and runs
 * every phase on it; `current` (the default) uses whatever the stack runs. `--fresh-temporal` empties the store of the
 * stack's Temporal first (every workflow in it is lost): a store grown by earlier runs is slower, so figures of two runs
 * compare only from the same start. Run inside the stack's network.
 */
import { cpus } from 'node:os';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createKafka } from '../src/adapters/kafka/client.js';
import { loadConfig } from '../src/base/config.js';
import { createLogger } from '../src/base/log.js';
import { provision } from '../src/roles/provision/index.js';
import { connectClient } from '../src/domain/temporal.js';
import { bridgeConcurrency } from '../src/roles/bridge/bridge.js';
import { stackKafkaEnv, stackResetTemporal, stackStatus, stackUp } from '../tools/stack/index.js';
import {
  bareStarts,
  bridgeDrain,
  dropPlainSchema,
  memoryRun,
  newSuffix,
  plainConsumer,
  quietTemporal,
  rawLoop,
  runtimeConnection,
  startChild,
  type Context,
  type Env,
  type PhaseResult,
} from './phases.js';
import { BURST_EVENTS, CACHE_RUNS, burst, cachedRuns, lateEvents, lifeLinger, wholeLife } from './life-phases.js';
import { OPEN_RATES, openLoop } from './open-loop.js';
import { warehouseOutage } from './outage-phase.js';
import { clusterRuns, kafkaFailover } from './failover-phase.js';
import { RECONCILE_DEFAULTS, reconcileCost } from './reconcile-phase.js';
import { FAIR_BURST, fairness } from './fairness-phase.js';
import { load1 } from './procs.js';
import type { KindRun } from './kind-run.js';
import { render } from './report.js';

const PHASES = [
  'bare',
  'open',
  'raw',
  'drain6',
  'drain1',
  'dup',
  'life',
  'linger',
  'eager',
  'late',
  'burst',
  'cache',
  'plain',
  'outage',
  'failover',
  'reconcile',
  'fairness',
] as const;

const { values: args } = parseArgs({
  options: {
    orders: { type: 'string', default: '3000' },
    reps: { type: 'string', default: '2' },
    temporal: { type: 'string', default: 'current' },
    memory: { type: 'string' },
    burst: { type: 'string', default: String(BURST_EVENTS) },
    cache: { type: 'string', default: String(CACHE_RUNS) },
    outage: { type: 'string', default: '240' },
    rates: { type: 'string', default: OPEN_RATES.join(',') },
    'rate-seconds': { type: 'string', default: '30' },
    'quiet-wait': { type: 'string', default: '120' },
    'reconcile-orders': { type: 'string', default: String(RECONCILE_DEFAULTS.orders) },
    'reconcile-rate': { type: 'string', default: String(RECONCILE_DEFAULTS.rate) },
    'reconcile-seconds': { type: 'string', default: String(RECONCILE_DEFAULTS.seconds) },
    'reconcile-interval': { type: 'string', default: String(RECONCILE_DEFAULTS.intervalSeconds) },
    'fair-burst': { type: 'string', default: String(FAIR_BURST) },
    'fair-quiet-seconds': { type: 'string', default: '30' },
    'fresh-temporal': { type: 'boolean', default: false },
    phases: { type: 'string', default: PHASES.join(',') },
    json: { type: 'string' },
    markdown: { type: 'boolean', default: false },
    'from-json': { type: 'string' },
  },
});

function wholeNumber(name: string, text: string | undefined, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min)
    throw new Error(`--${name} must be a whole number ≥ ${min}, got ${JSON.stringify(text)}`);
  return n;
}
const ORDERS = wholeNumber('orders', args.orders, 10);
const REPS = wholeNumber('reps', args.reps, 1);
const BURST = wholeNumber('burst', args.burst, 10);
const CACHE = wholeNumber('cache', args.cache, 1);
/** Seconds the outage phase holds the warehouse down. */
const OUTAGE = wholeNumber('outage', args.outage, 1);
/** Longest wait before a phase for the Temporal server to go idle, seconds (0: none). */
const QUIET_WAIT = wholeNumber('quiet-wait', args['quiet-wait'], 0);
/** Other orders of the burst phase: as many as --orders, at most 600, a multiple of the 6 partitions. */
const BURST_OTHERS = 6 * Math.ceil(Math.min(600, ORDERS) / 6);
/** The open loop's rates (orders/s, rising) and how long each runs. */
const RATES = args.rates.split(',').map((r) => wholeNumber('rates', r.trim(), 1));
const RATE_SECONDS = wholeNumber('rate-seconds', args['rate-seconds'], 5);
/** The reconcile phase: orders one pass reads, the live rate and how long ON and OFF each run. */
const RECONCILE = {
  orders: wholeNumber('reconcile-orders', args['reconcile-orders'], 10),
  rate: wholeNumber('reconcile-rate', args['reconcile-rate'], 1),
  seconds: wholeNumber('reconcile-seconds', args['reconcile-seconds'], 5),
  intervalSeconds: wholeNumber('reconcile-interval', args['reconcile-interval'], 1),
};
const MEMORY = args.memory === undefined ? undefined : wholeNumber('memory', args.memory, 100);
const kinds = args.temporal.split(',').map((k) => k.trim());
for (const k of kinds)
  if (!['current', 'dev', 'server'].includes(k))
    throw new Error(`--temporal takes current, dev or server (comma-separated), got ${JSON.stringify(k)}`);
if (kinds.includes('current') && kinds.length > 1)
  throw new Error('--temporal current runs on the stack as it is: give it alone, or name dev and/or server');
const phases = args.phases === 'none' ? [] : args.phases.split(',').map((p) => p.trim());
for (const p of phases)
  if (!(PHASES as readonly string[]).includes(p))
    throw new Error(`--phases takes ${PHASES.join(', ')}, got ${JSON.stringify(p)}`);

const say = (line: string) => process.stderr.write(`${line}\n`);
const progress = (line: string) => process.stderr.write(`  … ${line}\n`);

function baseEnv(suffix: string): Env {
  return {
    ...Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
    // STACK_KAFKA=cluster: the bench and its children bootstrap from every node (the failover phase kills one).
    ...stackKafkaEnv(),
    DLQ_TOPIC: `bench.dlq.${suffix}`,
    TEMPORAL_TASK_QUEUE: `bench-${suffix}`,
    METRICS_PORT: '0',
    // The bench's worker runs on a task queue of its own: it must not point the shared retention schedule at it.
    LEDGER_PRUNE_INTERVAL: '0',
  };
}

async function runKind(kind: string): Promise<KindRun> {
  if (kind !== 'current') process.env.STACK_TEMPORAL = kind;
  if (args['fresh-temporal']) {
    say(`\n== emptying the store of the stack's Temporal (--fresh-temporal)`);
    await stackResetTemporal();
  }
  if (kind !== 'current' || args['fresh-temporal']) {
    say(`\n== bringing the stack's Temporal up${kind === 'current' ? '' : ` as STACK_TEMPORAL=${kind}`}`);
    await stackUp();
  }
  if (phases.includes('failover') && clusterRuns()) {
    say(`\n== bringing the stack's Kafka up as the three-node cluster (STACK_KAFKA=cluster) for the failover phase`);
    await stackUp({ services: ['kafka'] });
  }
  const stack = await stackStatus();
  const runs = stack.temporalRuns;
  const label = kind === 'current' ? stack.temporalKind : kind;
  const suffix = newSuffix();
  const env = baseEnv(suffix);
  const config = loadConfig(env);
  const logger = createLogger('warn');
  const kafka = createKafka(config, logger, { clientId: `bench-${suffix}` });
  const admin = kafka.admin();
  await admin.connect();
  await provision(config, createLogger('fatal'), ['kafka']);
  const client = await connectClient(config);
  const db = new pg.Pool({ ...runtimeConnection(config), max: 2 });
  db.on('error', () => undefined);
  const pid = (s: keyof typeof stack.services) => stack.services[s].pid;
  const ctx: Context = {
    env,
    config,
    logger,
    kafka,
    admin,
    client,
    db,
    stackPids: {
      temporal: pid('temporal'),
      kafka: pid('kafka'),
      postgres: pid('postgres'),
      warehouse: pid('warehouse'),
    },
    suffix,
    say,
    progress,
  };
  const concurrency = bridgeConcurrency(config);
  say(
    `== ${label}: ${runs}; ${ORDERS} orders × ${REPS} reps; raw loop at ${concurrency} in flight (the bridge's on ${config.ORDERS_TOPIC_PARTITIONS} partitions)`,
  );
  const run: KindRun = { kind: label, runs, concurrency, reps: [] };
  try {
    ctx.worker = await startChild('worker', env);
    for (let rep = 1; rep <= REPS; rep += 1) {
      const results: Record<string, PhaseResult> = {};
      const step = async (name: string, fn: () => Promise<PhaseResult>) => {
        if (!phases.includes(name)) return;
        const waited = await quietTemporal(ctx, 0.15, QUIET_WAIT * 1000);
        say(
          `-- ${label} rep ${rep}/${REPS}: ${name} (load ${load1().toFixed(1)}; waited ${waited.toFixed(0)} s for an idle Temporal)`,
        );
        results[name] = await fn();
        const f = results[name].figures;
        say(
          `   ${Object.entries(f)
            .map(([k, v]) => `${k} ${Number.isInteger(v) ? v : v.toFixed(2)}`)
            .join(', ')}; ${results[name].wallSeconds.toFixed(1)} s`,
        );
      };
      await step('bare', () => bareStarts(ctx, rep, ORDERS, concurrency));
      if (phases.includes('open')) {
        const waited = await quietTemporal(ctx, 0.15, QUIET_WAIT * 1000);
        say(
          `-- ${label} rep ${rep}/${REPS}: open loop at ${RATES.join(', ')} orders/s, ${RATE_SECONDS} s each, until one falls behind (load ${load1().toFixed(1)}; waited ${waited.toFixed(0)} s for an idle Temporal)`,
        );
        Object.assign(results, await openLoop(ctx, rep, RATES, RATE_SECONDS));
      }
      await step('raw', () => rawLoop(ctx, rep, ORDERS, concurrency));
      await step('drain6', () => bridgeDrain(ctx, 'drain6', rep, ORDERS, 6));
      await step('drain1', () => bridgeDrain(ctx, 'drain1', rep, ORDERS, 1));
      await step('dup', () => bridgeDrain(ctx, 'dup', rep, ORDERS, 6, Math.round(ORDERS / 10)));
      await step('life', () => wholeLife(ctx, 'life', rep, ORDERS, lifeLinger(ctx)));
      await step('linger', () => wholeLife(ctx, 'linger', rep, ORDERS, 1));
      await step('eager', () => wholeLife(ctx, 'eager', rep, ORDERS, lifeLinger(ctx), { eager: true }));
      await step('late', () => lateEvents(ctx, rep, ORDERS));
      await step('burst', () => burst(ctx, rep, BURST, BURST_OTHERS));
      await step('cache', () => cachedRuns(ctx, rep, CACHE));
      await step('plain', () => plainConsumer(ctx, rep, ORDERS));
      if (rep === 1) await step('outage', () => warehouseOutage(ctx, rep, OUTAGE));
      if (rep === 1 && clusterRuns()) await step('failover', () => kafkaFailover(ctx, rep));
      else if (rep === 1 && phases.includes('failover'))
        say(`-- ${label}: failover not run: it needs the stack's three-node Kafka (STACK_KAFKA=cluster)`);
      if (phases.includes('reconcile')) {
        const waited = await quietTemporal(ctx, 0.15, QUIET_WAIT * 1000);
        say(
          `-- ${label} rep ${rep}/${REPS}: reconcile: one pass over ${RECONCILE.orders} orders, then ${RECONCILE.rate} orders/s for ${RECONCILE.seconds} s with RECONCILE_INTERVAL=0 and =${RECONCILE.intervalSeconds}s (load ${load1().toFixed(1)}; waited ${waited.toFixed(0)} s for an idle Temporal)`,
        );
        Object.assign(results, await reconcileCost(ctx, rep, RECONCILE));
      }
      if (phases.includes('fairness')) {
        const burstSize = wholeNumber('fair-burst', args['fair-burst'], 1);
        const waited = await quietTemporal(ctx, 0.15, QUIET_WAIT * 1000);
        say(
          `-- ${label} rep ${rep}/${REPS}: fairness, a quiet tenant alone and beside a ${burstSize}-order burst (load ${load1().toFixed(1)}; waited ${waited.toFixed(0)} s for an idle Temporal)`,
        );
        Object.assign(
          results,
          await fairness(ctx, rep, burstSize, wholeNumber('fair-quiet-seconds', args['fair-quiet-seconds'], 1)),
        );
      }
      run.reps.push(results);
    }
    if (MEMORY !== undefined) {
      say(`-- ${label}: memory, ${MEMORY} records (load ${load1().toFixed(1)})`);
      run.memory = await memoryRun(ctx, MEMORY);
    }
  } finally {
    await ctx.worker?.stop();
    await dropPlainSchema(config).catch(() => undefined);
    await admin.deleteTopics({ topics: [config.DLQ_TOPIC] }).catch(() => undefined);
    await admin.disconnect();
    await client.connection.close();
    await db.end();
  }
  return run;
}

if (args['from-json']) {
  const saved = JSON.parse(readFileSync(args['from-json'], 'utf8')) as { machine: string; runs: KindRun[] };
  process.stdout.write(`${render(saved.runs, { markdown: args.markdown, machine: saved.machine })}\n`);
  process.exit(0);
}
const startedAt = new Date();
const runs: KindRun[] = [];
for (const kind of kinds) runs.push(await runKind(kind));
const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}, Node ${process.version}; ${ORDERS} orders, ${REPS} reps; 1-minute load ${load1().toFixed(1)} at the end; ${startedAt.toISOString()}`;
process.stdout.write(`${render(runs, { markdown: args.markdown, machine })}\n`);
if (args.json) {
  writeFileSync(
    args.json,
    `${JSON.stringify({ startedAt, machine, orders: ORDERS, reps: REPS, memory: MEMORY, runs }, null, 2)}\n`,
  );
  say(`wrote ${args.json}`);
}
