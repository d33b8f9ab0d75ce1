/**
 * A warehouse that fails a share of everyone's requests (a brownout), or answers too slowly for the client's timeout,
 * is not an order's failure. Orders arrive at a steady rate while the local warehouse answers 503 to 20 %, then 50 %,
 * of its shipment requests, then takes longer than the client's timeout over every one, each for far longer than an
 * order's whole retry budget: no order fails by it; the brownout rule (src/adapters/warehouse/brownout.ts, at its
 * defaults: over the last 30 s, ≥ 10 calls, ≥ 10 % failed, for ≥ 3 shipments) makes the failing orders wait instead of
 * spending their attempts, the shipment resumer wakes them while the warehouse answers others, and every order ships
 * once. In each case, orders the warehouse refuses for good (422) are still held as failed.
 *
 * Settings this test changes, and why: an order's own retries run 100 ms → 1 s (a budget of about 5 s instead of about
 * 3 minutes), so that a fault of 45 s outlasts it many times within a test's time; the client's timeout is 1 s instead
 * of 30 s, so that a slow warehouse (3 s per request) times a call out in a second — at the default a slow spell would
 * need over 30 s per request and minutes per order. Everything else, the brownout rule and the breaker included, is
 * the service's default.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { PacedProducer, counter, events, scenario, tenantRows, waitFor, type Scenario } from '../support/harness.js';
import { idsByStatus, untilTenantSettled } from '../support/tenant-outcomes.js';
import { createDb, type Db } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';

const RATE = 5;
const FAULT_MS = 45_000;
const TIMEOUT_MS = 1_000;
/** An order's own attempts at 100 ms doubling to 1 s, 8 in all: at most 0.1+0.2+0.4+0.8+1+1+1 s of delays. */
const RETRY_DELAYS_MS = 4_500;
/** The waiting reason the brownout rule gives (src/adapters/warehouse/client.ts), as opposed to the circuit's. */
const BY_THE_RULE = /failed \d+ of its last \d+ calls in 30 s, for \d+ shipments/;

interface Case {
  name: string;
  faults: { errorRate?: number; latencyMs?: number };
  /** An order's retry budget under this fault: its delays, plus each of its 9 calls (the quick one, 8 attempts). */
  budgetMs: number;
  /** Whether the orders that wait must have waited by the brownout rule (a slow warehouse opens the circuit first). */
  byTheRule: boolean;
}

const CASES: Case[] = [
  { name: '20 % errors', faults: { errorRate: 0.2 }, budgetMs: RETRY_DELAYS_MS, byTheRule: true },
  { name: '50 % errors', faults: { errorRate: 0.5 }, budgetMs: RETRY_DELAYS_MS, byTheRule: true },
  {
    name: 'a slow warehouse (3 s, over the 1 s timeout)',
    faults: { latencyMs: 3_000 },
    budgetMs: RETRY_DELAYS_MS + 9 * TIMEOUT_MS,
    byTheRule: false,
  },
];

describe('a warehouse brownout', () => {
  let s: Scenario;
  let app: App;
  let db: Db;
  beforeAll(async () => {
    s = await scenario('warehouse-brownout', {
      WAREHOUSE_RETRY_INITIAL_MS: '100',
      WAREHOUSE_RETRY_MAX_MS: '1000',
      WAREHOUSE_TIMEOUT_MS: String(TIMEOUT_MS),
    });
    app = await s.startInstance();
    db = createDb(runtimeConnection(s.config), 2);
  });
  afterAll(async () => {
    await faults({ errorRate: 0, latencyMs: 0, rejectOrders: [] }).catch(() => undefined);
    await db?.end();
    await s?.close();
  });

  const faults = (body: object) =>
    fetch(`${s.warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) });
  const stats = async () =>
    (await (await fetch(`${s.warehouse.url}/admin/stats`)).json()) as {
      shipmentRequests: number;
      failedRequests: number;
    };
  const resumed = async () =>
    (await counter(app, 'fulfilment_shipments_resumed_total', { reason: 'probe' })) +
    (await counter(app, 'fulfilment_shipments_resumed_total', { reason: 'resume' }));

  for (const c of CASES) {
    it(`${c.name}: no order fails by it, each ships once, and refusals still fail`, async () => {
      expect(FAULT_MS).toBeGreaterThan(3 * c.budgetMs);
      const tenant = s.tenant();
      const count = Math.round((FAULT_MS / 1000) * RATE);
      const ids = Array.from({ length: count }, (_, i) => `o-${String(i).padStart(3, '0')}`);
      const refused = ['o-017', 'o-100', 'o-190'];
      const before = { stats: await stats(), resumed: await resumed() };
      await faults({ errorRate: 0, latencyMs: 0, ...c.faults, rejectOrders: refused });
      const faultAt = Date.now();
      const producedAt = new Map<string, number>();
      const stream = new PacedProducer(
        async (chunk) => {
          await s.produce(chunk);
          for (const r of chunk) producedAt.set(r.key!, Date.now());
        },
        ids.map((id) => ({ key: id, value: events.placed(tenant, id) })),
        { chunk: 1, paceMs: 1000 / RATE },
      );

      // The fault is judged the warehouse's: orders wait (by the brownout rule, where the circuit stays closed).
      let waitedWith: string | undefined;
      await waitFor(
        c.byTheRule ? 'an order to wait by the brownout rule' : 'orders to wait for the warehouse',
        async () => {
          const reasons = (await tenantRows(db, tenant)).flatMap(
            (r) => (r as unknown as { waiting_reason: string | null }).waiting_reason ?? [],
          );
          waitedWith = reasons.find((r) => !c.byTheRule || BY_THE_RULE.test(r));
          return waitedWith !== undefined;
        },
        FAULT_MS,
        100,
      );
      await stream.done;
      const rest = FAULT_MS - (Date.now() - faultAt);
      if (rest > 0) await new Promise((r) => setTimeout(r, rest));
      // Nothing failed by the fault while it lasted: only the refusals can have (their 422 is an answer).
      const failedDuring = (await tenantRows(db, tenant)).filter((r) => r.status === 'failed').map((r) => r.order_id);
      expect(failedDuring.filter((id) => !refused.includes(id))).toEqual([]);

      await faults({ errorRate: 0, latencyMs: 0 });
      const clearAt = Date.now();
      const rows = await untilTenantSettled(db, tenant, count, 'every order to settle after the fault ended', 120_000);
      const settledAt = Date.now();
      const byStatus = idsByStatus(rows);
      const after = await stats();
      const requests = after.shipmentRequests - before.stats.shipmentRequests;
      const failedRequests = after.failedRequests - before.stats.failedRequests;
      // From the placement's acknowledgement by Kafka to the order's row saying shipped (one machine, one clock).
      const shipMs = rows
        .filter((r) => r.shipped_at)
        .map((r) => r.shipped_at!.getTime() - producedAt.get(r.order_id)!)
        .sort((a, b) => a - b);
      const shipments = await s.shipments(tenant);
      const dispatched = shipments.filter((x) => x.status === 'dispatched');
      console.log(
        `[warehouse brownout: ${c.name}] ${count} orders at ${RATE}/s over ${((clearAt - faultAt) / 1000).toFixed(0)} s of fault ` +
          `(${(FAULT_MS / c.budgetMs).toFixed(1)} × an order's retry budget); the warehouse got ${requests} shipment requests ` +
          `(${failedRequests} answered 503 or 422; ${(requests / count).toFixed(2)} per order); ` +
          `shipped ${byStatus('shipped').length}, failed ${byStatus('failed').join(',')}; ` +
          `time to ship median ${((shipMs[Math.floor(shipMs.length / 2)] ?? 0) / 1000).toFixed(1)} s, max ${((shipMs.at(-1) ?? 0) / 1000).toFixed(1)} s; ` +
          `every order settled ${((settledAt - clearAt) / 1000).toFixed(1)} s after the fault ended; ` +
          `the resumer woke ${(await resumed()) - before.resumed}; an order waited with: ${waitedWith}`,
      );

      // Only the orders the warehouse refused for good failed; every other order shipped.
      expect(byStatus('failed')).toEqual(refused);
      expect(byStatus('shipped')).toHaveLength(count - refused.length);
      // Exactly once: one dispatched shipment per shipped order, under its key, none for a refused one.
      expect(dispatched).toHaveLength(count - refused.length);
      expect(new Set(dispatched.map((x) => x.key)).size).toBe(dispatched.length);
      expect(new Set(dispatched.map((x) => x.orderId))).toEqual(new Set(byStatus('shipped')));
      for (const r of rows.filter((x) => x.status === 'shipped'))
        expect(dispatched.find((x) => x.orderId === r.order_id)?.id).toBe(r.shipment_id);
      // The waiting orders were woken by the resumer, and none of this tenant's stays waiting. (Not the
      // fulfilment_orders_waiting gauge: it counts every tenant's, and other files' orders wait meanwhile.)
      expect((await resumed()) - before.resumed).toBeGreaterThan(0);
      expect(
        (await tenantRows(db, tenant)).filter((r) => (r as unknown as { waiting_since: Date | null }).waiting_since),
      ).toEqual([]);
    });
  }
});
