/**
 * The warehouse client against the real development warehouse server: what counts towards the breaker, and the
 * brownout rule — which dependency failures are the warehouse's (the order waits) and which the order's own.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  DependencyUnavailableError,
  InvalidRequestError,
  WarehouseOutageError,
  WarehouseRejectedError,
} from '../../../../src/base/errors.js';
import { createCallWindow } from '../../../../src/adapters/warehouse/brownout.js';
import { createWarehouseClient } from '../../../../src/adapters/warehouse/client.js';
import { startWarehouse, type WarehouseServer } from '../../../../tools/warehouse/server.js';

let warehouse: WarehouseServer;
beforeAll(async () => {
  warehouse = await startWarehouse({ port: 0 });
});
afterAll(async () => warehouse?.close());

const request = (orderId: string, correlationId?: string) => ({
  tenantId: 'acme',
  orderId,
  lines: [{ sku: 's', quantity: 1 }],
  correlationId,
});

describe('warehouse client', () => {
  it("a request one order's data cannot form fails that order alone; the breaker stays closed for everyone", async () => {
    const states: string[] = [];
    const client = createWarehouseClient(warehouse.url, {
      breaker: { failures: 2, halfOpenAfterMs: 60_000, onStateChange: (s) => states.push(s) },
    });
    for (const bad of ['a\r\nx-injected: 1', 'nul\u0000', 'caf\u00e9\u2603', '\u{1F600}']) {
      await expect(client.ship(`ship/acme/${encodeURIComponent(bad)}`, request('o-bad', bad))).rejects.toBeInstanceOf(
        InvalidRequestError,
      );
    }
    expect(states).toEqual([]);
    const receipt = await client.ship('ship/acme/o-good', request('o-good', 'corr-good'));
    expect(receipt.status).toBe('dispatched');
  });

  it('connection failures do count: after the configured number the circuit opens and calls fail fast', async () => {
    const states: string[] = [];
    const client = createWarehouseClient('http://127.0.0.1:9', {
      breaker: { failures: 2, halfOpenAfterMs: 60_000, onStateChange: (s) => states.push(s) },
    });
    for (let i = 0; i < 2; i += 1)
      await expect(client.ship(`k${i}`, request(`o${i}`))).rejects.toBeInstanceOf(DependencyUnavailableError);
    expect(states).toEqual(['open']);
    await expect(client.ship('k3', request('o3'))).rejects.toThrow(/circuit open/);
  });
});

describe('the brownout rule', () => {
  const faults = (body: object) =>
    fetch(`${warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) }).then((r) => r.json());
  afterEach(async () => {
    await faults({ down: false, errorRate: 0, latencyMs: 0, rejectOrders: [] });
  });
  /** A client whose breaker never opens here, so that only the brownout rule judges. */
  const client = (brownout = {}, timeoutMs?: number) =>
    createWarehouseClient(warehouse.url, {
      breaker: { failures: 1000, halfOpenAfterMs: 60_000 },
      brownout,
      ...(timeoutMs ? { timeoutMs } : {}),
    });
  const ship = (c: ReturnType<typeof client>, key: string) => c.ship(key, request(key));
  /** The order's own transient failure: one of its attempts, not a wait. */
  const own = (e: unknown) => e instanceof DependencyUnavailableError && !(e instanceof WarehouseOutageError);
  const shipMany = async (c: ReturnType<typeof client>, prefix: string, n: number) => {
    for (let i = 0; i < n; i += 1) await ship(c, `${prefix}-${i}`);
  };

  it("at the defaults, failures are the warehouse's once ≥ 10 % of ≥ 10 calls failed, for ≥ 3 shipments", async () => {
    const c = client();
    await shipMany(c, 'ok-a', 30);
    await faults({ down: true });
    // 1/31, 2/32, 3/33 failed: under 10 %, each failure is its order's own (an attempt spent).
    for (const k of ['fa-1', 'fa-2', 'fa-3']) await expect(ship(c, k)).rejects.toSatisfy(own);
    // 4/34 ≥ 10 %: the warehouse fails for everyone; the order waits.
    await expect(ship(c, 'fa-4')).rejects.toThrow(WarehouseOutageError);
    await expect(ship(c, 'fa-4')).rejects.toThrow(/failed 5 of its last 35 calls in 30 s, for 4 shipments/);
    expect(c.health().recent).toMatchObject({ calls: 35, failures: 5, failingKeys: 4, unhealthy: true });
    expect(c.health().circuit).toBe('closed');
  });

  it('needs the minimum number of calls and of failing shipments; before those calls a failure waits', async () => {
    const c = client();
    await faults({ down: true });
    // Fewer than 10 calls so far: too few to tell the warehouse's failure from the order's, so the order waits.
    for (let i = 0; i < 9; i += 1) await expect(ship(c, `fb-${i}`)).rejects.toThrow(/too few to tell/);
    await expect(ship(c, 'fb-9')).rejects.toThrow(/failed 10 of its last 10 calls/);

    const alone = client();
    await faults({ down: false });
    await shipMany(alone, 'ok-b', 10);
    await faults({ down: true });
    // One order failing again and again is its own fault, whatever the share: it never makes the others wait.
    for (let i = 0; i < 20; i += 1) await expect(ship(alone, 'fc-poison')).rejects.toSatisfy(own);
    expect(alone.health().recent).toMatchObject({ failures: 20, failingKeys: 1, unhealthy: false });
    await expect(ship(alone, 'fc-x')).rejects.toSatisfy(own);
    await expect(ship(alone, 'fc-y')).rejects.toThrow(WarehouseOutageError); // a third shipment fails too
  });

  it("a refusal (4xx) is the order's in a brownout too, and counts as an answer", async () => {
    const c = client({ minCalls: 3 });
    await faults({ down: true });
    for (const k of ['fd-1', 'fd-2', 'fd-3']) await ship(c, k).catch(() => undefined);
    expect(c.health().recent.unhealthy).toBe(true);
    await faults({ down: false, rejectOrders: ['fd-refused'] });
    await expect(ship(c, 'fd-refused')).rejects.toBeInstanceOf(WarehouseRejectedError);
    expect(c.health().recent).toMatchObject({ calls: 4, failures: 3 });
  });

  it('a timeout is a dependency failure: a slow warehouse is judged like one that fails', async () => {
    // A 1-s timeout, and answers 5 s late once slow: the healthy calls before must fit in the timeout on a loaded
    // machine too (at 100 ms, one did not, with the load at 30 on two cores).
    const c = client({ minCalls: 3 }, 1_000);
    await shipMany(c, 'ok-e', 3);
    await faults({ latencyMs: 5_000 });
    for (const k of ['fe-1', 'fe-2']) await expect(ship(c, k)).rejects.toSatisfy(own);
    await expect(ship(c, 'fe-3')).rejects.toThrow(WarehouseOutageError);
  });
});

describe('the brownout window', () => {
  it('forgets calls older than its length, but always judges on the last minimum number of calls', () => {
    const w = createCallWindow({ windowMs: 30_000, minCalls: 10, failurePercent: 20, minFailingKeys: 3 });
    expect(w.recent(0)).toMatchObject({ calls: 0, judged: false, unhealthy: false });
    for (let i = 0; i < 8; i += 1) w.record(`ok-${i}`, false, 1_000);
    for (let i = 0; i < 2; i += 1) w.record(`f-${i}`, true, 2_000);
    expect(w.recent(2_000)).toMatchObject({ calls: 10, failures: 2, failingKeys: 2, judged: true, unhealthy: false });
    w.record('f-2', true, 3_000); // 3/11 ≥ 20 %, 3 shipments
    expect(w.recent(3_000)).toMatchObject({ calls: 11, failures: 3, failingKeys: 3, unhealthy: true });
    // Past 30 s the oldest answer is forgotten, but the last 10 calls stay, however old: 3 of 10 failed.
    expect(w.recent(31_000)).toMatchObject({ calls: 10, failures: 3, windowMs: 30_000, unhealthy: true });
    expect(w.recent(600_000)).toMatchObject({ calls: 10, failures: 3, windowMs: 599_000, unhealthy: true });
    // New answers push the old failures out.
    for (let i = 0; i < 10; i += 1) w.record(`ok-late-${i}`, false, 601_000);
    expect(w.recent(601_000)).toMatchObject({ calls: 10, failures: 0, windowMs: 30_000, unhealthy: false });
  });
});
