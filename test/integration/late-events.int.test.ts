/**
 * Late events at the service's defaults (runs close the moment the order settles), on the real stack: every event gets
 * a recorded outcome whatever became of its order's run — closed within the namespace retention, closed failed, or
 * forgotten by Temporal — and the same outcome in each case:
 * - a cancellation of a shipped order is recorded as refused in the store and published once as CancellationRefused;
 * - a redelivered placement is recognised by its event id, an older version as stale, and neither starts a run;
 * - a late cancellation of a failed order starts a run from the store that cancels it and burns the shipment key;
 * - the eager start → signal race: the run closes failed between the refused start and the signal, and the
 *   cancellation still settles the order as cancelled, its key burnt.
 */
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { createOrderStarter } from '../../src/roles/bridge/order-starter.js';
import type { StatusEvent } from '../../src/adapters/status-events/event.js';
import { workflowSettings } from '../../src/domain/workflow-settings.js';
import { tenantWeights } from '../../src/base/tenants/weights.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { type OrderEvent } from '../../src/vocabulary/order.js';
import { caughtUp, counter, events, scenario, waitFor, type Scenario, type TopicWatch } from '../support/harness.js';
import { faultsOf } from '../support/operator.js';

describe('late events at the defaults: recorded, whatever became of the run', () => {
  let s: Scenario;
  let app: App;
  let watch: TopicWatch;

  beforeAll(async () => {
    s = await scenario('late-events');
    app = await s.startInstance();
    watch = await s.watchTopic(s.config.STATUS_TOPIC);
  });
  afterAll(async () => {
    await faultsOf(s)({ rejectOrders: [] }).catch(() => undefined);
    await watch?.close();
    await s?.close();
  });

  const statusEvents = (tenant: string, order: string) =>
    watch.records
      .filter((r) => r.key?.toString() === `${tenant}/${order}`)
      .map((r) => JSON.parse(r.value!.toString()) as StatusEvent);
  /** The runs Temporal holds for the order, newest first. */
  const runs = async (tenant: string, order: string) => {
    const out: { runId: string; status: string }[] = [];
    for await (const w of app.client.workflow.list({ query: `WorkflowId = '${orderWorkflowId(tenant, order)}'` }))
      out.push({ runId: w.runId, status: w.status.name });
    return out;
  };
  /** Waits until visibility lists exactly these runs' statuses for the order, newest first (it lags a close). */
  const runsAre = (tenant: string, order: string, statuses: string[]) =>
    waitFor(
      `${tenant}/${order}'s runs to be ${statuses.join(', ')}`,
      async () => JSON.stringify((await runs(tenant, order)).map((r) => r.status)) === JSON.stringify(statuses),
    );
  /** The warehouse's entry for the order's key (a recall of a key never shipped leaves it burnt: `cancelled`). */
  const keyEntry = async (tenant: string, order: string) => {
    const res = await fetch(`${s.warehouse.url}/shipments?key=${encodeURIComponent(`ship/${tenant}/${order}`)}`);
    return ((await res.json()) as { status: string }[])[0];
  };
  const drained = () =>
    waitFor('the group to commit every record', () =>
      caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
    );
  const closed = (tenant: string, order: string) =>
    waitFor(
      `${tenant}/${order}'s run to close`,
      async () =>
        (await app.client.workflow.getHandle(orderWorkflowId(tenant, order)).describe()).status.name !== 'RUNNING',
    );

  it('six shipped orders, then their cancellations: each recorded as refused and published once as CancellationRefused; no run opens', async () => {
    const tenant = s.tenant();
    const orders = ['a', 'b', 'c', 'd', 'e', 'f'];
    await s.produce(orders.map((o) => ({ key: o, value: events.placed(tenant, o) })));
    for (const o of orders) await waitFor(`${o} shipped`, async () => (await s.row(tenant, o))?.status === 'shipped');
    for (const o of orders) await closed(tenant, o);
    const late = await counter(app, 'fulfilment_bridge_records_total', {
      type: 'orders.OrderCancelled',
      outcome: 'recorded-late',
    });

    await s.produce(orders.map((o) => ({ key: o, value: events.cancelled(tenant, o, { orderVersion: 2 }) })));
    for (const o of orders) {
      const row = await waitFor(`${o}'s refused cancellation`, async () => {
        const r = await s.row(tenant, o);
        return r?.cancel_refused_at ? r : undefined;
      });
      expect(row).toMatchObject({ status: 'shipped', order_version: 2 });
      await waitFor(`${o}'s CancellationRefused`, () =>
        statusEvents(tenant, o).some((e) => e.type === 'fulfilment.CancellationRefused'),
      );
    }
    await drained();
    for (const o of orders) {
      expect(statusEvents(tenant, o).map((e) => e.type)).toEqual([
        'fulfilment.Shipped',
        'fulfilment.CancellationRefused',
      ]);
      await runsAre(tenant, o, ['COMPLETED']);
    }
    expect(
      await counter(app, 'fulfilment_bridge_records_total', {
        type: 'orders.OrderCancelled',
        outcome: 'recorded-late',
      }),
    ).toBe(late + orders.length);
    expect((await s.shipments(tenant)).every((x) => x.status === 'dispatched')).toBe(true);
  });

  it('a redelivered placement and an older cancellation of a closed order: a duplicate by event id and a stale version, nothing changed', async () => {
    const tenant = s.tenant();
    const placed = events.placed(tenant, 'o1', { orderVersion: 3 });
    await s.produce([{ key: 'o1', value: placed }]);
    const before = await waitFor('o1 shipped', async () => {
      const r = await s.row(tenant, 'o1');
      return r?.status === 'shipped' ? r : undefined;
    });
    await closed(tenant, 'o1');
    // The copy with the same id, and the same placement as a producer's retry under a new id (its version not newer).
    const dup = await counter(app, 'fulfilment_duplicates_suppressed_total', { layer: 'store' });
    const stale = async () =>
      (await counter(app, 'fulfilment_events_processed_total', { type: 'orders.OrderCancelled', outcome: 'stale' })) +
      (await counter(app, 'fulfilment_events_processed_total', { type: 'orders.OrderPlaced', outcome: 'stale' }));
    const staleBefore = await stale();
    const hinted = await counter(app, 'fulfilment_duplicates_suppressed_total', { layer: 'bridge' });

    await s.produce([
      { key: 'o1', value: placed },
      { key: 'o1', value: { ...placed, eventId: `${placed.eventId}-retry` } },
      { key: 'o1', value: events.cancelled(tenant, 'o1', { orderVersion: 2 }) },
    ]);
    await drained();
    // The same id: this bridge's hint skips it (it handed it over), or — another bridge, a restart — the store's ledger.
    await waitFor(
      'the duplicate recognised',
      async () =>
        (await counter(app, 'fulfilment_duplicates_suppressed_total', { layer: 'store' })) +
          (await counter(app, 'fulfilment_duplicates_suppressed_total', { layer: 'bridge' })) >
        dup + hinted,
    );
    await waitFor('the two older versions decided stale by the store', async () => (await stale()) >= staleBefore + 2);
    expect(await s.row(tenant, 'o1')).toEqual(before);
    await runsAre(tenant, 'o1', ['COMPLETED']);
    expect(statusEvents(tenant, 'o1').map((e) => e.type)).toEqual(['fulfilment.Shipped']);
  });

  it('a failed order: a late duplicate costs no run; its late cancellation starts one from the store that cancels it and burns the key', async () => {
    const tenant = s.tenant();
    await faultsOf(s)({ rejectOrders: ['refused-1'] });
    const placed = events.placed(tenant, 'refused-1');
    await s.produce([{ key: 'refused-1', value: placed }]);
    await waitFor('refused-1 held as failed', async () => (await s.row(tenant, 'refused-1'))?.status === 'failed');
    await closed(tenant, 'refused-1');
    await faultsOf(s)({ rejectOrders: [] });

    await s.produce([{ key: 'refused-1', value: placed }]);
    await drained();
    await runsAre(tenant, 'refused-1', ['FAILED']);

    await s.produce([{ key: 'refused-1', value: events.cancelled(tenant, 'refused-1', { orderVersion: 2 }) }]);
    const row = await waitFor('refused-1 cancelled', async () => {
      const r = await s.row(tenant, 'refused-1');
      return r?.status === 'cancelled' ? r : undefined;
    });
    expect(row).toMatchObject({ order_version: 2, shipped_at: null });
    await waitFor('the key burnt', async () => (await keyEntry(tenant, 'refused-1'))?.status === 'cancelled');
    await closed(tenant, 'refused-1');
    await runsAre(tenant, 'refused-1', ['COMPLETED', 'FAILED']);
    await waitFor('the Cancelled status event', () =>
      statusEvents(tenant, 'refused-1').some((e) => e.type === 'fulfilment.Cancelled'),
    );
    expect(statusEvents(tenant, 'refused-1').map((e) => e.type)).toEqual(['fulfilment.Failed', 'fulfilment.Cancelled']);
  });

  it('past the namespace retention (the closed run deleted, as retention does): the late cancellation starts a run, with the same recorded outcome', async () => {
    const tenant = s.tenant();
    await s.produce([{ key: 'o1', value: events.placed(tenant, 'o1') }]);
    await waitFor('o1 shipped', async () => (await s.row(tenant, 'o1'))?.status === 'shipped');
    await closed(tenant, 'o1');
    const { runId } = await app.client.workflow.getHandle(orderWorkflowId(tenant, 'o1')).describe();
    await app.client.workflowService.deleteWorkflowExecution({
      namespace: s.config.TEMPORAL_NAMESPACE,
      workflowExecution: { workflowId: orderWorkflowId(tenant, 'o1'), runId },
    });
    await waitFor('Temporal to forget the run', async () => (await runs(tenant, 'o1')).length === 0);

    await s.produce([{ key: 'o1', value: events.cancelled(tenant, 'o1', { orderVersion: 2 }) }]);
    const row = await waitFor('the refused cancellation', async () => {
      const r = await s.row(tenant, 'o1');
      return r?.cancel_refused_at ? r : undefined;
    });
    expect(row).toMatchObject({ status: 'shipped', order_version: 2 });
    await waitFor('CancellationRefused', () =>
      statusEvents(tenant, 'o1').some((e) => e.type === 'fulfilment.CancellationRefused'),
    );
    await drained();
    expect(statusEvents(tenant, 'o1').map((e) => e.type)).toEqual([
      'fulfilment.Shipped',
      'fulfilment.CancellationRefused',
    ]);
    await runsAre(tenant, 'o1', ['COMPLETED']);
  });

  it('the eager start → signal race: the run closes failed between the refused start and the signal; the cancellation still cancels the order and burns its key', async () => {
    const tenant = s.tenant();
    await faultsOf(s)({ rejectOrders: ['race-1'] });
    await s.produce([{ key: 'race-1', value: events.placed(tenant, 'race-1') }]);
    await waitFor('race-1 recorded', async () => (await s.row(tenant, 'race-1')) !== undefined);
    // A client whose signal waits until the run has closed: the start is refused (the run is open), and by the time the
    // signal is sent the run has ended failed — the interleaving a busy bridge meets by chance.
    const racing = signalAfterRunCloses(app.client);
    const starter = createOrderStarter(racing, s.config.TEMPORAL_TASK_QUEUE, workflowSettings(s.config), s.late, {
      eager: true,
      weightOf: tenantWeights(s.config),
    });
    const cancel = events.cancelled(tenant, 'race-1', { orderVersion: 2 }) as OrderEvent;
    expect(await starter.deliver([cancel])).toBe('accepted');
    await faultsOf(s)({ rejectOrders: [] });
    const row = await waitFor('race-1 cancelled', async () => {
      const r = await s.row(tenant, 'race-1');
      return r?.status === 'cancelled' ? r : undefined;
    });
    expect(row).toMatchObject({ order_version: 2, shipped_at: null });
    await waitFor('the key burnt', async () => (await keyEntry(tenant, 'race-1'))?.status === 'cancelled');
    await runsAre(tenant, 'race-1', ['COMPLETED', 'FAILED']);
  });
});

/**
 * `client`, but a handle's signal first waits for its run to close (however it ends). A start is sent without
 * `requestEagerStart` (this client is not on a worker's connection, which eager dispatch needs): the calls the starter
 * makes, and what Temporal answers to each, are the eager path's.
 */
function signalAfterRunCloses(client: Client): Client {
  const workflow = new Proxy(client.workflow, {
    get(target, prop, receiver) {
      if (prop === 'start') {
        return (type: string, { requestEagerStart: _eager, ...options }: { requestEagerStart?: boolean }) =>
          (target.start as (t: string, o: object) => Promise<unknown>).call(target, type, options);
      }
      if (prop !== 'getHandle') return Reflect.get(target, prop, receiver) as unknown;
      return (workflowId: string) => {
        const handle = target.getHandle(workflowId);
        return new Proxy(handle, {
          get(h, p, r) {
            if (p !== 'signal') return Reflect.get(h, p, r) as unknown;
            return async (...args: Parameters<typeof handle.signal>) => {
              await h.result().catch(() => undefined);
              return h.signal(...args);
            };
          },
        });
      };
    },
  });
  return new Proxy(client, {
    get: (target, prop, receiver) =>
      prop === 'workflow' ? workflow : (Reflect.get(target, prop, receiver) as unknown),
  });
}
