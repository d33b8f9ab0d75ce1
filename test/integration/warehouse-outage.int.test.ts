/**
 * A warehouse down for everyone is not an order's failure. Orders keep arriving at a steady rate while the local
 * warehouse answers 503 to every shipment for far longer than an order's whole retry budget: no order fails; the
 * warehouse meets the breaker's few failures and then about one request per half-open period, however many orders
 * wait; when it answers again the waiting orders resume by themselves, oldest first and paced, and each ships once.
 * In the same run, orders the warehouse refuses for good (422) are held as failed as before, and cancellations sent
 * to waiting orders win at once: recorded, nothing dispatched, the key burnt.
 *
 * Settings this test changes, and why: the breaker opens after 3 failures and half-opens after 2 s, the resumer
 * probes every 3 s, and an order's own retries run 100 ms → 1 s (a budget of about 5 s instead of about 3 minutes),
 * so that an outage of 40 s outlasts the budget eight times within a test's time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { PacedProducer, counter, events, scenario, tenantRows, waitFor, type Scenario } from '../support/harness.js';
import { idsByStatus } from '../support/tenant-outcomes.js';
import { createDb } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { waitSummary } from '../../src/adapters/store/shipment-waits.js';
import { OrderStatusAttribute, orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';

const BREAKER_FAILURES = 3;
const HALF_OPEN_MS = 2_000;
const OUTAGE_MS = 40_000;
/** An order's own attempts at 100 ms doubling to 1 s, 8 in all: at most 0.1+0.2+0.4+0.8+1+1+1 s of delays. */
const OLD_BUDGET_MS = 4_500;
const RATE = 5;
/** Calls that may be in flight when the breaker opens: the orders arriving over 2 s of a loaded machine's latency. */
const IN_FLIGHT_AT_OPENING = RATE * 2;
/** A gauge's value in the instance's registry (counter() reads any metric). */
const gauge = counter;

describe('a warehouse outage', () => {
  let s: Scenario;
  let app: App;
  beforeAll(async () => {
    s = await scenario('warehouse-down', {
      WAREHOUSE_BREAKER_FAILURES: String(BREAKER_FAILURES),
      WAREHOUSE_BREAKER_HALF_OPEN_MS: String(HALF_OPEN_MS),
      WAREHOUSE_PROBE_SECONDS: '3',
      WAREHOUSE_RETRY_INITIAL_MS: '100',
      WAREHOUSE_RETRY_MAX_MS: '1000',
    });
    app = await s.startInstance();
  });
  afterAll(async () => {
    await faults({ down: false, rejectOrders: [] }).catch(() => undefined);
    await s?.close();
  });

  const faults = (body: object) =>
    fetch(`${s.warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) });
  const shipmentRequests = () =>
    s.warehouse
      .requests()
      .filter((r) => r.method === 'POST' && r.path === '/shipments')
      .map((r) => ({ at: Date.parse(r.receivedAt), whileDown: r.whileDown }));

  it('makes orders wait, not fail, and they resume by themselves, paced, when it answers again', async () => {
    expect(OUTAGE_MS).toBeGreaterThan(8 * OLD_BUDGET_MS);
    const tenant = s.tenant();
    const db = createDb(runtimeConnection(s.config), 1);
    try {
      // Orders the warehouse refuses for good, and orders whose cancellation arrives while they wait.
      const refused = ['o-007', 'o-070', 'o-150'];
      const cancelledWhileWaiting = ['o-020', 'o-060', 'o-120'];
      await faults({ down: true, rejectOrders: refused });
      const downAt = Date.now();
      const count = Math.round((OUTAGE_MS / 1000) * RATE);
      const ids = Array.from({ length: count }, (_, i) => `o-${String(i).padStart(3, '0')}`);
      const stream = new PacedProducer(
        (chunk) => s.produce(chunk),
        ids.map((id) => ({ key: id, value: events.placed(tenant, id) })),
        { chunk: 1, paceMs: 1000 / RATE },
      );

      await waitFor(
        'orders to wait for the warehouse',
        async () => (await gauge(app, 'fulfilment_orders_waiting')) >= 10,
        60_000,
      );
      // Cancellations of orders that are waiting now.
      for (const id of cancelledWhileWaiting) {
        await waitFor(
          `${id} to wait`,
          async () =>
            (await s.row(tenant, id))?.status === 'pending' &&
            (await app.client.workflow
              .getHandle(orderWorkflowId(tenant, id))
              .query(orderStatusQuery)
              .then(
                (v) => v.waitingSince !== undefined,
                () => false,
              )),
          60_000,
          100,
        );
        // The Web UI shows it: OrderStatus = "waiting".
        await waitFor(
          `${id}'s OrderStatus to say waiting`,
          async () =>
            (await app.client.workflow.getHandle(orderWorkflowId(tenant, id)).describe()).typedSearchAttributes.get(
              OrderStatusAttribute,
            ) === 'waiting',
          60_000,
          100,
        );
        await s.produce([{ key: id, value: events.cancelled(tenant, id) }]);
      }
      for (const id of cancelledWhileWaiting)
        await waitFor(`${id} to be cancelled`, async () => (await s.row(tenant, id))?.status === 'cancelled', 60_000);
      await stream.done;
      const rest = OUTAGE_MS - (Date.now() - downAt);
      if (rest > 0) await new Promise((r) => setTimeout(r, rest));
      const oldestWait = await gauge(app, 'fulfilment_orders_waiting_oldest_seconds');
      const waitingAtEnd = await gauge(app, 'fulfilment_orders_waiting');

      await faults({ down: false });
      const upAt = Date.now();
      const outageMs = upAt - downAt;
      // Counted by the warehouse's own state when each request arrived, not by the test's clock around the switches
      // (on a loaded machine a request can land between the switch and the test reading its clock).
      const whileDown = shipmentRequests().filter((r) => r.whileDown);
      // Nothing failed during the outage.
      const failedDuring = (await tenantRows(db, tenant)).filter((r) => r.status === 'failed');
      expect(failedDuring).toEqual([]);

      const settled = (r: { status: string }) => r.status !== 'pending';
      await waitFor(
        'every order to settle after the warehouse came back',
        async () => {
          const rows = await tenantRows(db, tenant);
          return rows.length === count && rows.every(settled);
        },
        240_000,
        250,
      );
      const settledAt = Date.now();
      const afterUp = shipmentRequests()
        .filter((r) => !r.whileDown && r.at >= downAt)
        .map((r) => r.at);
      const perSecond = new Map<number, number>();
      for (const t of afterUp) perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1);
      const peak = Math.max(0, ...perSecond.values());
      // The paced rate over any 5 s: a round's wake-ups may land in the next second, so one second alone can hold two.
      const peak5s = Math.max(0, ...afterUp.map((t) => afterUp.filter((u) => u >= t && u < t + 5_000).length));
      const rows = await tenantRows(db, tenant);
      const byStatus = idsByStatus(rows);
      console.log(
        `[warehouse outage] ${count} orders at ${RATE}/s over a ${(outageMs / 1000).toFixed(0)} s outage (${(outageMs / OLD_BUDGET_MS).toFixed(1)} × an order's retry budget); ` +
          `${waitingAtEnd} waiting at its end, the oldest for ${oldestWait.toFixed(0)} s; the warehouse got ${whileDown.length} shipment requests while down ` +
          `(${(whileDown.length / (outageMs / 1000)).toFixed(2)}/s); every order settled ${((settledAt - upAt) / 1000).toFixed(1)} s after it came back, peak ${peak} requests in one second, ${peak5s} in 5 s; ` +
          `shipped ${byStatus('shipped').length}, failed ${byStatus('failed').join(',')}, cancelled ${byStatus('cancelled').join(',')}; resumer woke ${await counter(app, 'fulfilment_shipments_resumed_total', { reason: 'probe' })} to probe, ${await counter(app, 'fulfilment_shipments_resumed_total', { reason: 'resume' })} paced`,
      );

      // The warehouse saw O(1), not O(orders × attempts) — without the breaker every one of the 200 orders would call
      // it, several times: the breaker's failures, then at most one request per half-open period. The local
      // warehouse's `down` fails shipments only: a recall of a cancelled order that goes through the half-open breaker
      // closes it, and the next shipments pay the breaker's failures again before it reopens — once per cancellation.
      // Each time it opens, the shipments already sent before it counted its failures fail too: new orders arrive at
      // RATE/s, and on a loaded machine a failing call can take a second or more (IN_FLIGHT_AT_OPENING).
      const openings = 1 + cancelledWhileWaiting.length;
      expect(whileDown.length).toBeLessThanOrEqual(
        openings * (BREAKER_FAILURES + IN_FLIGHT_AT_OPENING) + Math.ceil(outageMs / HALF_OPEN_MS) + 1,
      );
      expect(waitingAtEnd).toBeGreaterThan(count / 2);
      expect(oldestWait).toBeGreaterThan(OUTAGE_MS / 1000 / 2);
      // Only the orders the warehouse refused for good failed; the cancelled ones stayed cancelled; the rest shipped.
      expect(byStatus('failed')).toEqual(refused);
      expect(byStatus('cancelled')).toEqual(cancelledWhileWaiting);
      expect(byStatus('shipped')).toHaveLength(count - refused.length - cancelledWhileWaiting.length);
      // Paced recovery: the resumer's 20/s (WAREHOUSE_RESUME_PER_SECOND) and a round's overlap, not a herd of every waiting order.
      expect(peak5s).toBeLessThanOrEqual(5 * 20 + 20);
      // Oldest first: the orders that waited longest ship first after it came back.
      const shippedOrder = (await s.shipments(tenant))
        .filter((x) => x.status === 'dispatched' && Date.parse(x.createdAt) >= upAt)
        .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt))
        .map((x) => ids.indexOf(x.orderId));
      const quarter = Math.floor(shippedOrder.length / 4);
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      expect(mean(shippedOrder.slice(0, quarter))).toBeLessThan(mean(shippedOrder.slice(-quarter)));
      // One shipment per shipped order; nothing dispatched for a cancelled one, and its key burnt.
      const shipments = await s.shipments(tenant);
      const dispatched = shipments.filter((x) => x.status === 'dispatched');
      expect(dispatched).toHaveLength(count - refused.length - cancelledWhileWaiting.length);
      expect(new Set(dispatched.map((x) => x.orderId)).size).toBe(dispatched.length);
      for (const id of cancelledWhileWaiting) {
        expect(dispatched.some((x) => x.orderId === id)).toBe(false);
        // A burnt key is kept under the key alone (no tenant): read it by key.
        const key = `ship/${tenant}/${id}`;
        await waitFor(
          `the key of ${id} to be burnt`,
          async () =>
            (
              (await (await fetch(`${s.warehouse.url}/shipments?key=${encodeURIComponent(key)}`)).json()) as {
                status: string;
              }[]
            ).some((x) => x.status === 'cancelled'),
          120_000,
          250,
        );
      }
      // The gauge is read from the store each resumer round: on a loaded machine it follows the rows a round later. It
      // counts every tenant's waiting orders (other files' too): it must come to what the store counts, this tenant's
      // none of them.
      await waitFor(
        'the waiting-orders gauge to follow the store',
        async () => (await gauge(app, 'fulfilment_orders_waiting')) === (await waitSummary(db)).orders,
        60_000,
        250,
      );
    } finally {
      await db.end();
    }
  });
});
