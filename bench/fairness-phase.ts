/**
 * Tenants' shares end to end (the bridge's shares and read-ahead, Temporal's fairness keys: docs/how-it-works.md): the
 * open loop's service (open-loop.ts) at its defaults, on a topic of its own with 6 partitions.
 *
 *   fair-quiet-alone   a quiet tenant's orders at 5/s for `quietSeconds` (30), nobody else: produce→shipped p50/p99
 *   fair-burst-alone   another tenant's burst (`--fair-burst`, default 6,000 placements) produced as fast as Kafka
 *                      takes it: its drain, the first record produced → its last order shipped
 *   fair-beside        a burst of the same size and, from the moment it starts, the quiet tenant's 5/s for as long as
 *                      the burst took alone: the quiet tenant's p50/p99 beside it, and the burst's drain
 *
 * What users meet: the quiet p99 beside the burst against alone (the aim: within 2×, under 1 s), and the burst's drain
 * beside the quiet tenant against alone (the aim: within 1.1×). Nothing asserted (a bench is not a test).
 *
 * Where the quiet tenant's time goes, per order, in three stages (each a p50 and p99 in the quiet phases' figures):
 *   handOver   produced → the bridge's first "delivering event to order workflow" line for it (read, read-ahead, lane,
 *              the tenant's share of the deliveries)
 *   record     that line → the row's created_at (Temporal's start or signal, the dispatch of the workflow task, the
 *              worker's slot, the placement recorded by the quick path)
 *   ship       created_at → shipped_at (the warehouse's slot and call, the shipment recorded)
 */
import { readFileSync } from 'node:fs';
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
import { oneRate, shippedOrders, shippedTimes, startService, WARMUP } from './open-loop.js';
import { percentile } from './stats.js';
import { stackLogsDir as logsDir } from '../tools/stack/index.js';

export const FAIR_BURST = 6000;
const QUIET_RATE = 5;
/** Longest a burst may take to ship before the phase gives up on it. */
const DRAIN_LIMIT_MS = 30 * 60_000;

/** `count` placements of `tenant` produced as fast as Kafka takes them; resolves when all shipped, with the drain. */
async function burstDrain(ctx: Context, topic: string, tenant: string, count: number, phase: string) {
  const producer = ctx.kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  const start = Date.now();
  try {
    for (let i = 0; i < count; i += 500) {
      const messages = Array.from({ length: Math.min(500, count - i) }, (_, j) => {
        const e = placement(tenant, i + j);
        return { key: e.orderId, value: JSON.stringify(e) };
      });
      await producer.send({ topic, acks: -1, messages });
    }
  } finally {
    await producer.disconnect();
  }
  const produced = Date.now();
  let lastProgress = Date.now();
  for (;;) {
    const shipped = await shippedTimes(ctx, tenant);
    if (shipped.size >= count) return { drainMs: Math.max(...shipped.values()) - start, produceMs: produced - start };
    if (Date.now() - start > DRAIN_LIMIT_MS) return { drainMs: Number.POSITIVE_INFINITY, produceMs: produced - start };
    if (Date.now() - lastProgress > 15_000) {
      lastProgress = Date.now();
      ctx.progress(`${phase}: ${shipped.size}/${count} of the burst shipped`);
    }
    await sleep(500);
  }
}

const STAGES = ['handOver', 'record', 'ship'] as const;

/** When the bridge first logged delivering each order of `tenant` (ms since the epoch), by order id. */
function deliveringTimes(logFile: string, tenant: string): Map<string, number> {
  const times = new Map<string, number>();
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('delivering event to order workflow') || !line.includes(tenant)) continue;
    try {
      const entry = JSON.parse(line) as { time?: number; tenantId?: string; orderId?: string };
      if (entry.tenantId === tenant && entry.orderId && entry.time && !times.has(entry.orderId))
        times.set(entry.orderId, entry.time);
    } catch {
      // A line cut by the log's rotation or a write in progress: not an order's.
    }
  }
  return times;
}

/** The p50 and p99 of each stage of the quiet tenant's orders (STAGES), added to the phase's figures. */
async function addStages(
  ctx: Context,
  result: PhaseResult,
  tenant: string,
  produced: Map<string, number>,
  logFile: string,
): Promise<void> {
  const delivering = deliveringTimes(logFile, tenant);
  const stored = await shippedOrders(ctx, tenant);
  const spans: Record<(typeof STAGES)[number], number[]> = { handOver: [], record: [], ship: [] };
  for (const [id, at] of produced) {
    const d = delivering.get(id);
    const s = stored.get(id);
    if (d === undefined || s === undefined) continue;
    spans.handOver.push(d - at);
    spans.record.push(s.created - d);
    spans.ship.push(s.shipped - s.created);
  }
  for (const st of STAGES) {
    const sorted = spans[st].sort((a, b) => a - b);
    result.figures[`${st}P50`] = percentile(sorted, 0.5);
    result.figures[`${st}P99`] = percentile(sorted, 0.99);
  }
}

export async function fairness(
  ctx: Context,
  rep: number,
  burst: number,
  quietSeconds: number,
): Promise<Record<string, PhaseResult>> {
  const { topic, group, env } = await privateTopic(ctx, `fair-${rep}`, 6, { ownStatusTopic: true });
  const logFile = join(logsDir(), `bench-service-${ctx.suffix}-fair-${rep}.log`);
  const serviceEnv: Env = {
    ...env,
    FULFILMENT_ROLES: 'worker,bridge',
    LOG_LEVEL: process.env.BENCH_SERVICE_LOG_LEVEL ?? 'info',
    TEMPORAL_TASK_QUEUE: `bench-${ctx.suffix}-fair-${rep}`,
  };
  for (const k of ['BRIDGE_EAGER_START', 'ORDER_LINGER_SECONDS', 'LEDGER_PRUNE_INTERVAL']) delete serviceEnv[k];
  const service = await startService(serviceEnv, logFile);
  const tenant = (what: string) => `b-${ctx.suffix}-fair-${rep}-${what}`;
  const out: Record<string, PhaseResult> = {};
  try {
    await oneRate(ctx, service, topic, tenant('warmup'), WARMUP.rate, WARMUP.seconds, 'fair-warmup');
    const producedAlone = new Map<string, number>();
    out['fair-quiet-alone'] = await oneRate(
      ctx,
      service,
      topic,
      tenant('quiet-alone'),
      QUIET_RATE,
      quietSeconds,
      'fair-quiet-alone',
      producedAlone,
    );
    await addStages(ctx, out['fair-quiet-alone'], tenant('quiet-alone'), producedAlone, logFile);
    out['fair-burst-alone'] = await measured(
      ctx,
      'fair-burst-alone',
      () => ({ service: service.pid }),
      async () => {
        const d = await burstDrain(ctx, topic, tenant('burst-alone'), burst, 'fair-burst-alone');
        return { orders: burst, drainSeconds: d.drainMs / 1000, produceSeconds: d.produceMs / 1000 };
      },
    );
    const aloneSeconds = out['fair-burst-alone'].figures.drainSeconds!;
    const seconds = Number.isFinite(aloneSeconds) ? Math.max(quietSeconds, Math.round(aloneSeconds)) : quietSeconds;
    let drain: { drainMs: number; produceMs: number } | undefined;
    const beside = measured(
      ctx,
      'fair-beside-burst',
      () => ({ service: service.pid }),
      async () => {
        drain = await burstDrain(ctx, topic, tenant('burst-beside'), burst, 'fair-beside');
        return { orders: burst, drainSeconds: drain.drainMs / 1000 };
      },
    );
    const producedBeside = new Map<string, number>();
    out['fair-beside'] = await oneRate(
      ctx,
      service,
      topic,
      tenant('quiet-beside'),
      QUIET_RATE,
      seconds,
      'fair-beside',
      producedBeside,
    );
    await addStages(ctx, out['fair-beside'], tenant('quiet-beside'), producedBeside, logFile);
    out['fair-beside-burst'] = await beside;
    const f = (p: string, k: string) => out[p]!.figures[k]!;
    ctx.say(
      `   quiet ${QUIET_RATE}/s alone p50/p99 ${f('fair-quiet-alone', 'p50').toFixed(0)}/${f('fair-quiet-alone', 'p99').toFixed(0)} ms; ` +
        `beside a ${burst}-order burst ${f('fair-beside', 'p50').toFixed(0)}/${f('fair-beside', 'p99').toFixed(0)} ms; ` +
        `the burst drained in ${f('fair-burst-alone', 'drainSeconds').toFixed(1)} s alone, ${f('fair-beside-burst', 'drainSeconds').toFixed(1)} s beside`,
    );
    const stages = (p: string) =>
      STAGES.map((st) => `${st} ${f(p, `${st}P50`).toFixed(0)}/${f(p, `${st}P99`).toFixed(0)}`).join(', ');
    ctx.say(`   quiet stages p50/p99 ms, alone: ${stages('fair-quiet-alone')}; beside: ${stages('fair-beside')}`);
    return out;
  } finally {
    await service.stop();
    await dropTopic(ctx, topic, group, env.STATUS_TOPIC);
  }
}
