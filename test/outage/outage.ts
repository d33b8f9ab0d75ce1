/**
 * One scenario for every dependency outage: a stream of order placements (with duplicates) is produced at a
 * steady pace while one worker + bridge instance consumes it; part-way through, one service of the shared
 * stack is stopped, held down for a while after the instance visibly felt it, and started again. Then the
 * instance must have recovered by itself, lost nothing, dead-lettered nothing, fulfilled nothing twice, and
 * backed off instead of spinning, and a reconcile pass over the run must find nothing. Recovery times are measured
 * and printed.
 *
 * Only the outage project runs this (one file at a time, after everything else): it stops shared services.
 */
import { expect } from 'vitest';
import type { App } from '../../src/app.js';
import { maxAttemptsWithin, type TransientRetry } from '../../src/roles/bridge/backoff-gate.js';
import { stackDown, stackUp, type ServiceName } from '../../tools/stack/index.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { createDb } from '../../src/adapters/store/db.js';
import { orderWorkflowId } from '../../workflows/api.js';
import {
  PacedProducer,
  caughtUp,
  counter,
  endOffsets,
  events,
  reached,
  recordsOn,
  scenario,
  tenantRows,
  waitFor,
  type Scenario,
} from '../support/harness.js';
import { reconcilesClean } from '../support/reconcile.js';

/** The bridge's backoff in these tests: 100 ms doubling to 2 s (half-jittered). */
export const RETRY: TransientRetry = { initialDelayMs: 100, maxDelayMs: 2_000 };
const LANES = 8;
/** Partitions of a scenario's topic (test/support/harness.ts). */
const PARTITIONS = 3;
const ORDERS = 150;

export interface OutageContext {
  s: Scenario;
  app: App;
  /** Order ids produced so far. */
  producedOrders(): string[];
  tenant: string;
}

export interface OutageOptions {
  service: ServiceName;
  /** True once the running instance visibly felt the outage (retries counted, activities failing...). */
  felt(ctx: OutageContext): Promise<boolean>;
  /** Least time the service stays down, counted from when it stopped; default 10 s. */
  minOutageMs?: number;
  /** Extra checks once everything settled. */
  verify?(ctx: OutageContext & { result: OutageResult }): Promise<void> | void;
}

export interface OutageResult {
  service: ServiceName;
  /** Stop requested → service down, ms. */
  stopMs: number;
  /** Service down → start requested, ms. */
  downMs: number;
  /** Start requested → service ready, ms. */
  startMs: number;
  /** Service ready → the group committed everything produced before it was ready (and a probe after it), ms. */
  recoveryToCaughtUpMs: number;
  /** Service ready → every order produced before it was ready shipped, ms. */
  recoveryToShippedMs: number;
  /** Retries counted by the bridge from the stop until it caught up, by operation. */
  retries: Record<string, number>;
  /** Failures counted by the bridge over the same time, by operation. */
  failures: Record<string, number>;
  /** Upper bound on retries per operation derived from the backoff policy and that window. */
  retryBound: number;
  /** Records produced while the service was down. */
  producedWhileDown: number;
  /** Sends the test producer had to repeat (Kafka down). */
  failedSends: number;
}

/** Sum of a labelled counter per value of `label`. */
async function byLabel(app: App, name: string, label: string): Promise<Record<string, number>> {
  const metric = app.metrics.registry.getSingleMetric(name);
  const out: Record<string, number> = {};
  if (!metric) return out;
  for (const v of (await metric.get()).values) {
    const key = String((v.labels as Record<string, unknown>)[label]);
    out[key] = (out[key] ?? 0) + v.value;
  }
  return out;
}

function minus(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

/** Placements for `orders` orders, keyed by order, with an exact re-send (same event id) after every 15th. */
function placementStream(tenant: string, orders: number) {
  const records: { value: ReturnType<typeof events.placed>; key?: string; partition?: number }[] = [];
  for (let i = 0; i < orders; i += 1) {
    const orderId = `o-${String(i).padStart(3, '0')}`;
    records.push({
      key: orderId,
      value: events.placed(tenant, orderId, {
        data: { customerId: `c-${i}`, lines: [{ sku: `SKU-${i % 7}`, quantity: 1 + (i % 3) }] },
      }),
    });
    if (i % 15 === 14) {
      // A duplicate of an earlier placement, on a partition of its own choosing (not necessarily its key's).
      const earlier = records[records.length - 10]!;
      records.push({ key: earlier.key, value: earlier.value, partition: i % PARTITIONS });
    }
  }
  return records;
}

export async function runOutage(opts: OutageOptions): Promise<OutageResult> {
  const minOutageMs = opts.minOutageMs ?? 10_000;
  const s = await scenario(`outage-${opts.service}`);
  const db = createDb(runtimeConnection(s.config), 2);
  let restarted = false;
  try {
    const runStartedAt = Date.now() - 1000;
    const app = await s.startInstance({ bridgeRetry: RETRY });
    const tenant = s.tenant();
    const records = placementStream(tenant, ORDERS);
    const stream = new PacedProducer((chunk) => s.produce(chunk), records, { chunk: 5, paceMs: 400 });
    const producedOrders = () => [...new Set(records.slice(0, stream.produced).map((r) => r.value.orderId))];
    const ctx: OutageContext = { s, app, tenant, producedOrders };
    const shipped = async (orderIds: string[]) => {
      const rows = await tenantRows(db, tenant);
      const done = new Set(rows.filter((r) => r.status === 'shipped').map((r) => r.order_id));
      return orderIds.every((o) => done.has(o));
    };

    await waitFor(
      'the stream to be under way',
      async () => (await counter(app, 'fulfilment_bridge_records_total', { outcome: 'accepted' })) >= 30,
    );
    const retriesBefore = await byLabel(app, 'fulfilment_retries_total', 'operation');
    const failuresBefore = await byLabel(app, 'fulfilment_failures_total', 'operation');

    const t0 = Date.now();
    await stackDown({ services: [opts.service], quiet: true });
    const downAt = Date.now();
    const producedAtDown = stream.produced;
    let upRequestedAt = 0;
    try {
      await waitFor(`the instance to feel the ${opts.service} outage`, () => opts.felt(ctx), 120_000, 250);
      // The outage itself: the service stays down at least this long, whatever the instance does meanwhile.
      const rest = minOutageMs - (Date.now() - downAt);
      if (rest > 0) await new Promise((r) => setTimeout(r, rest));
    } finally {
      upRequestedAt = Date.now();
      await stackUp({ services: [opts.service], quiet: true });
      restarted = true;
    }
    const upAt = Date.now();
    const producedWhileDown = stream.produced - producedAtDown;
    const ordersAtRestart = producedOrders();
    // A probe on every partition (an unknown event type: ignored and committed, no effect) marks "now": the
    // group has recovered once its commits pass the probes, i.e. everything produced before them.
    await waitFor(
      'the probes to be produced',
      () =>
        s
          .produce(
            Array.from({ length: PARTITIONS }, (_, partition) => ({
              partition,
              value: { ...events.placed(tenant, 'probe'), type: 'orders.RecoveryProbe' },
            })),
          )
          .then(() => true),
      60_000,
      250,
    );
    const backlog = await endOffsets(s.admin, s.config.ORDERS_TOPIC);

    await waitFor(
      'the group to catch up with what was produced before the restart',
      () => reached(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC, backlog),
      240_000,
      100,
    );
    const caughtUpAt = Date.now();
    await waitFor('every order produced before the restart to ship', () => shipped(ordersAtRestart), 240_000, 250);
    const shippedAt = Date.now();
    const retries = minus(await byLabel(app, 'fulfilment_retries_total', 'operation'), retriesBefore);
    const failures = minus(await byLabel(app, 'fulfilment_failures_total', 'operation'), failuresBefore);

    // Worst case per operation: every partition's gate (or the consumer's restart loop) fails each record in
    // flight in its lanes once, then probes once per backoff delay over the whole window.
    const windowMs = caughtUpAt - t0;
    const retryBound = PARTITIONS * (LANES + maxAttemptsWithin(windowMs, RETRY));

    await stream.done;
    await waitFor(
      'the group to consume the whole stream',
      () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
      240_000,
    );
    const allOrders = [...new Set(records.map((r) => r.value.orderId))];
    await waitFor('every order to ship', () => shipped(allOrders), 240_000, 250);

    const result: OutageResult = {
      service: opts.service,
      stopMs: downAt - t0,
      downMs: upRequestedAt - downAt,
      startMs: upAt - upRequestedAt,
      recoveryToCaughtUpMs: caughtUpAt - upAt,
      recoveryToShippedMs: shippedAt - upAt,
      retries,
      failures,
      retryBound,
      producedWhileDown,
      failedSends: stream.failedSends,
    };
    process.stdout.write(`\n[outage:${opts.service}] ${JSON.stringify(result)}\n`);

    // Backed off, never spun: retries per operation stay within what the backoff policy allows in the window.
    for (const [operation, n] of Object.entries(retries))
      expect(n, `retries of ${operation}`).toBeLessThanOrEqual(retryBound);
    // Lost nothing, fulfilled nothing twice: one row per order, shipped, and one shipment each.
    const rows = await tenantRows(db, tenant);
    expect(rows).toHaveLength(ORDERS);
    expect(rows.filter((r) => r.status !== 'shipped')).toEqual([]);
    const shipments = await s.shipments(tenant);
    const perOrder = new Map<string, number>();
    for (const sh of shipments) perOrder.set(sh.orderId, (perOrder.get(sh.orderId) ?? 0) + 1);
    expect(shipments.filter((sh) => sh.status !== 'dispatched')).toEqual([]);
    expect(perOrder.size).toBe(ORDERS);
    expect([...perOrder.values()].every((n) => n === 1)).toBe(true);
    // Dead-lettered nothing valid.
    expect(await recordsOn(s.admin, s.config.DLQ_TOPIC)).toBe(0);
    expect(await counter(app, 'fulfilment_events_processed_total', { outcome: 'dead-lettered' })).toBe(0);
    expect(await counter(app, 'fulfilment_bridge_records_total', { outcome: 'dead-lettered' })).toBe(0);
    // Every record was accounted for by the bridge: handed over, or a duplicate it recognised.
    // (A record handled again after a crash counts twice, so this is a floor.)
    const handled = await byLabel(app, 'fulfilment_bridge_records_total', 'outcome');
    const accounted = (handled['accepted'] ?? 0) + (handled['recorded-late'] ?? 0) + (handled['duplicate'] ?? 0);
    expect(accounted, `records the bridge finished, by outcome: ${JSON.stringify(handled)}`).toBeGreaterThanOrEqual(
      records.length,
    );
    await opts.verify?.({ ...ctx, result });
    // And the reconciler, as production runs it, finds the topic, the ledger, the store, Temporal, the warehouse and
    // the status topic agreeing about every order of the run.
    await reconcilesClean(s, { tenants: [tenant], since: new Date(runStartedAt) });
    return result;
  } finally {
    // Whatever happened above, the shared service is running again when this returns.
    if (!restarted) await stackUp({ services: [opts.service], quiet: true });
    await db.end();
    await s.close();
  }
}

/** Highest attempt number of any pending activity among the workflows of `orderIds` (0 when none is pending). */
export async function maxPendingActivityAttempt(app: App, tenant: string, orderIds: string[]): Promise<number> {
  let max = 0;
  await Promise.all(
    orderIds.map(async (o) => {
      const d = await app.client.workflow
        .getHandle(orderWorkflowId(tenant, o))
        .describe()
        .catch(() => undefined);
      for (const a of d?.raw.pendingActivities ?? []) max = Math.max(max, a.attempt ?? 0);
    }),
  );
  return max;
}
