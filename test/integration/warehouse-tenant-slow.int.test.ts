/**
 * A tenant whose shipments the warehouse answers slowly does not hold another tenant's shipments behind its own. One
 * tenant's 12 orders arrive at once and the local warehouse takes 12 s over each of that tenant's shipment requests
 * (and no time over anyone else's); once its shipment activities' calls fill the worker's warehouse slots, another
 * tenant's 8 orders arrive, steadily. The worker's slots are shared by weight (src/base/tenants/weighted-slots.ts): the
 * steady tenant's calls take the next slots that free, ahead of the slow tenant's queue, so all 8 of its orders ship
 * before the slow tenant's second round of calls is answered. The worker's gauge shows the slow tenant holding every
 * slot with calls waiting before the steady orders arrive, and nothing held once all shipped. Every order of both
 * tenants ships once.
 *
 * Settings this test changes, and why: WAREHOUSE_MAX_CONCURRENT_CALLS is 4 instead of 50, so that 12 slow orders fill
 * a worker's calls and queue (at the default, more than 50 would be needed at once). Everything else is the service's
 * default: 12 s is under the client's timeout (30 s), so the slow tenant's calls are answered, not failed; it is over
 * the quick shipment's 3 s, so its orders ship through the shipment activity (heartbeating while queued).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { createDb, type Db } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import type { InFlight } from '../../tools/warehouse/server.js';
import { PacedProducer, counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { idsByStatus, untilTenantSettled } from '../support/tenant-outcomes.js';

const SLOTS = 4;
const SLOW_MS = 12_000;
const SLOW_ORDERS = 12;
const STEADY_ORDERS = 8;

describe('a tenant whose shipments the warehouse answers slowly', () => {
  let s: Scenario;
  let app: App;
  let db: Db;
  beforeAll(async () => {
    s = await scenario('warehouse-tenant-slow', { WAREHOUSE_MAX_CONCURRENT_CALLS: String(SLOTS) });
    app = await s.startInstance();
    db = createDb(runtimeConnection(s.config), 2);
  });
  afterAll(async () => {
    await db?.end();
    await s?.close();
  });

  const inFlight = async () =>
    ((await (await fetch(`${s.warehouse.url}/admin/stats`)).json()) as { inFlight: InFlight }).inFlight;
  const placed = (tenant: string, n: number) =>
    Array.from({ length: n }, (_, i) => {
      const id = `o-${String(i).padStart(2, '0')}`;
      return { key: `${tenant}:${id}`, value: events.placed(tenant, id) };
    });

  const slots = (tenant: string, state: 'in-use' | 'waiting') =>
    counter(app, 'fulfilment_warehouse_slots', { tenant, state });

  it("holds the other tenant's orders behind no more than the next slot that frees, never behind its queue", async () => {
    const slow = s.tenant('slow');
    const steady = s.tenant('steady');
    await fetch(`${s.warehouse.url}/admin/faults`, {
      method: 'POST',
      body: JSON.stringify({ tenants: { [slow]: { latencyMs: SLOW_MS } } }),
    });
    await s.produce(placed(slow, SLOW_ORDERS));
    // The slow tenant's calls fill the worker's slots, and the rest of its calls wait for one (the worker's gauge) —
    // its shipment activities' calls: its quick attempts (3 s) are over, and their first round of calls went out.
    await waitFor(
      "the slow tenant's shipment activities to hold every slot, with calls waiting",
      async () =>
        s.warehouse.requests().filter((r) => r.idempotencyKey?.startsWith(`ship/${slow}/`)).length >= 2 * SLOTS &&
        (await slots(slow, 'in-use')) === SLOTS &&
        (await slots(slow, 'waiting')) >= 1,
      30_000,
      50,
    ).catch(async (err: unknown) => {
      const flight = (await inFlight()).byTenant[slow];
      console.log(
        `[warehouse tenant slow] the slow tenant's requests in flight: ${flight?.now}, at most ${flight?.max}`,
      );
      throw err;
    });
    expect((await inFlight()).byTenant[slow]?.now).toBe(SLOTS);
    const stream = new PacedProducer((chunk) => s.produce(chunk), placed(steady, STEADY_ORDERS), {
      chunk: 1,
      paceMs: 250,
    });
    await stream.done;
    const steadyRows = await untilTenantSettled(db, steady, STEADY_ORDERS, 'the steady tenant to ship', 120_000);
    const slowRows = await untilTenantSettled(db, slow, SLOW_ORDERS, 'the slow tenant to ship', 180_000);

    // Completion order (the store's clock): every steady order shipped before the slow tenant's 5th shipment — that is,
    // before its second round of calls (slots 5 to 8 of its 12 orders) was answered.
    const shipped = [...steadyRows, ...slowRows]
      .filter((r) => r.shipped_at)
      .sort((a, b) => a.shipped_at!.getTime() - b.shipped_at!.getTime())
      .map((r) => (r.tenant_id === steady ? 'steady' : 'slow'));
    const lastSteady = shipped.lastIndexOf('steady');
    const slowBefore = shipped.slice(0, lastSteady).filter((t) => t === 'slow').length;
    const flight = await inFlight();
    console.log(
      `[warehouse tenant slow] shipped in order: ${shipped.join(' ')}; slow orders shipped before the last steady one: ${slowBefore}; ` +
        `the warehouse had at most ${flight.max} shipment requests in flight (slow ${flight.byTenant[slow]?.max}, steady ${flight.byTenant[steady]?.max}; ` +
        `a quick attempt given up at its 3 s is counted there until its connection's close arrives)`,
    );
    expect(idsByStatus(steadyRows)('shipped')).toHaveLength(STEADY_ORDERS);
    expect(idsByStatus(slowRows)('shipped')).toHaveLength(SLOW_ORDERS);
    expect(slowBefore).toBeLessThanOrEqual(SLOTS);
    // Once it is all over, no slot is held and no call waits (the gauge moved down as it moved up).
    for (const tenant of [slow, steady])
      for (const state of ['in-use', 'waiting'] as const) expect(await slots(tenant, state)).toBe(0);
    // Exactly once: one dispatched shipment per order.
    for (const tenant of [slow, steady]) {
      const dispatched = (await s.shipments(tenant)).filter((x) => x.status === 'dispatched');
      expect(new Set(dispatched.map((x) => x.orderId)).size).toBe(dispatched.length);
      expect(dispatched).toHaveLength(tenant === slow ? SLOW_ORDERS : STEADY_ORDERS);
    }
  });
});
