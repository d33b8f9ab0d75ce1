import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import type { App } from '../../src/app.js';
import { counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';

// The stack is real end to end: a record produced to the real broker is consumed by the bridge, starts a
// workflow on the real Temporal dev server, whose activities write PostgreSQL and call the warehouse.
describe('pipeline on the real stack', () => {
  let s: Scenario;
  let app: App;
  beforeAll(async () => {
    s = await scenario('pipeline');
    app = await s.startInstance();
  });
  afterAll(async () => s?.close());

  it('a placement produced to Kafka becomes one shipped fulfilment row in PostgreSQL', async () => {
    const tenant = s.tenant();
    const event = events.placed(tenant, 'order-1');
    await s.produce([{ key: `${tenant}/order-1`, value: event }]);

    const row = await waitFor('the order to ship', async () => {
      const r = await s.row(tenant, 'order-1');
      return r?.status === 'shipped' ? r : undefined;
    });
    expect(row).toMatchObject({ tenant_id: tenant, order_id: 'order-1', order_version: 1, customer_id: 'cust-1' });
    expect(row.shipped_at).toBeInstanceOf(Date);
    expect(await s.shipments(tenant)).toHaveLength(1);

    const handle = app.client.workflow.getHandle(orderWorkflowId(tenant, 'order-1'));
    const view = await handle.query(orderStatusQuery);
    expect(view).toMatchObject({ status: 'shipped', orderVersion: 1, appliedEvents: 1 });
    const description = await handle.describe();
    expect(description.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value])).toEqual(
      expect.arrayContaining([
        ['TenantId', tenant],
        ['OrderId', 'order-1'],
        ['OrderStatus', 'shipped'],
      ]),
    );
    // The bridge's hand-off and the worker's decision are two counters: neither counts the other's.
    expect(await app.metrics.registry.getSingleMetricAsString('fulfilment_bridge_records_total')).toContain(
      'outcome="accepted"',
    );
    await waitFor(
      'the worker to count the event applied',
      async () => (await counter(app, 'fulfilment_events_processed_total', { outcome: 'applied' })) >= 1,
    );
    expect(await counter(app, 'fulfilment_events_processed_total', { outcome: 'accepted' })).toBe(0);
  });
});
