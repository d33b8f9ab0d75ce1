/**
 * A dead warehouse is probed, not hammered: the circuit breaker opens after a few failures, then lets one probe
 * through per half-open period, however many orders are retrying; when the warehouse comes back every order
 * ships exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';

const ORDERS = 20;

describe('warehouse outage', () => {
  let s: Scenario;
  let app: App;
  beforeAll(async () => {
    s = await scenario('warehouse-down', { WAREHOUSE_BREAKER_FAILURES: '3', WAREHOUSE_BREAKER_HALF_OPEN_MS: '2000' });
    app = await s.startInstance();
  });
  afterAll(async () => s?.close());

  const faults = (body: object) => fetch(`${s.warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) });
  const requestTimes = async () => ((await (await fetch(`${s.warehouse.url}/admin/stats`)).json()) as { requestTimes: number[] }).requestTimes;
  const circuit = async () => (await app.metrics.circuitState.get()).values.find((v) => v.labels.dependency === 'warehouse')?.value;

  it('keeps the request rate bounded while it is down, and ships every order once when it is back', async () => {
    await faults({ down: true });
    const tenant = s.tenant();
    await s.produce(Array.from({ length: ORDERS }, (_, i) => ({ value: events.placed(tenant, `o-${i}`) })));

    await waitFor('the circuit to open', async () => (await circuit()) === 2);
    const openedAt = Date.now();
    // Let the outage last through several half-open periods: wait for three probes after the circuit opened.
    await waitFor('three probes', async () => (await requestTimes()).filter((t) => t > openedAt + 500).length >= 3, 60_000);
    const outageEnd = Date.now();
    const times = await requestTimes();
    const before = times.filter((t) => t <= openedAt + 500).length;
    const after = times.filter((t) => t > openedAt + 500);
    const perSecond = new Map<number, number>();
    for (const t of after) perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1);
    const peak = Math.max(...perSecond.values());
    const rate = after.length / ((outageEnd - openedAt) / 1000);
    console.log(`warehouse down: ${before} requests until the circuit opened, then ${after.length} in ${((outageEnd - openedAt) / 1000).toFixed(1)} s (${rate.toFixed(2)}/s, peak ${peak} in one second) for ${ORDERS} retrying orders`);
    // Open circuit: one probe per 2 s half-open period, whatever the number of orders retrying.
    expect(peak).toBeLessThanOrEqual(2);
    expect(before).toBeLessThanOrEqual(ORDERS);

    await faults({ down: false });
    const recoveredAt = Date.now();
    for (let i = 0; i < ORDERS; i += 1) {
      await waitFor(`o-${i} to ship`, async () => (await s.row(tenant, `o-${i}`))?.status === 'shipped', 150_000);
    }
    console.log(`warehouse back: all ${ORDERS} orders shipped ${((Date.now() - recoveredAt) / 1000).toFixed(1)} s later`);
    const shipments = await s.shipments(tenant);
    expect(shipments).toHaveLength(ORDERS);
    expect(new Set(shipments.map((x) => x.orderId)).size).toBe(ORDERS);
    expect(await circuit()).toBe(0);
  });
});
