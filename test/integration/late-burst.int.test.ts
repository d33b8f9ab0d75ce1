/**
 * A burst of one order's late events (the events a delivery carries together) on the real stack: recorded through the
 * store in ONE transaction, up to the first event that needs a run, each event with its own outcome report — and per
 * event when something goes wrong:
 * - N events on a closed order: one transaction (every claim has the same xmin), N reports, in order;
 * - duplicates inside a burst: recognised by their id within the same transaction;
 * - event k needs a run: the ones before it recorded, k and the rest untouched (nothing claimed) for the run;
 * - an event PostgreSQL refuses for good in the middle: nothing of the burst written or reported; each event on its
 *   own (what the bridge does next) records the others once and refuses that one as a single event is refused;
 * - through the bridge (Kafka, Temporal, PostgreSQL): the same burst on a closed order dead-letters only the
 *   unstorable event, records the others, and reports each of them once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { createLateEventRecorder } from '../../src/roles/bridge/late-events.js';
import { createOrderStarter } from '../../src/roles/bridge/order-starter.js';
import { createDb, inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import { UnstorableEventError } from '../../src/base/errors.js';
import { CONSUMER_NAME, type OrderEvent, type OutcomeReport } from '../../src/vocabulary/order.js';
import { recordFailed, recordShipped } from '../../src/adapters/store/fulfilments.js';
import { claimThen, recordOrderEvent, type StoreTarget } from '../../src/adapters/store/order-events.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { workflowSettings } from '../../src/domain/workflow-settings.js';
import { tenantWeights } from '../../src/base/tenants/weights.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { caughtUp, counter, events, scenario, waitFor, type Scenario, type TopicWatch } from '../support/harness.js';

const cancel = (tenant: string, order: string, orderVersion: number, eventId?: string) =>
  events.cancelled(tenant, order, { orderVersion, ...(eventId ? { eventId } : {}) }) as OrderEvent;
/** A version PostgreSQL's integer column refuses for good (SQLSTATE 22003): the edge lets it through. */
const UNSTORABLE_VERSION = 3_000_000_000;

describe('a burst of late events: one store transaction, an outcome per event', () => {
  let s: Scenario;
  let db: Db;
  let target: StoreTarget;
  let reports: OutcomeReport[];
  let late: ReturnType<typeof createLateEventRecorder>;

  beforeAll(async () => {
    s = await scenario('late-burst');
    db = createDb(runtimeConnection(s.config), 2);
    target = { db, statusTopic: s.config.STATUS_TOPIC };
    late = createLateEventRecorder(target, (r) => reports.push(r));
  });
  afterAll(async () => {
    await db?.end();
    await s?.close();
  });

  /** An order the store holds settled as `status` (shipped or failed at version 1), as a closed run leaves it. */
  async function settled(tenant: string, order: string, status: 'shipped' | 'failed'): Promise<OrderEvent> {
    const placed = events.placed(tenant, order) as OrderEvent;
    await recordOrderEvent(target, placed);
    await claimThen(target, placed, `${status}/${tenant}/${order}`, (tx, change) =>
      status === 'shipped'
        ? recordShipped(tx, tenant, order, `shp-${order}`, change)
        : recordFailed(tx, tenant, order, 'refused by the warehouse', change),
    );
    reports = [];
    return placed;
  }

  /** The transactions (xmin) that claimed each of `eventIds`, by id; an id never claimed is absent. */
  const claimedBy = (tenant: string, eventIds: readonly string[]) =>
    inTenantTransaction(db, tenant, async (tx) => {
      const r = await tx.query<{ event_id: string; xmin: string }>(
        'SELECT event_id, xmin::text AS xmin FROM processed_events WHERE consumer = $1 AND tenant_id = $2 AND event_id = ANY($3)',
        [CONSUMER_NAME, tenant, eventIds],
      );
      return new Map(r.rows.map((row) => [row.event_id, row.xmin]));
    });

  it('50 distinct cancellations of a shipped order: all recorded in one transaction, each reported once, in order', async () => {
    const tenant = s.tenant();
    await settled(tenant, 'o1', 'shipped');
    const burst = Array.from({ length: 50 }, (_, i) => cancel(tenant, 'o1', i + 2));

    const batch = await late(burst);

    expect(batch.needsRun).toBeUndefined();
    expect(batch.recorded.map((r) => r.event)).toEqual(burst);
    const claims = await claimedBy(
      tenant,
      burst.map((e) => e.eventId),
    );
    expect(claims.size).toBe(50);
    expect(new Set(claims.values()).size).toBe(1);
    expect(reports.map((r) => [r.event.eventId, r.outcome, r.layer])).toEqual(
      burst.map((e) => [e.eventId, 'applied', 'store']),
    );
    expect(await s.row(tenant, 'o1')).toMatchObject({ status: 'shipped', order_version: 51 });
  });

  it('duplicates inside a burst: the copies recognised by their id in the same transaction, the stale version as stale', async () => {
    const tenant = s.tenant();
    const placed = await settled(tenant, 'o1', 'shipped');
    const c2 = cancel(tenant, 'o1', 2);
    const burst = [c2, placed, { ...c2 }, cancel(tenant, 'o1', 2), cancel(tenant, 'o1', 3), { ...c2 }];

    const batch = await late(burst);

    expect(batch.needsRun).toBeUndefined();
    expect(reports.map((r) => r.outcome)).toEqual([
      'applied',
      'duplicate',
      'duplicate',
      'stale',
      'applied',
      'duplicate',
    ]);
    const claims = await claimedBy(
      tenant,
      burst.map((e) => e.eventId),
    );
    // The placement's claim is its run's, from before; the burst's three new ids share one transaction.
    expect(claims.size).toBe(4);
    claims.delete(placed.eventId);
    expect(new Set(claims.values()).size).toBe(1);
    expect(await s.row(tenant, 'o1')).toMatchObject({ status: 'shipped', order_version: 3 });
  });

  it('event k needs a run: the events before it recorded, k and every one after it left untouched for a run', async () => {
    const tenant = s.tenant();
    const placed = await settled(tenant, 'o1', 'failed');
    const before = await s.row(tenant, 'o1');
    // A copy of the placement and an older cancellation need no run; a newer cancellation of a failed order does
    // (its shipment must be recalled), and so everything after it goes to the run too, in order.
    const stale = cancel(tenant, 'o1', 1);
    const newer = cancel(tenant, 'o1', 2);
    const after = [cancel(tenant, 'o1', 3), { ...placed, eventId: `${placed.eventId}-retry` }];
    const burst = [placed, stale, newer, ...after];

    const batch = await late(burst);

    expect(batch.recorded.map((r) => [r.event, r.stored.outcome])).toEqual([
      [placed, 'duplicate'],
      [stale, 'stale'],
    ]);
    expect(batch.needsRun).toMatch(/cancellation of a failed order/);
    expect(reports.map((r) => [r.event.eventId, r.outcome])).toEqual([
      [placed.eventId, 'duplicate'],
      [stale.eventId, 'stale'],
    ]);
    const claims = await claimedBy(
      tenant,
      [newer, ...after].map((e) => e.eventId),
    );
    expect(claims.size).toBe(0);
    expect(await s.row(tenant, 'o1')).toEqual(before);
  });

  it('an event PostgreSQL refuses for good in the middle: nothing of the burst written or reported; each on its own records the others once and refuses that one', async () => {
    const tenant = s.tenant();
    await settled(tenant, 'o1', 'shipped');
    const bad = cancel(tenant, 'o1', UNSTORABLE_VERSION);
    const burst = [cancel(tenant, 'o1', 2), cancel(tenant, 'o1', 3), bad, cancel(tenant, 'o1', 4)];

    const refused = await late(burst).catch((err: unknown) => err);

    expect(refused).toBeInstanceOf(UnstorableEventError);
    expect((refused as Error).message).toContain(bad.eventId);
    expect((refused as Error).message).toMatch(/SQLSTATE 22003/);
    expect(reports).toEqual([]);
    expect(
      (
        await claimedBy(
          tenant,
          burst.map((e) => e.eventId),
        )
      ).size,
    ).toBe(0);
    expect(await s.row(tenant, 'o1')).toMatchObject({ status: 'shipped', order_version: 1, cancel_refused_at: null });

    // What the bridge does with a refused delivery of several events: each on its own, one transaction each.
    const alone = [];
    for (const e of burst) alone.push(await late([e]).catch((err: unknown) => err));
    expect(alone[2]).toBeInstanceOf(UnstorableEventError);
    expect(reports.map((r) => [r.event.eventId, r.outcome])).toEqual(
      burst.filter((e) => e !== bad).map((e) => [e.eventId, 'applied']),
    );
    expect(await s.row(tenant, 'o1')).toMatchObject({ status: 'shipped', order_version: 4 });
  });

  describe('through the bridge, its order run closed', () => {
    let app: App;
    let dlq: TopicWatch;
    /** The events of each delivery the bridge made, by their ids. */
    const deliveries: string[][] = [];
    beforeAll(async () => {
      app = await s.startInstance({
        // An event whose id ends in `-unstorable` is given a version PostgreSQL cannot hold, as if it had reached the
        // bridge past the edge (which refuses that version): the store's refusal is then what the bridge meets.
        wrapStarter: (starter) => ({
          deliver(batch) {
            deliveries.push(batch.map((e) => e.eventId));
            return starter.deliver(
              batch.map((e) => (e.eventId.endsWith('-unstorable') ? { ...e, orderVersion: UNSTORABLE_VERSION } : e)),
            );
          },
        }),
      });
      dlq = await s.watchTopic(s.config.DLQ_TOPIC);
    });
    afterAll(async () => {
      await dlq?.close();
    });

    const shippedAndClosed = async (tenant: string, order: string) => {
      await s.produce([{ key: order, value: events.placed(tenant, order) }]);
      await waitFor(`${order} shipped`, async () => (await s.row(tenant, order))?.status === 'shipped');
      await waitFor(
        `${order}'s run to close`,
        async () =>
          (await app.client.workflow.getHandle(orderWorkflowId(tenant, order)).describe()).status.name !== 'RUNNING',
      );
    };

    it('a delivery of 30 late events: Temporal refuses the start, the store records all 30 in one transaction', async () => {
      const tenant = s.tenant();
      await shippedAndClosed(tenant, 'o1');
      reports = [];
      const starter = createOrderStarter(app.client, s.config.TEMPORAL_TASK_QUEUE, workflowSettings(s.config), late, {
        weightOf: tenantWeights(s.config),
      });
      const burst = Array.from({ length: 30 }, (_, i) => cancel(tenant, 'o1', i + 2));

      expect(await starter.deliver(burst)).toBe('recorded-late');

      const claims = await claimedBy(
        tenant,
        burst.map((e) => e.eventId),
      );
      expect(claims.size).toBe(30);
      expect(new Set(claims.values()).size).toBe(1);
      expect(reports.map((r) => r.event.eventId)).toEqual(burst.map((e) => e.eventId));
      expect(await s.row(tenant, 'o1')).toMatchObject({ status: 'shipped', order_version: 31 });
    });

    it('a burst with an unstorable event in the middle, produced together: that one dead-lettered, the others recorded and reported once each', async () => {
      const tenant = s.tenant();
      await shippedAndClosed(tenant, 'o2');
      const applied = () =>
        counter(app, 'fulfilment_events_processed_total', { type: 'orders.OrderCancelled', outcome: 'applied' });
      const storeDuplicates = () => counter(app, 'fulfilment_duplicates_suppressed_total', { layer: 'store' });
      const [appliedBefore, duplicatesBefore] = [await applied(), await storeDuplicates()];
      const bad = cancel(tenant, 'o2', 5, `${tenant}-o2-unstorable`);
      const burst = [cancel(tenant, 'o2', 2), cancel(tenant, 'o2', 3), bad, cancel(tenant, 'o2', 4)];

      await s.produce(burst.map((e) => ({ key: 'o2', partition: 0, value: e })));
      // Canaries behind it on every partition (the scenario's topic has 3): each ships while the burst is refused.
      const canaries = [0, 1, 2].map((p) => `canary-${p}`);
      await s.produce(canaries.map((id, p) => ({ key: id, partition: p, value: events.placed(tenant, id) })));

      const dead = await waitFor(
        'the unstorable event dead-lettered',
        () => dlq.records.find((r) => r.headers['dlq-event-id'] === bad.eventId),
        90_000,
      );
      expect(dead.headers['dlq-error-class']).toBe('UnstorableEventError');
      await waitFor('the canaries on every partition shipped', async () =>
        (await Promise.all(canaries.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
      );
      // Nothing left retrying: the group commits past the burst and the canaries on every partition.
      await waitFor('the group to commit the burst', () =>
        caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
      );
      expect(await s.row(tenant, 'o2')).toMatchObject({ status: 'shipped', order_version: 4 });
      expect(await applied()).toBe(appliedBefore + 3);
      expect(await storeDuplicates()).toBe(duplicatesBefore);
      expect(dlq.records.filter((r) => r.headers['dlq-tenant-id'] === tenant)).toHaveLength(1);
      // Delivered together first (one lane group), then — refused for good — each on its own.
      const ids = burst.map((e) => e.eventId);
      expect(deliveries.filter((d) => d.some((id) => ids.includes(id)))).toEqual([ids, ...ids.map((id) => [id])]);
    });
  });
});
