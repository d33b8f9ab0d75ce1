/**
 * The development warehouse aims its faults at one tenant (`POST /admin/faults {"tenants": {...}}`): that tenant's
 * shipments fail or slow down, everyone else's are answered as usual; and it counts the shipment requests in flight,
 * in all and by tenant (`GET /admin/stats`), a request leaving the count when its response ends or its client hangs up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWarehouseClient, type WarehouseClient } from '../../../../src/adapters/warehouse/client.js';
import { startWarehouse, type InFlight, type WarehouseServer } from '../../../../tools/warehouse/server.js';

let warehouse: WarehouseServer;
beforeAll(async () => {
  warehouse = await startWarehouse({ port: 0 });
});
afterAll(async () => warehouse?.close());

const faults = (body: object) =>
  fetch(`${warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) }).then((r) => r.json());
const inFlight = async () =>
  ((await (await fetch(`${warehouse.url}/admin/stats`)).json()) as { inFlight: InFlight }).inFlight;
const ship = (c: WarehouseClient, tenantId: string, orderId: string, signal?: AbortSignal) =>
  c.ship(`ship/${tenantId}/${orderId}`, { tenantId, orderId, lines: [{ sku: 's', quantity: 1 }] }, signal);
const shipped = (c: WarehouseClient, tenantId: string, orderId: string) =>
  ship(c, tenantId, orderId).then(
    () => true,
    () => false,
  );

describe('the development warehouse aims a fault at one tenant', () => {
  it("fails or slows that tenant's shipments alone, and counts shipment requests in flight by tenant", async () => {
    const c = createWarehouseClient(warehouse.url, { breaker: { failures: 1000 } });
    await faults({ tenants: { broken: { down: true }, slow: { latencyMs: 3_000 } } });
    expect(await shipped(c, 'broken', 'b-1')).toBe(false);
    expect(await shipped(c, 'calm', 'c-1')).toBe(true);
    const slow = ship(c, 'slow', 's-1');
    const hungUp = new AbortController();
    const abandoned = ship(c, 'slow', 's-2', hungUp.signal).catch(() => 'gave up');
    await expect.poll(async () => (await inFlight()).byTenant.slow?.now).toBe(2);
    hungUp.abort();
    expect(await abandoned).toBe('gave up');
    // The client that hung up leaves the count at once; the other request is still being answered.
    await expect.poll(async () => (await inFlight()).byTenant.slow?.now).toBe(1);
    expect((await slow).status).toBe('dispatched');
    const after = await inFlight();
    expect(after).toMatchObject({ now: 0, byTenant: { slow: { now: 0, max: 2 }, calm: { now: 0, max: 1 } } });
    // A later POST replaces the tenants' faults whole.
    await faults({ tenants: {} });
    expect(await shipped(c, 'broken', 'b-2')).toBe(true);
  });
});
