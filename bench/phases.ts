/**
 * The bench's phases, each measured the same way: CPU of every process (procs.ts) and the 1-minute load before and
 * after, wall time, and what the phase counts (calls, records delivered, orders shipped).
 *
 * Rules a reader must not break:
 * - every phase works on its own tenant and its own private topic and consumer group, so phases and repetitions
 *   never see each other's records or rows;
 * - a phase that hands orders to the worker ends only when every one of them has shipped, so the next phase starts
 *   with an idle worker and Temporal;
 * - nothing here asserts a time: the bench reports, it never fails on a figure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Partitioners, type Admin, type Kafka } from 'kafkajs';
import pg from 'pg';
import type { Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { createKafka } from '../src/adapters/kafka/client.js';
import { loadConfig, type Config } from '../src/base/config.js';
import { createLogger, type Logger } from '../src/base/log.js';
import { provision } from '../src/roles/provision/index.js';
import { migrationConnection, runtimeConnection } from '../src/adapters/store/connection.js';
import { createOrderStarter } from '../src/roles/bridge/order-starter.js';
import { createLateEventRecorder } from '../src/roles/bridge/late-events.js';
import { workflowSettings } from '../src/domain/workflow-settings.js';
import { tenantWeights } from '../src/base/tenants/weights.js';
import { orderPriority } from '../src/base/tenants/fairness.js';
import {
  ORDER_WORKFLOW_TYPE,
  OrderIdAttribute,
  OrderStatusAttribute,
  TenantIdAttribute,
  orderEventSignal,
  orderWorkflowId,
} from '../workflows/api.js';
import { type OrderEvent } from '../src/vocabulary/order.js';
import { cpuDelta, cpuSeconds, load1, procMemory } from './procs.js';
import { sleep } from '../src/base/sleep.js';

export type Env = Record<string, string>;

/** What the bench runs against and with: the stack's processes, the worker child, the clients. */
export interface Context {
  env: Env;
  config: Config;
  logger: Logger;
  kafka: Kafka;
  admin: Admin;
  client: Client;
  db: pg.Pool;
  /** Root pids of the stack's processes (Temporal server, Kafka, PostgreSQL, warehouse). */
  stackPids: Record<string, number | undefined>;
  worker?: Child;
  suffix: string;
  say(line: string): void;
  progress(line: string): void;
}

/** One phase's measurement. */
export interface PhaseResult {
  phase: string;
  wallSeconds: number;
  load1Before: number;
  load1After: number;
  /** CPU seconds per process over the phase. */
  cpu: Record<string, number>;
  /** What the phase counted, by name (calls, records, shipped, rates…). */
  figures: Record<string, number>;
}

export { sleep };

/** A child process of the bench (bench/bridge-child.ts) reporting memory and records handled every 250 ms. */
export interface Child {
  proc: ChildProcess;
  pid: number;
  samples: { t: number; handled: number; rss: number; heapUsed: number }[];
  /** The kernel's peak RSS of the process (VmHWM), start-up included. */
  peakRss(): number;
  /** The highest RSS sampled (every 250 ms) since `resetPeak`: the peak while it worked. */
  workPeakRss(): number;
  resetPeak(): void;
  stop(): Promise<void>;
}

/**
 * V8 flags of the bridge child, as docs/performance.md recommends for a bridge-only process: a 1 MiB young
 * generation (V8's default of up to 16 MiB per semi-space is about 30 MB of a bridge's RSS), a 64 MB old space (its
 * heap peaks near 55 MB on a 100,000-record backlog) and V8's optimise-for-size mode.
 * BENCH_BRIDGE_NODE_FLAGS replaces them (empty: Node's defaults).
 */
export const BRIDGE_NODE_FLAGS = (
  process.env.BENCH_BRIDGE_NODE_FLAGS ?? '--max-semi-space-size=1 --max-old-space-size=64 --optimize-for-size'
)
  .split(' ')
  .filter(Boolean);
/** Node flags of the worker children (and of a child with both roles), e.g. `--cpu-prof` to profile one; none by default. */
export const WORKER_NODE_FLAGS = (process.env.BENCH_WORKER_NODE_FLAGS ?? '').split(' ').filter(Boolean);

export async function startChild(role: 'bridge' | 'worker' | 'both', env: Env): Promise<Child> {
  const flags = role === 'bridge' ? BRIDGE_NODE_FLAGS : WORKER_NODE_FLAGS;
  // What production runs: the JavaScript `npm run build` emitted (npm run bench builds first).
  const proc = spawn(process.execPath, [...flags, 'dist/bench/bridge-child.js'], {
    env: { ...env, BENCH_ROLES: role },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  const samples: Child['samples'] = [];
  let buffered = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) if (line.startsWith('{')) samples.push(JSON.parse(line) as Child['samples'][number]);
  });
  const pid = proc.pid!;
  let peak = 0;
  let workPeak = 0;
  const timer = setInterval(() => {
    const m = procMemory(pid);
    if (m) {
      peak = Math.max(peak, m.hwm);
      workPeak = Math.max(workPeak, m.rss);
    }
  }, 250);
  let dead = false;
  void exited.then(() => (dead = true));
  const deadline = Date.now() + 180_000;
  while (samples.length === 0) {
    if (dead) throw new Error(`the bench's ${role} child (pid ${pid}) exited before it started; its stderr is above`);
    if (Date.now() > deadline) throw new Error(`the bench's ${role} child (pid ${pid}) did not start within 180 s`);
    await sleep(100);
  }
  return {
    proc,
    pid,
    samples,
    peakRss: () => {
      const m = procMemory(pid);
      return Math.max(peak, m?.hwm ?? 0);
    },
    workPeakRss: () => workPeak,
    resetPeak: () => (workPeak = procMemory(pid)?.rss ?? 0),
    async stop() {
      const m = procMemory(pid);
      if (m) peak = Math.max(peak, m.hwm);
      clearInterval(timer);
      if (dead) return;
      proc.kill('SIGTERM');
      await Promise.race([exited, sleep(30_000)]);
      if (!dead) proc.kill('SIGKILL');
    },
  };
}

/** Runs `fn(i)` for i in [0, n) with at most `concurrency` at once. */
export async function pool(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

export function orderId(i: number): string {
  return `o-${String(i).padStart(6, '0')}`;
}

export function placement(tenant: string, order: number, version = 1): OrderEvent {
  const id = orderId(order);
  return {
    eventId: `${tenant}-${id}-v${version}`,
    type: 'orders.OrderPlaced',
    schemaVersion: 1,
    occurredAt: new Date().toISOString(),
    tenantId: tenant,
    orderId: id,
    orderVersion: version,
    correlationId: `bench-${id}`,
    data: { customerId: `c-${order}`, lines: [{ sku: `SKU-${order % 50}`, quantity: 1 + (version % 3) }] },
  } as OrderEvent;
}

/** Measures `work` with CPU per process (the stack's, the worker's, `extra` and the bench's own) and the load. */
export async function measured(
  ctx: Context,
  phase: string,
  extra: () => Record<string, number | undefined>,
  work: () => Promise<Record<string, number>>,
): Promise<PhaseResult> {
  const roots = () => ({ ...ctx.stackPids, worker: ctx.worker?.pid, ...extra(), bench: process.pid });
  const load1Before = load1();
  const alone = new Set(['bench']);
  const before = cpuSeconds(roots(), alone);
  const t0 = Date.now();
  const figures = await work();
  // Children started inside the phase (the bridge) count from zero: their `before` is absent.
  const after = cpuSeconds(roots(), alone);
  return {
    phase,
    wallSeconds: (Date.now() - t0) / 1000,
    load1Before,
    load1After: load1(),
    cpu: cpuDelta(before, after),
    figures,
  };
}

/** Number of `shipped` rows of `tenant` (the runtime role sees a tenant's rows only inside its transaction). */
export async function shippedCount(db: pg.Pool, tenant: string): Promise<number> {
  const c = await db.connect();
  try {
    await c.query('BEGIN');
    await c.query("SELECT set_config('app.tenant_id', $1, true)", [tenant]);
    const r = await c.query<{ n: string }>("SELECT count(*) AS n FROM fulfilments WHERE status = 'shipped'", []);
    await c.query('COMMIT');
    return Number(r.rows[0]!.n);
  } finally {
    c.release();
  }
}

/** Waits until `tenant` has `n` shipped rows; returns when (ms since the epoch). */
export async function waitShipped(ctx: Context, tenant: string, n: number, label: string): Promise<number> {
  let last = Date.now();
  let seen = -1;
  let changedAt = Date.now();
  for (;;) {
    const shipped = await shippedCount(ctx.db, tenant);
    if (shipped >= n) return Date.now();
    if (shipped !== seen) {
      seen = shipped;
      changedAt = Date.now();
    }
    if (Date.now() - changedAt > 300_000)
      throw new Error(
        `${label}: ${shipped} of ${n} orders shipped and none more for 5 minutes; see the worker's output above`,
      );
    if (Date.now() - last > 10_000) {
      last = Date.now();
      ctx.progress(`${label}: ${shipped}/${n} shipped`);
    }
    await sleep(500);
  }
}

/** The bridge's own call, from the bench: what the raw loop measures. */
export function rawStarter(ctx: Context) {
  return createOrderStarter(
    ctx.client,
    ctx.config.TEMPORAL_TASK_QUEUE,
    workflowSettings(ctx.config),
    createLateEventRecorder({ db: ctx.db, statusTopic: ctx.config.STATUS_TOPIC }),
    { weightOf: tenantWeights(ctx.config) },
  );
}

/**
 * Raw signal-with-start loop: `n` distinct orders through the bridge's own starter (same workflow type, signal,
 * task queue, options) at `concurrency` calls in flight. With the worker running, then waits until they shipped.
 */
export async function rawLoop(ctx: Context, rep: number, n: number, concurrency: number): Promise<PhaseResult> {
  const tenant = `b-${ctx.suffix}-raw-${rep}`;
  const starter = rawStarter(ctx);
  let callsEndedAt = 0;
  const result = await measured(
    ctx,
    'raw',
    () => ({}),
    async () => {
      const t0 = Date.now();
      let done = 0;
      const ticker = setInterval(() => ctx.progress(`raw loop: ${done}/${n} calls`), 10_000);
      try {
        await pool(n, concurrency, async (i) => {
          await starter.deliver([placement(tenant, i)]);
          done += 1;
        });
      } finally {
        clearInterval(ticker);
      }
      callsEndedAt = Date.now();
      return {
        calls: n,
        concurrency,
        seconds: (callsEndedAt - t0) / 1000,
        callsPerSecond: n / ((callsEndedAt - t0) / 1000),
      };
    },
  );
  // The worker ships them before the next phase begins (not part of the measurement).
  await waitShipped(ctx, tenant, n, 'raw loop, settling');
  return result;
}

/**
 * The same call with no worker polling its task queue: what a bare start costs Temporal. The runs time out after
 * a few minutes on their own (nothing is left open); otherwise the bridge's options exactly.
 */
export async function bareStarts(ctx: Context, rep: number, n: number, concurrency: number): Promise<PhaseResult> {
  const tenant = `b-${ctx.suffix}-bare-${rep}`;
  const taskQueue = `bench-${ctx.suffix}-unpolled`;
  const settings = workflowSettings(ctx.config);
  return measured(
    ctx,
    'bare',
    () => ({}),
    async () => {
      const t0 = Date.now();
      await pool(n, concurrency, async (i) => {
        const event = placement(tenant, i);
        await ctx.client.workflow.signalWithStart(ORDER_WORKFLOW_TYPE, {
          workflowId: orderWorkflowId(tenant, event.orderId),
          taskQueue,
          args: [{ tenantId: tenant, orderId: event.orderId, settings }],
          signal: orderEventSignal,
          signalArgs: [event],
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          workflowRunTimeout: '3 minutes',
          priority: orderPriority(tenant, tenantWeights(ctx.config)),
          typedSearchAttributes: [
            { key: TenantIdAttribute, value: tenant },
            { key: OrderIdAttribute, value: event.orderId },
            { key: OrderStatusAttribute, value: 'new' },
          ],
        });
      });
      const seconds = (Date.now() - t0) / 1000;
      return { calls: n, concurrency, seconds, callsPerSecond: n / seconds };
    },
  ).finally(() =>
    // Terminated now, outside the measurement: left to their run timeout they would close inside a later phase.
    pool(n, 16, async (i) => {
      await ctx.client.workflow
        .getHandle(orderWorkflowId(tenant, orderId(i)))
        .terminate('bench clean-up')
        .catch(() => undefined);
    }),
  );
}

/**
 * Waits (at most `maxMs`) until the Temporal server has used less than `share` of one core over a whole second, so a
 * phase starts on an idle Temporal rather than on the tail of the one before (timers, closes, visibility); the
 * seconds waited.
 */
export async function quietTemporal(ctx: Context, share = 0.15, maxMs = 120_000): Promise<number> {
  const t0 = Date.now();
  const roots = { temporal: ctx.stackPids.temporal };
  while (Date.now() - t0 < maxMs) {
    const before = cpuSeconds(roots);
    await sleep(1_000);
    if ((cpuDelta(before, cpuSeconds(roots)).temporal ?? 0) < share) break;
  }
  return (Date.now() - t0) / 1000;
}

/** Produces `records` onto `topic` (by key, or to the partition a record names) in batches of 1,000 (a batch to one partition stays under the broker's 1 MB message limit), four sends in flight. */
export async function produce(
  ctx: Context,
  topic: string,
  records: { key: string; value: string; partition?: number }[],
): Promise<void> {
  const producer = ctx.kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  try {
    const inFlight = new Set<Promise<unknown>>();
    for (let start = 0; start < records.length; start += 1_000) {
      const send = producer
        .send({ topic, acks: -1, messages: records.slice(start, start + 1_000) })
        .finally(() => inFlight.delete(send));
      inFlight.add(send);
      if (inFlight.size >= 4) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
  } finally {
    await producer.disconnect();
  }
}

/** True once `group` has committed every partition of `topic` up to its end. */
export async function caughtUp(admin: Admin, topic: string, group: string): Promise<boolean> {
  const [ends, [committed]] = await Promise.all([
    admin.fetchTopicOffsets(topic),
    admin.fetchOffsets({ groupId: group, topics: [topic] }),
  ]);
  const done = new Map(committed?.partitions.map((p) => [p.partition, BigInt(p.offset)]) ?? []);
  return ends.every((e) => BigInt(e.high) === 0n || (done.get(e.partition) ?? -1n) >= BigInt(e.high));
}

/** The offset `group` committed on `topic`'s `partition` (-1 when none yet). */
export async function committedOffset(admin: Admin, topic: string, group: string, partition: number): Promise<bigint> {
  const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  const p = committed?.partitions.find((x) => x.partition === partition);
  return p ? BigInt(p.offset) : -1n;
}

/**
 * A private topic with `partitions` partitions, as `fulfilment provision` creates it; with `ownStatusTopic`, a status
 * topic of its own as well (STATUS_TOPIC in `env`), so a service on it leads its own status relay.
 */
export async function privateTopic(
  ctx: Context,
  name: string,
  partitions: number,
  opts: { ownStatusTopic?: boolean } = {},
): Promise<{ topic: string; group: string; env: Env }> {
  const topic = `bench.${name}.${ctx.suffix}`;
  const group = `bench-${name}-${ctx.suffix}`;
  const env: Env = {
    ...ctx.env,
    ORDERS_TOPIC: topic,
    ORDERS_TOPIC_PARTITIONS: String(partitions),
    CONSUMER_GROUP: group,
    ...(opts.ownStatusTopic ? { STATUS_TOPIC: `bench.${name}-status.${ctx.suffix}` } : {}),
  };
  // Provisioning's kafkajs logs a partition leader that is not ready yet, and retries: not worth a line here.
  await provision(loadConfig(env), createLogger('fatal'), ['kafka']);
  return { topic, group, env };
}

export async function dropTopic(ctx: Context, topic: string, group: string, statusTopic?: string): Promise<void> {
  const topics = statusTopic ? [topic, statusTopic] : [topic];
  await ctx.admin
    .deleteTopics({ topics })
    .catch((e: unknown) => ctx.say(`could not delete topics ${topics.join(', ')}: ${String(e)}`));
  await ctx.admin.deleteGroups([group]).catch(() => undefined);
}

function envelopes(events: OrderEvent[]): { key: string; value: string }[] {
  return events.map((e) => ({ key: e.orderId, value: JSON.stringify(e) }));
}

/** `n` placements, and with `duplicates` that many extra copies of earlier records spread through the backlog. */
export function backlog(tenant: string, n: number, duplicates = 0): OrderEvent[] {
  const events = Array.from({ length: n }, (_, i) => placement(tenant, i));
  // Deterministic spread: copy k of record (k × 7919) mod n lands a little after its original.
  for (let k = 0; k < duplicates; k += 1) {
    const of = (k * 7919) % n;
    const at = Math.min(events.length, of + 1 + ((k * 31) % 200));
    events.splice(
      at,
      0,
      events.find((e) => e.orderId === orderId(of))!,
    );
  }
  return events;
}

/**
 * Bridge drain: a backlog of `n` orders (plus `duplicates` copies) on a private topic of `partitions` partitions,
 * one bridge child from the first record it hands over until its group committed everything (delivery), and on
 * until every order shipped (end to end).
 */
export async function bridgeDrain(
  ctx: Context,
  phase: string,
  rep: number,
  n: number,
  partitions: number,
  duplicates = 0,
): Promise<PhaseResult> {
  const tenant = `b-${ctx.suffix}-${phase}-${rep}`;
  const { topic, group, env } = await privateTopic(ctx, `${phase}-${rep}`, partitions);
  const events = backlog(tenant, n, duplicates);
  await produce(ctx, topic, envelopes(events));
  let bridge: Child | undefined;
  try {
    bridge = await startChild('bridge', env);
    const b = bridge;
    b.resetPeak();
    ctx.worker?.resetPeak();
    const result = await measured(
      ctx,
      phase,
      () => ({ bridge: b.pid }),
      async () => {
        const t0 = await firstHandled(b, phase);
        let last = Date.now();
        while (!(await caughtUp(ctx.admin, topic, group).catch(() => false))) {
          if (Date.now() - last > 10_000) {
            last = Date.now();
            ctx.progress(`${phase}: ${b.samples.at(-1)?.handled ?? 0}/${events.length} records handed over`);
          }
          await sleep(200);
        }
        const deliveredAt = Date.now();
        const shippedAt = await waitShipped(ctx, tenant, n, phase);
        const delivered = (deliveredAt - t0) / 1000;
        const shipped = (shippedAt - t0) / 1000;
        return {
          records: events.length,
          orders: n,
          partitions,
          deliverySeconds: delivered,
          recordsPerSecond: events.length / delivered,
          shippedSeconds: shipped,
          shippedPerSecond: n / shipped,
          bridgePeakRss: b.peakRss(),
          bridgeWorkPeakRss: b.workPeakRss(),
          ...(ctx.worker ? { workerWorkPeakRss: ctx.worker.workPeakRss() } : {}),
        };
      },
    );
    if (phase === 'drain6') result.figures.historyEvents = await historyEvents(ctx, tenant, n);
    return result;
  } finally {
    await bridge?.stop();
    await dropTopic(ctx, topic, group);
  }
}

/** When the bridge child handed its first record over: the sample before it, as samples come every 250 ms. */
export async function firstHandled(b: Child, phase: string): Promise<number> {
  const deadline = Date.now() + 600_000;
  while (!b.samples.some((s) => s.handled > 0)) {
    if (Date.now() > deadline) throw new Error(`${phase}: the bridge handed nothing over within 10 minutes`);
    await sleep(50);
  }
  const first = b.samples.find((s) => s.handled > 0)!;
  return b.samples[b.samples.indexOf(first) - 1]?.t ?? first.t;
}

/** Median number of history events of three orders (first, middle, last), counted from their histories. */
export async function historyEvents(ctx: Context, tenant: string, n: number): Promise<number> {
  const counts: number[] = [];
  for (const i of [0, Math.floor(n / 2), n - 1]) {
    const history = await ctx.client.workflow.getHandle(orderWorkflowId(tenant, orderId(i))).fetchHistory();
    counts.push(history.events?.length ?? 0);
  }
  counts.sort((a, b) => a - b);
  return counts[1]!;
}

/**
 * The "obvious build": a plain kafkajs consumer, each record in one PostgreSQL transaction (dedupe insert, version
 * check, upsert), its offset resolved after the commit and committed by kafkajs; as many partitions at once as the
 * topic has, one pooled connection each.
 */
export async function plainConsumer(ctx: Context, rep: number, n: number): Promise<PhaseResult> {
  const tenant = `b-${ctx.suffix}-plain-${rep}`;
  const { topic, group } = await privateTopic(ctx, `plain-${rep}`, 6);
  await produce(ctx, topic, envelopes(backlog(tenant, n)));
  const owner = new pg.Pool({ ...migrationConnection(ctx.config), max: 6 });
  owner.on('error', () => undefined);
  const consumer = createKafka(ctx.config, ctx.logger, { clientId: `bench-plain-${ctx.suffix}` }).consumer({
    groupId: group,
    maxBytesPerPartition: 1024 * 1024,
  });
  try {
    await owner.query(`CREATE SCHEMA IF NOT EXISTS bench;
      CREATE TABLE IF NOT EXISTS bench.processed_events (event_id text PRIMARY KEY, processed_at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE IF NOT EXISTS bench.orders (tenant_id text, order_id text, order_version int NOT NULL, status text NOT NULL, customer_id text,
        lines jsonb, updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (tenant_id, order_id))`);
    return await measured(
      ctx,
      'plain',
      () => ({}),
      async () => {
        let handled = 0;
        let t0 = 0;
        await consumer.connect();
        await consumer.subscribe({ topic, fromBeginning: true });
        await consumer.run({
          partitionsConsumedConcurrently: 6,
          eachMessage: async ({ message }) => {
            t0 ||= Date.now();
            const e = JSON.parse(message.value!.toString()) as OrderEvent & {
              data: { customerId: string; lines: unknown };
            };
            const c = await owner.connect();
            try {
              await c.query('BEGIN');
              const claimed = await c.query(
                'INSERT INTO bench.processed_events (event_id) VALUES ($1) ON CONFLICT DO NOTHING',
                [e.eventId],
              );
              if (claimed.rowCount === 1) {
                const current = await c.query<{ order_version: number }>(
                  'SELECT order_version FROM bench.orders WHERE tenant_id = $1 AND order_id = $2 FOR UPDATE',
                  [e.tenantId, e.orderId],
                );
                if ((current.rows[0]?.order_version ?? 0) < e.orderVersion) {
                  await c.query(
                    `INSERT INTO bench.orders (tenant_id, order_id, order_version, status, customer_id, lines) VALUES ($1, $2, $3, 'placed', $4, $5)
                   ON CONFLICT (tenant_id, order_id) DO UPDATE SET order_version = EXCLUDED.order_version, status = EXCLUDED.status,
                     customer_id = EXCLUDED.customer_id, lines = EXCLUDED.lines, updated_at = now()`,
                    [e.tenantId, e.orderId, e.orderVersion, e.data.customerId, JSON.stringify(e.data.lines)],
                  );
                }
              }
              await c.query('COMMIT');
            } catch (err) {
              await c.query('ROLLBACK').catch(() => undefined);
              throw err;
            } finally {
              c.release();
            }
            handled += 1;
          },
        });
        let last = Date.now();
        while (!(await caughtUp(ctx.admin, topic, group).catch(() => false))) {
          if (Date.now() - last > 10_000) {
            last = Date.now();
            ctx.progress(`plain consumer: ${handled}/${n} records`);
          }
          await sleep(100);
        }
        const seconds = (Date.now() - t0) / 1000;
        return { records: n, seconds, recordsPerSecond: n / seconds };
      },
    );
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await owner.query('DELETE FROM bench.orders WHERE tenant_id = $1', [tenant]).catch(() => undefined);
    await owner.end();
    await dropTopic(ctx, topic, group);
  }
}

/** Drops what plainConsumer made (called once at the end). */
export async function dropPlainSchema(config: Config): Promise<void> {
  const owner = new pg.Client(migrationConnection(config));
  await owner.connect();
  try {
    await owner.query('DROP SCHEMA IF EXISTS bench CASCADE');
  } finally {
    await owner.end();
  }
}

/**
 * Bridge memory over a large backlog: `events` records (1,000 orders × events/1,000 versions) drained by one
 * bridge child on a task queue no worker polls (signals simply accumulate); peak RSS (VmHWM) and heap. The
 * workflows it started are terminated afterwards.
 */
export async function memoryRun(ctx: Context, events: number): Promise<PhaseResult> {
  const orders = Math.min(1000, events);
  const versions = Math.ceil(events / orders);
  const tenant = `b-${ctx.suffix}-memory`;
  const { topic, group, env } = await privateTopic(ctx, 'memory', 6);
  const records: { key: string; value: string }[] = [];
  for (let i = 0; i < events; i += 1) {
    const e = placement(tenant, i % orders, 1 + Math.floor(i / orders));
    records.push({ key: e.orderId, value: JSON.stringify(e) });
  }
  ctx.progress(`memory: producing ${events} records (${orders} orders × ${versions} versions)`);
  await produce(ctx, topic, records);
  records.length = 0;
  let bridge: Child | undefined;
  try {
    bridge = await startChild('bridge', { ...env, TEMPORAL_TASK_QUEUE: `bench-${ctx.suffix}-memory` });
    const b = bridge;
    const rssBefore = b.samples[0]!.rss;
    b.resetPeak();
    return await measured(
      ctx,
      'memory',
      () => ({ bridge: b.pid }),
      async () => {
        const t0 = Date.now();
        let last = Date.now();
        while (!(await caughtUp(ctx.admin, topic, group).catch(() => false))) {
          if (Date.now() - last > 10_000) {
            last = Date.now();
            const s = b.samples.at(-1)!;
            ctx.progress(
              `memory: ${s.handled}/${events} handed over, RSS ${(s.rss / 2 ** 20).toFixed(0)} MB (peak ${(b.peakRss() / 2 ** 20).toFixed(0)} MB)`,
            );
          }
          await sleep(250);
        }
        const seconds = (Date.now() - t0) / 1000;
        return {
          records: events,
          seconds,
          recordsPerSecond: events / seconds,
          bridgePeakRss: b.peakRss(),
          bridgeWorkPeakRss: b.workPeakRss(),
          bridgeRssBefore: rssBefore,
          bridgePeakHeap: Math.max(...b.samples.map((s) => s.heapUsed)),
        };
      },
    );
  } finally {
    await bridge?.stop();
    await dropTopic(ctx, topic, group);
    await pool(orders, 16, async (i) => {
      await ctx.client.workflow
        .getHandle(orderWorkflowId(tenant, orderId(i)))
        .terminate('bench clean-up')
        .catch(() => undefined);
    });
  }
}

export function newSuffix(): string {
  return `${Date.now().toString(36)}-${randomUUID().slice(0, 4)}`;
}

export { runtimeConnection };
