/**
 * A cancellation that a repair run records while a shipment may be in flight: an order's run is terminated by hand
 * while its shipment request sits at a slow warehouse; the order's cancellation then arrives, and the bridge hands it
 * to a run started from the store (a repair run), which finds the order pending. The warehouse processes the request
 * the terminated run left behind whatever happened to that run, so the repair run must recall the key as the first
 * run would have: the order ends cancelled and nothing is dispatched. At the service's defaults; the warehouse is
 * slow (8 s per request, under the client's 30 s timeout) so that the request is in flight when the run ends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { faultsOf } from '../support/operator.js';

const LATENCY_MS = 8_000;

let s: Scenario;
let app: App;
beforeAll(async () => {
  s = await scenario('repair-cancel');
  app = await s.startInstance();
});
afterAll(async () => {
  await faultsOf(s)({ latencyMs: 0 }).catch(() => undefined);
  await s?.close();
});

describe('a cancellation in a repair run', () => {
  it('recalls the key while the terminated run’s shipment is in flight: cancelled, nothing dispatched', async () => {
    const tenant = s.tenant();
    const order = 'o-1';
    const key = `ship/${tenant}/${order}`;
    await faultsOf(s)({ latencyMs: LATENCY_MS });
    await s.produce([{ key: `${tenant}/${order}`, value: events.placed(tenant, order) }]);
    const inFlight = await waitFor('the shipment request to reach the warehouse', () =>
      s.warehouse.requests().find((r) => r.path === '/shipments' && r.idempotencyKey === key),
    );
    const handle = app.client.workflow.getHandle(orderWorkflowId(tenant, order));
    await handle.terminate('ended by hand while its shipment was in flight');
    expect((await s.row(tenant, order))?.status).toBe('pending');

    await s.produce([{ key: `${tenant}/${order}`, value: events.cancelled(tenant, order, { orderVersion: 2 }) }]);
    await waitFor('the order to be cancelled', async () => (await s.row(tenant, order))?.status === 'cancelled');
    // The request the terminated run left is processed by now (received, then held LATENCY_MS by the warehouse).
    await waitFor(
      'the in-flight request to have been processed',
      () => Date.now() >= Date.parse(inFlight.receivedAt) + LATENCY_MS + 2_000,
      60_000,
      250,
    );
    // The repair run recalls the key (after recording the cancellation, so it may come a moment later).
    await waitFor('the key to be recalled', () =>
      s.warehouse.requests().some((r) => r.path === `/shipments/${encodeURIComponent(key)}/cancel`),
    );
    await waitFor(
      'no shipment of the order left dispatched',
      async () => (await s.shipments(tenant)).every((x) => x.status !== 'dispatched'),
      30_000,
    );
  });
});
