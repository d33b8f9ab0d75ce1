/**
 * The brownout rule at low traffic (src/adapters/warehouse/brownout.ts), through the warehouse client against the real
 * development warehouse server, the clock moved by hand: one order every 10 s — far fewer calls than the rule's 10 in
 * 30 s. A warehouse that fails half of everyone's calls must still be judged the warehouse's (the order waits, its
 * attempts unspent), and an order the warehouse fails alone must still be its own. The client runs at its defaults.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DependencyUnavailableError, WarehouseOutageError } from '../../../../src/base/errors.js';
import { createWarehouseClient, type WarehouseClient } from '../../../../src/adapters/warehouse/client.js';
import { startWarehouse, type WarehouseServer } from '../../../../tools/warehouse/server.js';

let warehouse: WarehouseServer;
beforeAll(async () => {
  warehouse = await startWarehouse({ port: 0 });
});
afterAll(async () => warehouse?.close());
afterEach(async () => {
  vi.useRealTimers();
  await faults({ down: false });
});

const faults = (body: object) =>
  fetch(`${warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) }).then((r) => r.json());
const ship = (c: WarehouseClient, key: string) =>
  c.ship(key, { tenantId: 'acme', orderId: key, lines: [{ sku: 's', quantity: 1 }] });
/** How a call ended: shipped, the warehouse's failure (the order waits), or the order's own (an attempt spent). */
const outcome = (c: WarehouseClient, key: string) =>
  ship(c, key).then(
    () => 'shipped',
    (e: unknown) => (e instanceof WarehouseOutageError ? 'waits' : e instanceof DependencyUnavailableError ? 'own' : e),
  );

/** One call every 10 s of the clock, `failing(i)` saying whether the warehouse fails the i-th; the outcomes. */
async function oneEvery10s(c: WarehouseClient, keys: string[], failing: (i: number) => boolean) {
  const outcomes: unknown[] = [];
  for (const [i, key] of keys.entries()) {
    vi.setSystemTime(Date.UTC(2026, 0, 1) + i * 10_000);
    await faults({ down: failing(i) });
    outcomes.push(await outcome(c, key));
  }
  return outcomes;
}

describe('the brownout rule at one order every 10 s', () => {
  it('judges a warehouse that fails half of everyone’s calls the warehouse’s, from the first failure on', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const c = createWarehouseClient(warehouse.url);
    const keys = Array.from({ length: 40 }, (_, i) => `half-${i}`);
    const outcomes = await oneEvery10s(c, keys, (i) => i % 2 === 0);
    expect(outcomes.filter((_, i) => i % 2 === 0)).toEqual(Array(20).fill('waits'));
    expect(outcomes.filter((_, i) => i % 2 === 1)).toEqual(Array(20).fill('shipped'));
  });

  it('still holds an order the warehouse fails alone, among others it answers, as that order’s own', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const c = createWarehouseClient(warehouse.url);
    // Ten orders answered, then one order failing at every try while every other order is answered.
    const keys = [...Array.from({ length: 10 }, (_, i) => `ok-${i}`)];
    for (let i = 0; i < 20; i += 1) keys.push(i % 2 === 0 ? 'poison' : `ok-more-${i}`);
    const outcomes = await oneEvery10s(c, keys, (i) => keys[i] === 'poison');
    expect(outcomes.filter((_, i) => keys[i] === 'poison')).toEqual(Array(10).fill('own'));
    expect(outcomes.filter((_, i) => keys[i] !== 'poison')).toEqual(Array(20).fill('shipped'));
  });
});
