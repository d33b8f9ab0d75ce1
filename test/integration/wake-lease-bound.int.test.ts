/**
 * A release's lease stays bounded however often an order is released, and an order whose run is gone is set aside
 * rather than released for ever (migration 010). On the real store, with rows placed in the state a long-waiting order
 * reaches (the runtime role writes them, as its own transactions can; no workflow needed):
 * - an order released 1,100 times since its last wait (≈ 11 days of 15-minute leases) is released again, and so is
 *   every other waiting order of the round — 009's lease overflowed there and failed the whole round;
 * - the count of releases stops once the lease reached its cap: it grows 4 → 5 at a lease of 60 s (480 s → 960 s,
 *   capped at 900) and stays 5 after that;
 * - a lease longer than the cap (WAKE_LEASE_SECONDS 1200) is honoured: not released 1,000 s after its release;
 * - the resumer's wake-up of an order with no run (the real Temporal answers WorkflowNotFound) sets it aside: released
 *   no more, counted by orders_waiting_summary(); once a run of it waits again, it is released again;
 * - `fulfilment order retry` of such an order starts a run from the store, which ships it, once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { recordWait, releaseWaitingOrders, waitSummary } from '../../src/adapters/store/shipment-waits.js';
import { connectClient } from '../../src/domain/temporal.js';
import { wakeReleased } from '../../src/roles/worker/wake-orders.js';
import { logger, scenario, waitFor, type Scenario } from '../support/harness.js';
import { cliOf } from '../support/operator.js';

let s: Scenario;
let db: Db;
/** Tenants whose orders this file made wait: their waits end with it, so no other file's count of waiting orders (every
 * tenant's, read by the workers' resumers) meets them. */
const waitingTenants = new Set<string>();
beforeAll(async () => {
  s = await scenario('wake-lease');
  db = createDb(runtimeConnection(s.config), 2);
});
afterAll(async () => {
  for (const tenant of waitingTenants)
    await inTenantTransaction(db, tenant, (tx) =>
      tx.query("UPDATE fulfilments SET status = 'cancelled' WHERE tenant_id = $1 AND status = 'pending'", [tenant]),
    );
  await db?.end();
  await s?.close();
});

interface WaitRow {
  /** Seconds ago the order was last released (none: never). */
  releasedAgo?: number;
  releases?: number;
}

/** A pending, placed order of `tenant` that waits for the warehouse, as a long outage leaves it. */
async function waitingOrder(tenant: string, orderId: string, w: WaitRow = {}): Promise<void> {
  waitingTenants.add(tenant);
  await inTenantTransaction(db, tenant, async (tx) => {
    await tx.query(
      `INSERT INTO fulfilments (tenant_id, order_id, order_version, status, customer_id, lines, placed_at,
                                waiting_since, waited_at, waiting_reason, waiting_task_queue, waiting_for,
                                released_at, releases, last_event_id)
       VALUES ($1, $2, 1, 'pending', 'c-1', '[{"sku":"sku-1","quantity":1}]', now() - interval '2 days',
               now() - interval '2 days', now() - interval '1 day', 'warehouse down', $3, 'outage',
               CASE WHEN $4::float8 IS NULL THEN NULL ELSE now() - make_interval(secs => $4::float8) END, $5, 'e-' || $2)`,
      [tenant, orderId, s.config.TEMPORAL_TASK_QUEUE, w.releasedAgo ?? null, w.releases ?? 0],
    );
  });
}

async function releasesOf(tenant: string, orderId: string): Promise<number> {
  return inTenantTransaction(
    db,
    tenant,
    async (tx) =>
      (await tx.query<{ releases: number }>('SELECT releases FROM fulfilments WHERE tenant_id = $1 AND order_id = $2', [
        tenant,
        orderId,
      ]))!.rows[0]!.releases,
  );
}

const release = (tenant: string, leaseSeconds?: number) =>
  releaseWaitingOrders(db, 100, { tenantId: tenant, ...(leaseSeconds ? { leaseSeconds } : {}) }).then((orders) =>
    orders.map((o) => o.orderId).sort(),
  );

describe('a wake-up lease', () => {
  it('is bounded however often the order was released: the round still releases it and every other order', async () => {
    const tenant = s.tenant();
    await waitingOrder(tenant, 'o-released-1100-times', { releasedAgo: 1000, releases: 1100 });
    await waitingOrder(tenant, 'o-never-released');
    expect(await release(tenant)).toEqual(['o-never-released', 'o-released-1100-times']);
    expect(await releasesOf(tenant, 'o-released-1100-times')).toBe(1100);
  });

  it('stops counting releases once the lease reached its cap', async () => {
    const tenant = s.tenant();
    await waitingOrder(tenant, 'o-4', { releasedAgo: 1000, releases: 4 });
    await waitingOrder(tenant, 'o-5', { releasedAgo: 1000, releases: 5 });
    expect(await release(tenant, 60)).toEqual(['o-4', 'o-5']);
    expect(await releasesOf(tenant, 'o-4')).toBe(5);
    expect(await releasesOf(tenant, 'o-5')).toBe(5);
  });

  it('longer than the cap is honoured, not cut to 15 minutes', async () => {
    const tenant = s.tenant();
    await waitingOrder(tenant, 'o-within', { releasedAgo: 1000, releases: 1 });
    await waitingOrder(tenant, 'o-past', { releasedAgo: 1300, releases: 1 });
    expect(await release(tenant, 1200)).toEqual(['o-past']);
  });
});

describe('a waiting order whose run is gone', () => {
  it('is set aside and counted, released again once a run of it waits, and repaired by `order retry`', async () => {
    const tenant = s.tenant();
    await waitingOrder(tenant, 'o-gone');
    const client = await connectClient(s.config);
    try {
      const before = await waitSummary(db);
      const released = await releaseWaitingOrders(db, 10, { tenantId: tenant });
      expect(released.map((o) => o.orderId)).toEqual(['o-gone']);
      const tally = await wakeReleased({ client, db, logger }, released);
      expect(tally.gone.map((o) => o.orderId)).toEqual(['o-gone']);
      expect((await waitSummary(db)).runGone).toBeGreaterThanOrEqual(before.runGone + 1);

      // Its lease long run out: still not released.
      await inTenantTransaction(db, tenant, (tx) =>
        tx.query(
          "UPDATE fulfilments SET released_at = released_at - interval '1 hour', run_gone_at = run_gone_at - interval '1 hour' WHERE tenant_id = $1",
          [tenant],
        ),
      );
      expect(await release(tenant)).toEqual([]);

      // A run of it waits again: released again.
      await recordWait(db, {
        tenantId: tenant,
        orderId: 'o-gone',
        reason: 'warehouse down',
        taskQueue: s.config.TEMPORAL_TASK_QUEUE,
        waitingFor: 'outage',
      });
      expect(await release(tenant)).toEqual(['o-gone']);
      expect((await wakeReleased({ client, db, logger }, [])).gone).toEqual([]);
    } finally {
      await client.connection.close();
    }
  });

  it('ships once when an operator retries it: a run from the store', async () => {
    const tenant = s.tenant();
    await waitingOrder(tenant, 'o-stranded');
    await s.startInstance();
    const r = await cliOf(s)('order', 'retry', `${tenant}/o-stranded`, '--reason', 'its run was terminated by hand');
    expect(r.stdout).toContain(`restarted ${tenant}/o-stranded (repair run): pending with no run`);
    expect(r.code).toBe(0);
    await waitFor('the stranded order to ship', async () => (await s.row(tenant, 'o-stranded'))?.status === 'shipped');
    const shipments = await s.shipments(tenant);
    expect(shipments.map((x) => [x.orderId, x.lines])).toEqual([['o-stranded', [{ sku: 'sku-1', quantity: 1 }]]]);
  });
});
