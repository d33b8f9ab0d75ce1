/**
 * A waiting order whose wait the store does not hold: no resumer can find it, so the order's own run must. Two ways
 * it happens, each forced on the real stack while the warehouse is down:
 * - the wait rows are lost (a restore from before the wait, a manual fix: the test clears them, as the runtime role
 *   can): each run's own check finds the warehouse still down, records its wait again from the time it began, and
 *   counts it (fulfilment_waits_unrecorded_total{reason="row-lost"}, alerted by FulfilmentWaitsUnrecorded); once the
 *   warehouse answers, the resumer wakes them;
 * - the store refuses to record waits: every write of the tenant's rows is refused with permission denied (SQLSTATE
 *   42501, what a revoked grant of the runtime role answers; a trigger of the test's own, on that tenant's rows only,
 *   so the rest of the suite keeps its store). The orders wait for the store, checking again by themselves within 30 s,
 *   spending no attempt (reason="not-recorded"); once writes and the warehouse are back, every order ships.
 * Both: every order ships once, none fails.
 *
 * Settings this test changes, and why: the orders' own checks come every 20 s (ORDER_WAIT_RECHECK_SECONDS, default
 * 300), so that they come within the test's time; the breaker half-opens after 2 s and the resumer probes every 3 s
 * (defaults 10 s and 15 s), so that recovery starts within seconds.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { createDb, inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';

const ORDERS = 30;

let s: Scenario;
let app: App;
let db: Db;
beforeAll(async () => {
  s = await scenario('waits-unrecorded', {
    ORDER_WAIT_RECHECK_SECONDS: '20',
    WAREHOUSE_BREAKER_HALF_OPEN_MS: '2000',
    WAREHOUSE_PROBE_SECONDS: '3',
  });
  app = await s.startInstance();
  db = createDb(runtimeConnection(s.config), 2);
});
afterAll(async () => {
  await faults({ down: false }).catch(() => undefined);
  await db?.end();
  await s?.close();
});

const faults = (body: object) =>
  fetch(`${s.warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) });

async function waits(tenant: string): Promise<{ waiting: number; shipped: number; failed: number; since: Date[] }> {
  return inTenantTransaction(db, tenant, async (tx) => {
    const rows = (
      await tx.query<{ status: string; waiting_since: Date | null }>(
        'SELECT status, waiting_since FROM fulfilments WHERE tenant_id = $1',
        [tenant],
      )
    ).rows;
    return {
      waiting: rows.filter((r) => r.status === 'pending' && r.waiting_since).length,
      shipped: rows.filter((r) => r.status === 'shipped').length,
      failed: rows.filter((r) => r.status === 'failed').length,
      since: rows.flatMap((r) => (r.waiting_since ? [r.waiting_since] : [])),
    };
  });
}

/** ORDERS placements of a fresh tenant, the warehouse down: resolves once every order waits. */
async function waitingTenant(): Promise<string> {
  const tenant = s.tenant();
  await faults({ down: true });
  await s.produce(
    Array.from({ length: ORDERS }, (_, i) => ({ key: `${tenant}/o-${i}`, value: events.placed(tenant, `o-${i}`) })),
  );
  await waitFor(`all ${ORDERS} orders to wait`, async () => (await waits(tenant)).waiting === ORDERS, 180_000);
  return tenant;
}

async function shipEachOnce(tenant: string): Promise<void> {
  await faults({ down: false });
  const end = await waitFor(
    `all ${ORDERS} orders to settle`,
    async () => {
      const w = await waits(tenant);
      return w.shipped + w.failed === ORDERS ? w : undefined;
    },
    240_000,
  );
  expect(end.failed).toBe(0);
  const shipments = await s.shipments(tenant);
  expect(shipments).toHaveLength(ORDERS);
  expect(shipments.filter((x) => x.status !== 'dispatched')).toEqual([]);
}

const unrecorded = (reason: string) => counter(app, 'fulfilment_waits_unrecorded_total', { reason });

describe('a waiting order whose wait the store does not hold', () => {
  it('lost wait rows: each run records its wait again from when it began, counted, and ships once the warehouse answers', async () => {
    const tenant = await waitingTenant();
    const before = (await waits(tenant)).since.map((d) => d.getTime()).sort();
    const counted = await unrecorded('row-lost');
    await inTenantTransaction(db, tenant, (tx) =>
      tx.query(
        `UPDATE fulfilments SET waiting_since = NULL, waited_at = NULL, waiting_reason = NULL, released_at = NULL,
                waiting_task_queue = NULL WHERE tenant_id = $1`,
        [tenant],
      ),
    );
    expect((await waits(tenant)).waiting).toBe(0);

    await waitFor('every wait to be recorded again', async () => (await waits(tenant)).waiting === ORDERS, 180_000);
    expect((await waits(tenant)).since.map((d) => d.getTime()).sort()).toEqual(before);
    expect((await unrecorded('row-lost')) - counted).toBeGreaterThanOrEqual(ORDERS);
    await shipEachOnce(tenant);
  });

  it('a store that refuses to record waits: the orders wait for it, checking again by themselves, no attempt spent', async () => {
    const tenant = await waitingTenant();
    const owner = new pg.Client({ connectionString: s.config.DATABASE_MIGRATION_URL });
    await owner.connect();
    const name = `refuse_${s.suffix.replace(/[^a-z0-9]/g, '_')}`;
    try {
      await owner.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF OLD.tenant_id = '${tenant}' THEN
            RAISE EXCEPTION 'permission denied for table fulfilments' USING ERRCODE = 'insufficient_privilege';
          END IF;
          RETURN NEW;
        END $$`);
      await owner.query(`CREATE TRIGGER ${name} BEFORE UPDATE ON fulfilments FOR EACH ROW EXECUTE FUNCTION ${name}()`);
      const counted = await unrecorded('not-recorded');
      // Every order's own check meets the warehouse still down and cannot record that it waits: no attempt spent.
      await waitFor(
        'the orders to wait unrecorded',
        async () => (await unrecorded('not-recorded')) - counted >= ORDERS,
        180_000,
      );
      expect((await waits(tenant)).failed).toBe(0);
    } finally {
      await owner.query(`DROP TRIGGER IF EXISTS ${name} ON fulfilments`);
      await owner.query(`DROP FUNCTION IF EXISTS ${name}()`);
      await owner.end();
    }
    await shipEachOnce(tenant);
  });
});
