/** The store's own guards on the real PostgreSQL: claim-then-effect under concurrency, versions, and the last line for cancelled orders. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../src/base/config.js';
import { createDb, inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import {
  recordCancellation,
  recordPlacement,
  recordShipped,
  readFulfilment,
} from '../../src/adapters/store/fulfilments.js';
import { claim } from '../../src/adapters/store/processed-events.js';
import { provisionPostgres } from '../../src/roles/provision/schema-and-grants.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';

const placement = { customerId: 'c1', lines: [{ sku: 's', quantity: 1 }] };
let db: Db;
beforeAll(async () => {
  const config = loadConfig();
  await provisionPostgres(config);
  db = createDb(runtimeConnection(config), 6);
});
afterAll(async () => db?.end());

const tenant = () => `store-${randomUUID().slice(0, 12)}`;
/** The change context of a store call made by hand: its events go to a topic no relay publishes. */
const change = (claimKey: string) => ({ topic: 'status.store-test', claimKey });

describe('store', () => {
  it('two concurrent deliveries of one event: exactly one claims and applies, the other sees a duplicate', async () => {
    const t = tenant();
    const eventId = `e-${randomUUID()}`;
    const apply = () =>
      inTenantTransaction(db, t, async (tx) => {
        if (!(await claim(tx, 'fulfilment', t, eventId))) return 'duplicate';
        await recordPlacement(tx, { eventId, tenantId: t, orderId: 'o1', orderVersion: 1 }, placement, change(eventId));
        return 'applied';
      });
    const outcomes = await Promise.all(Array.from({ length: 5 }, apply));
    expect(outcomes.filter((o) => o === 'applied')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'duplicate')).toHaveLength(4);
    const count = await inTenantTransaction(db, t, (tx) => tx.query('SELECT count(*)::int AS n FROM fulfilments'));
    expect(count.rows[0].n).toBe(1);
  });

  it('an older version changes nothing', async () => {
    const t = tenant();
    await inTenantTransaction(db, t, (tx) =>
      recordPlacement(tx, { eventId: 'a', tenantId: t, orderId: 'o1', orderVersion: 3 }, placement, change('a')),
    );
    const stale = await inTenantTransaction(db, t, (tx) =>
      recordCancellation(tx, { eventId: 'b', tenantId: t, orderId: 'o1', orderVersion: 2 }, {}, change('b')),
    );
    expect(stale).toMatchObject({ outcome: 'stale', status: 'pending', orderVersion: 3 });
  });

  it('a cancelled order can never be marked shipped, whatever the caller does', async () => {
    const t = tenant();
    await inTenantTransaction(db, t, (tx) =>
      recordCancellation(tx, { eventId: 'c', tenantId: t, orderId: 'o1', orderVersion: 2 }, {}, change('c')),
    );
    const refused = await inTenantTransaction(db, t, (tx) =>
      recordShipped(tx, t, 'o1', 'shp-1', change(`shipped/${t}/o1`)),
    );
    expect(refused.status).toBe('cancelled');
    await expect(
      inTenantTransaction(db, t, (tx) =>
        tx.query("UPDATE fulfilments SET status = 'shipped', shipped_at = now() WHERE order_id = 'o1'"),
      ),
    ).rejects.toThrow(/can never ship/);
    expect((await inTenantTransaction(db, t, (tx) => readFulfilment(tx, t, 'o1')))?.status).toBe('cancelled');
  });

  it("claims are scoped by tenant: one tenant's event id neither suppresses nor collides with another's", async () => {
    const [a, b] = [tenant(), tenant()];
    const eventId = `shared-${randomUUID()}`;
    expect(await inTenantTransaction(db, a, (tx) => claim(tx, 'fulfilment', a, eventId))).toBe(true);
    expect(await inTenantTransaction(db, b, (tx) => claim(tx, 'fulfilment', b, eventId))).toBe(true);
    // Each tenant's own redelivery is still a duplicate.
    expect(await inTenantTransaction(db, a, (tx) => claim(tx, 'fulfilment', a, eventId))).toBe(false);
    expect(await inTenantTransaction(db, b, (tx) => claim(tx, 'fulfilment', b, eventId))).toBe(false);
  });

  it('a transaction without a tenant sees no rows at all', async () => {
    const client = await db.connect();
    try {
      const res = await client.query('SELECT count(*)::int AS n FROM fulfilments');
      expect(res.rows[0].n).toBe(0);
    } finally {
      client.release();
    }
  });
});
