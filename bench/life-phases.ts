/**
 * The bench's phases about an order's whole life and about what one order can do to the others:
 *
 *   life    a backlog drained by a bridge child until every order's run has closed (the linger the product defaults
 *           to, or 1 s where that default outlasts a bench): Temporal CPU per order over its whole life, history
 *           events of a closed order
 *   linger  the same with a 1 s linger: what keeping a run open after it settled costs
 *   eager   the life phase with one process running both roles, the bridge starting runs eagerly on the worker's
 *           connection (BRIDGE_EAGER_START), against `life`'s separate bridge and worker
 *   burst   one order receives a retry storm of BURST_EVENTS events (fresh event ids, its placement again), then
 *           other orders arrive on its partition and on the others: how fast the storm drains, and how long the
 *           orders behind it on its partition wait compared with the other partitions
 *   late    orders shipped and closed (eager, defaults), then a late cancellation of each, recorded through the store
 *   cache   CACHE_RUNS orders left open in the worker's workflow cache (cancellations waiting for their placement):
 *           the worker's RSS per cached run
 *
 * Same rules as phases.ts: a tenant, topic and group of its own per phase, nothing asserted, every order settled
 * (or its run terminated) before the next phase.
 */
import type pg from 'pg';
import { createOrderStarter } from '../src/roles/bridge/order-starter.js';
import { createLateEventRecorder } from '../src/roles/bridge/late-events.js';
import { workflowSettings } from '../src/domain/workflow-settings.js';
import { tenantWeights } from '../src/base/tenants/weights.js';
import { orderStatusQuery, orderWorkflowId } from '../workflows/api.js';
import { type OrderEvent } from '../src/vocabulary/order.js';
import {
  caughtUp,
  committedOffset,
  dropTopic,
  firstHandled,
  historyEvents,
  measured,
  orderId,
  placement,
  pool,
  privateTopic,
  produce,
  sleep,
  startChild,
  waitShipped,
  type Child,
  type Context,
  type PhaseResult,
} from './phases.js';
import { procMemory } from './procs.js';
import { median } from './stats.js';

/** Events in one order's retry storm (the burst phase; `--burst`). */
export const BURST_EVENTS = 6_000;
/** Runs the cache phase leaves open in the worker's cache (`--cache`; at most WORKER_MAX_CACHED_WORKFLOWS). */
export const CACHE_RUNS = 1_000;

/** The linger the life phase runs with: the product's default, or 1 s when that would outlast the bench. */
export function lifeLinger(ctx: Context): number {
  return ctx.config.ORDER_LINGER_SECONDS <= 10 ? ctx.config.ORDER_LINGER_SECONDS : 1;
}

/** Runs of `tenant` Temporal's visibility lists as closed (completed). */
async function closedRuns(ctx: Context, tenant: string): Promise<number> {
  return (await ctx.client.workflow.count(`TenantId = '${tenant}' AND ExecutionStatus = 'Completed'`)).count;
}

/**
 * A backlog of `n` orders drained by a bridge child whose orders linger `lingerSeconds`, until every run has closed:
 * CPU per process over the whole life, closed orders per second, history events of a closed order.
 */
export async function wholeLife(
  ctx: Context,
  phase: string,
  rep: number,
  n: number,
  lingerSeconds: number,
  opts: { eager?: boolean } = {},
): Promise<PhaseResult> {
  const tenant = `b-${ctx.suffix}-${phase}-${rep}`;
  const { topic, group, env } = await privateTopic(ctx, `${phase}-${rep}`, 6);
  const events = Array.from({ length: n }, (_, i) => placement(tenant, i));
  await produce(
    ctx,
    topic,
    events.map((e) => ({ key: e.orderId, value: JSON.stringify(e) })),
  );
  let bridge: Child | undefined;
  try {
    // Eager: one process with both roles on a task queue of its own, the bridge starting runs on the worker's connection.
    bridge = opts.eager
      ? await startChild('both', {
          ...env,
          ORDER_LINGER_SECONDS: String(lingerSeconds),
          TEMPORAL_TASK_QUEUE: `bench-${ctx.suffix}-${phase}-${rep}`,
          BRIDGE_EAGER_START: 'true',
        })
      : await startChild('bridge', {
          ...env,
          ORDER_LINGER_SECONDS: String(lingerSeconds),
          BRIDGE_EAGER_START: 'false',
        });
    const b = bridge;
    const result = await measured(
      ctx,
      phase,
      () => ({ bridge: b.pid }),
      async () => {
        const t0 = await firstHandled(b, phase);
        const shippedAt = await waitShipped(ctx, tenant, n, phase);
        let last = Date.now();
        let closed = 0;
        for (;;) {
          closed = await closedRuns(ctx, tenant).catch(() => closed);
          if (closed >= n) break;
          if (Date.now() - last > 10_000) {
            last = Date.now();
            ctx.progress(`${phase}: ${closed}/${n} runs closed`);
          }
          // A count is a visibility query the Temporal server pays for inside the measurement: one a second.
          await sleep(1_000);
        }
        const closedSeconds = (Date.now() - t0) / 1000;
        return {
          orders: n,
          lingerSeconds,
          shippedSeconds: (shippedAt - t0) / 1000,
          closedSeconds,
          closedPerSecond: n / closedSeconds,
        };
      },
    );
    result.figures.historyEvents = await historyEvents(ctx, tenant, n);
    return result;
  } finally {
    await bridge?.stop();
    await dropTopic(ctx, topic, group);
  }
}

/** Rows of `tenant` whose late cancellation the store recorded as refused. */
async function refusedCount(db: pg.Pool, tenant: string): Promise<number> {
  const c = await db.connect();
  try {
    await c.query('BEGIN');
    await c.query("SELECT set_config('app.tenant_id', $1, true)", [tenant]);
    const r = await c.query<{ n: string }>('SELECT count(*) AS n FROM fulfilments WHERE cancel_refused_at IS NOT NULL');
    await c.query('COMMIT');
    return Number(r.rows[0]!.n);
  } finally {
    c.release();
  }
}

/**
 * Late events: `n` orders placed and shipped by one process with both roles (eager starts, the defaults: each run
 * closes as its order ships), not measured; then, measured, a cancellation of each — every one meets a closed run and
 * is recorded through the store as refused (the bridge's late path). CPU per process per late event against the
 * eager phase's per order; and the history of an order afterwards (unchanged: no run reopened).
 */
export async function lateEvents(ctx: Context, rep: number, n: number): Promise<PhaseResult> {
  const tenant = `b-${ctx.suffix}-late-${rep}`;
  const { topic, group, env } = await privateTopic(ctx, `late-${rep}`, 6);
  const placed = Array.from({ length: n }, (_, i) => placement(tenant, i));
  await produce(
    ctx,
    topic,
    placed.map((e) => ({ key: e.orderId, value: JSON.stringify(e) })),
  );
  let both: Child | undefined;
  try {
    both = await startChild('both', {
      ...env,
      TEMPORAL_TASK_QUEUE: `bench-${ctx.suffix}-late-${rep}`,
      BRIDGE_EAGER_START: 'true',
    });
    const b = both;
    await waitShipped(ctx, tenant, n, 'late');
    while ((await closedRuns(ctx, tenant).catch(() => 0)) < n) await sleep(1_000);
    const result = await measured(
      ctx,
      'late',
      () => ({ bridge: b.pid }),
      async () => {
        const t0 = Date.now();
        const cancels = placed.map((e) => ({
          ...e,
          eventId: `${e.eventId}-cancel`,
          type: 'orders.OrderCancelled',
          orderVersion: 2,
          data: { reason: 'bench' },
        }));
        await produce(
          ctx,
          topic,
          cancels.map((e) => ({ key: e.orderId, value: JSON.stringify(e) })),
        );
        let last = Date.now();
        for (;;) {
          const refused = await refusedCount(ctx.db, tenant);
          if (refused >= n) break;
          if (Date.now() - last > 10_000) {
            last = Date.now();
            ctx.progress(`late: ${refused}/${n} late cancellations recorded`);
          }
          await sleep(250);
        }
        const seconds = (Date.now() - t0) / 1000;
        return { lateEvents: n, lateSeconds: seconds, lateEventsPerSecond: n / seconds };
      },
    );
    result.figures.historyEventsAfter = await historyEvents(ctx, tenant, n);
    return result;
  } finally {
    await both?.stop();
    await dropTopic(ctx, topic, group);
  }
}

/** Seconds from `t0` at which each order of `tenant` was shipped, by order id. */
export async function shippedAfter(db: pg.Pool, tenant: string, t0: number): Promise<Map<string, number>> {
  const c = await db.connect();
  try {
    await c.query('BEGIN');
    await c.query("SELECT set_config('app.tenant_id', $1, true)", [tenant]);
    const r = await c.query<{ order_id: string; at: Date }>(
      "SELECT order_id, shipped_at AS at FROM fulfilments WHERE status = 'shipped'",
    );
    await c.query('COMMIT');
    return new Map(r.rows.map((row) => [row.order_id, (row.at.getTime() - t0) / 1000]));
  } finally {
    c.release();
  }
}

/**
 * A retry storm on one order: `events` records for order `burst` on partition 0 — its placement, then the same
 * placement again and again under fresh event ids (each stale once the first is recorded) — followed by `others`
 * orders spread evenly over the 6 partitions. Measures how fast the storm is accounted for by its workflow, and when
 * the other orders on partition 0 shipped against those on the other partitions (the last, and the median).
 */
export async function burst(ctx: Context, rep: number, events: number, others: number): Promise<PhaseResult> {
  const tenant = `b-${ctx.suffix}-burst-${rep}`;
  const { topic, group, env } = await privateTopic(ctx, `burst-${rep}`, 6);
  const burstOrder = 'burst';
  const stormEvent = (i: number): OrderEvent => ({
    ...placement(tenant, 0),
    orderId: burstOrder,
    eventId: `${tenant}-burst-${i}`,
    correlationId: 'bench-storm',
  });
  const records = [
    ...Array.from({ length: events }, (_, i) => ({
      key: burstOrder,
      value: JSON.stringify(stormEvent(i)),
      partition: 0,
    })),
    ...Array.from({ length: others }, (_, i) => {
      const e = placement(tenant, i);
      return { key: e.orderId, value: JSON.stringify(e), partition: i % 6 };
    }),
  ];
  await produce(ctx, topic, records);
  let bridge: Child | undefined;
  try {
    bridge = await startChild('bridge', env);
    const b = bridge;
    const handle = ctx.client.workflow.getHandle(orderWorkflowId(tenant, burstOrder));
    return await measured(
      ctx,
      'burst',
      () => ({ bridge: b.pid }),
      async () => {
        const t0 = await firstHandled(b, 'burst');
        let burstAt: number | undefined;
        let last = Date.now();
        // The storm has drained once its workflow accounted for every event, or — the run closed once the order shipped,
        // and later storm events are answered "closed" by Temporal — once the group committed past the storm.
        while (burstAt === undefined) {
          const view = await handle.query(orderStatusQuery).catch(() => undefined);
          const seen = view ? view.appliedEvents + view.duplicatesSuppressed + view.staleIgnored : 0;
          const passed = await committedOffset(ctx.admin, topic, group, 0).catch(() => -1n);
          if (seen >= events || passed >= BigInt(events)) burstAt = Date.now();
          else if (Date.now() - last > 10_000) {
            last = Date.now();
            ctx.progress(
              `burst: ${seen}/${events} storm events accounted for by the order's workflow, ${passed < 0n ? 0 : passed} committed`,
            );
          }
          if (burstAt === undefined) await sleep(200);
        }
        await waitShipped(ctx, tenant, others + 1, 'burst');
        while (!(await caughtUp(ctx.admin, topic, group).catch(() => false))) await sleep(200);
        const shipped = await shippedAfter(ctx.db, tenant, t0);
        const behind = Array.from({ length: others }, (_, i) => ({
          partition: i % 6,
          at: shipped.get(orderId(i)) ?? Number.NaN,
        }));
        const onBurst = behind.filter((o) => o.partition === 0).map((o) => o.at);
        const elsewhere = behind.filter((o) => o.partition !== 0).map((o) => o.at);
        const burstSeconds = (burstAt - t0) / 1000;
        return {
          events,
          burstSeconds,
          burstEventsPerSecond: events / burstSeconds,
          othersOnBurstPartitionSeconds: Math.max(...onBurst),
          othersElsewhereSeconds: Math.max(...elsewhere),
          othersOnBurstPartitionMedianSeconds: median(onBurst),
          othersElsewhereMedianSeconds: median(elsewhere),
        };
      },
    );
  } finally {
    await bridge?.stop();
    await dropTopic(ctx, topic, group);
  }
}

/**
 * `runs` cancellations (at most the cache's size), each for an order never placed, through the bridge's own starter,
 * to a worker child of their own (its own task queue, so its cache holds these runs only): every run then waits its
 * grace window in that worker's cache. The worker's RSS before and once all are waiting gives its memory per cached
 * run; the runs are terminated and the worker stopped afterwards.
 */
export async function cachedRuns(ctx: Context, rep: number, runs: number): Promise<PhaseResult> {
  const tenant = `b-${ctx.suffix}-cache-${rep}`;
  const taskQueue = `bench-${ctx.suffix}-cache-${rep}`;
  const n = Math.min(runs, ctx.config.WORKER_MAX_CACHED_WORKFLOWS || runs);
  const starter = createOrderStarter(
    ctx.client,
    taskQueue,
    workflowSettings(ctx.config),
    createLateEventRecorder({ db: ctx.db, statusTopic: ctx.config.STATUS_TOPIC }),
    { weightOf: tenantWeights(ctx.config) },
  );
  const worker = await startChild('worker', { ...ctx.env, TEMPORAL_TASK_QUEUE: taskQueue });
  try {
    // Settled after start-up (the bundle loaded, pollers up): what the cache adds is measured from here.
    await sleep(2_000);
    return await measured(
      ctx,
      'cache',
      () => ({ cacheWorker: worker.pid }),
      async () => {
        const rssBefore = procMemory(worker.pid)?.rss ?? 0;
        await pool(n, 16, async (i) => {
          const e = placement(tenant, i);
          await starter.deliver([
            { ...e, type: 'orders.OrderCancelled', eventId: `${e.eventId}-cancel`, data: {} } as OrderEvent,
          ]);
        });
        await waitRows(ctx.db, tenant, n);
        // The last runs' tasks complete just after their rows are written.
        await sleep(2_000);
        const rssAfter = procMemory(worker.pid)?.rss ?? 0;
        return {
          runs: n,
          workerRssBefore: rssBefore,
          workerRssAfter: rssAfter,
          workerRssPerRun: (rssAfter - rssBefore) / n,
        };
      },
    );
  } finally {
    await pool(n, 16, async (i) => {
      await ctx.client.workflow
        .getHandle(orderWorkflowId(tenant, orderId(i)))
        .terminate('bench clean-up')
        .catch(() => undefined);
    });
    await worker.stop();
  }
}

/** Waits until `tenant` has `n` rows of any status. */
async function waitRows(db: pg.Pool, tenant: string, n: number): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const c = await db.connect();
    let rows = 0;
    try {
      await c.query('BEGIN');
      await c.query("SELECT set_config('app.tenant_id', $1, true)", [tenant]);
      rows = Number((await c.query<{ n: string }>('SELECT count(*) AS n FROM fulfilments')).rows[0]!.n);
      await c.query('COMMIT');
    } finally {
      c.release();
    }
    if (rows >= n) return;
    if (Date.now() > deadline) throw new Error(`cache: ${rows} of ${n} orders recorded after 5 minutes`);
    await sleep(250);
  }
}
