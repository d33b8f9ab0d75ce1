/**
 * A warehouse that fails for one tenant only, through the warehouse client against the real development warehouse
 * server (its faults aimed at one tenant): the failing tenant's orders are judged on its own calls (they wait, named
 * as that tenant's), the other tenants' failures stay their orders' own, and the breaker — which counts only failures
 * of a warehouse not seen answering the others — stays closed for everyone. When the warehouse fails for everyone, it
 * is an outage for everyone, as before. The client runs at its defaults (breaker: 5 in a row; rule: 30 s, 10 calls,
 * 10 %, 3 shipments).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DependencyUnavailableError, WarehouseOutageError } from '../../../../src/base/errors.js';
import { shipmentKey } from '../../../../src/vocabulary/order.js';
import { createCallWindow } from '../../../../src/adapters/warehouse/brownout.js';
import { createWarehouseClient, type WarehouseClient } from '../../../../src/adapters/warehouse/client.js';
import { startWarehouse, type WarehouseServer } from '../../../../tools/warehouse/server.js';

let warehouse: WarehouseServer;
beforeAll(async () => {
  warehouse = await startWarehouse({ port: 0 });
});
afterAll(async () => warehouse?.close());
afterEach(async () => {
  await faults({ down: false, latencyMs: 0, tenants: {} });
});

const faults = (body: object) =>
  fetch(`${warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) }).then((r) => r.json());
const ship = (c: WarehouseClient, tenantId: string, orderId: string) =>
  c.ship(shipmentKey(tenantId, orderId), { tenantId, orderId, lines: [{ sku: 's', quantity: 1 }] });
/** How a call ended: shipped, the warehouse's failure (the order waits), or the order's own (an attempt spent). */
const outcome = (c: WarehouseClient, tenantId: string, orderId: string) =>
  ship(c, tenantId, orderId).then(
    () => 'shipped',
    (e: unknown) =>
      e instanceof WarehouseOutageError ? 'waits' : e instanceof DependencyUnavailableError ? 'own' : String(e),
  );
const shipMany = async (c: WarehouseClient, tenantId: string, prefix: string, n: number) => {
  for (let i = 0; i < n; i += 1) expect(await outcome(c, tenantId, `${prefix}-${i}`)).toBe('shipped');
};

describe('a warehouse that fails for one tenant', () => {
  it("judges that tenant's failures on its own calls: its orders wait, the others ship, the circuit stays closed", async () => {
    const states: string[] = [];
    const c = createWarehouseClient(warehouse.url, { breaker: { onStateChange: (s) => states.push(s) } });
    await shipMany(c, 'calm', 'before', 12);
    await faults({ tenants: { broken: { down: true } } });
    // The broken tenant's orders, 6 in a row between each of the others' (the breaker opens at 5 in a row).
    const broken: string[] = [];
    const calm: string[] = [];
    for (let i = 0; i < 30; i += 1) {
      broken.push(await outcome(c, 'broken', `b-${i}`));
      if (i % 6 === 0) calm.push(await outcome(c, 'calm', `c-${i}`));
    }
    // Too few of its calls at first (it waits, as a worker's first calls do), then failing by the rule: it waits.
    expect(broken).toEqual(Array(30).fill('waits'));
    expect(calm).toEqual(Array(5).fill('shipped'));
    expect(states).toEqual([]);
    expect(c.health().circuit).toBe('closed');
    await expect(ship(c, 'broken', 'b-last')).rejects.toThrow(
      /failed \d+ of tenant broken's last \d+ calls in 30 s, for \d+ shipments, while it answered 17 of the other tenants' last 17: it fails for tenant broken's orders/,
    );
  });

  it('keeps an order failing alone its own, in a tenant whose other orders the warehouse answers', async () => {
    const c = createWarehouseClient(warehouse.url, { breaker: { failures: 1000 } });
    await shipMany(c, 'calm', 'warm', 12);
    await shipMany(c, 'mixed', 'warm', 10);
    await faults({ tenants: { mixed: { down: true } } });
    // The same shipment again and again: one failing key is never the warehouse's, for the tenant or for everyone.
    for (let i = 0; i < 5; i += 1) expect(await outcome(c, 'mixed', 'poison')).toBe('own');
  });

  it('is an outage for everyone when it fails for every tenant, as before', async () => {
    const states: string[] = [];
    const c = createWarehouseClient(warehouse.url, { breaker: { onStateChange: (s) => states.push(s) } });
    await shipMany(c, 'one', 'warm', 6);
    await shipMany(c, 'two', 'warm', 6);
    await faults({ down: true });
    const outcomes: string[] = [];
    for (let i = 0; i < 6; i += 1) outcomes.push(await outcome(c, i % 2 ? 'one' : 'two', `f-${i}`));
    // The breaker opened after 5 failures in a row; every order waits, whichever its tenant.
    expect(states).toEqual(['open']);
    expect(outcomes.slice(0, 2)).toEqual(['own', 'own']);
    expect(outcomes.slice(2)).toEqual(Array(4).fill('waits'));
  });
});

describe('the brownout window, tenant by tenant', () => {
  it("judges a tenant on its own history — its last calls however old — once the others' calls are answered", () => {
    const w = createCallWindow();
    // A quiet tenant: 10 calls long ago, the last 3 failed, for 3 shipments.
    for (let i = 0; i < 10; i += 1) w.record(`q-${i}`, i >= 7, 1_000 + i, 'quiet');
    // Busy tenants answered, recently: more than 10 calls in the window.
    for (let i = 0; i < 40; i += 1) w.record(`b-${i}`, false, 600_000 + i, i % 2 ? 'busy' : 'other');
    expect(w.judge('quiet', 600_100)).toMatchObject({
      scope: 'tenant',
      calls: { calls: 10, failures: 3, failingKeys: 3, unhealthy: true },
      others: { calls: 40, failures: 0 },
    });
    // A tenant never seen: too few of its calls to tell.
    expect(w.judge('new', 600_100)).toMatchObject({ scope: 'tenant', calls: { calls: 0, judged: false } });
    // Others failing too (≥ 10 %): judged on everyone's calls.
    for (let i = 0; i < 5; i += 1) w.record(`bf-${i}`, true, 600_050 + i, 'busy');
    expect(w.judge('quiet', 600_100)).toMatchObject({ scope: 'everyone' });
  });

  it("judges on everyone's calls when the others were last answered longer ago than ANSWERED_LATELY_MS", () => {
    // The warehouse went down while only this tenant called: the others' answers are 6 s old, so nothing says the
    // warehouse answers anyone now. Judged on everyone's calls, its failures count for the breaker.
    const w = createCallWindow();
    for (let i = 0; i < 20; i += 1) w.record(`o-${i}`, false, 1_000 + i, 'other');
    for (let i = 0; i < 5; i += 1) w.record(`t-${i}`, false, 2_000 + i, 'busy');
    for (let i = 0; i < 5; i += 1) w.record(`f-${i}`, true, 7_020 + i, 'busy');
    expect(w.judge('busy', 7_024)).toMatchObject({
      scope: 'everyone',
      calls: { calls: 30, failures: 5, unhealthy: true },
    });
  });

  it("judges on everyone's calls when the others' are too few to judge", () => {
    const w = createCallWindow();
    for (let i = 0; i < 9; i += 1) w.record(`o-${i}`, false, 1_000, 'other');
    for (let i = 0; i < 5; i += 1) w.record(`f-${i}`, true, 2_000, 'failing');
    expect(w.judge('failing', 2_000)).toMatchObject({
      scope: 'everyone',
      calls: { calls: 14, failures: 5, unhealthy: true },
    });
  });
});
