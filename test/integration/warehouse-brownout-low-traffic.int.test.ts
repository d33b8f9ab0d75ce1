/**
 * A brownout at low traffic, on the real stack: one order every 10 s (a few a minute, far fewer calls than the brownout
 * rule's 10 in 30 s) while the local warehouse answers 503 to half of its shipment requests. The rule judges on the
 * worker's last 10 calls however old, and a worker with fewer calls so far makes the order wait: no order fails by the
 * brownout, each ships once, and the orders the warehouse refuses for good (422) are still held as failed.
 *
 * The service runs at its defaults (the order's retries, the breaker, the rule, the resumer). The judgement itself,
 * call by call, is test/unit/adapters/warehouse/brownout-low-traffic.unit.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { PacedProducer, events, scenario, tenantRows, waitFor, type Scenario } from '../support/harness.js';
import { idsByStatus, untilTenantSettled } from '../support/tenant-outcomes.js';
import { faultsOf } from '../support/operator.js';

const ORDERS = 15;
const PACE_MS = 10_000;

let s: Scenario;
let db: Db;
beforeAll(async () => {
  s = await scenario('brownout-low-traffic');
  await s.startInstance();
  db = createDb(runtimeConnection(s.config), 2);
});
afterAll(async () => {
  await faultsOf(s)({ errorRate: 0, rejectOrders: [] }).catch(() => undefined);
  await db?.end();
  await s?.close();
});

describe('a brownout at one order every 10 s', () => {
  it('fails no order but the ones the warehouse refuses; every other ships once', { timeout: 600_000 }, async () => {
    const tenant = s.tenant();
    const ids = Array.from({ length: ORDERS }, (_, i) => `o-${String(i).padStart(2, '0')}`);
    const refused = ['o-04', 'o-11'];
    await faultsOf(s)({ errorRate: 0.5, rejectOrders: refused });
    const stream = new PacedProducer(
      (chunk) => s.produce(chunk),
      ids.map((id) => ({ key: id, value: events.placed(tenant, id) })),
      { chunk: 1, paceMs: PACE_MS },
    );
    await stream.done;
    // The last order has met the brownout too (settled, or waiting for it), before the warehouse is fixed.
    await waitFor(
      'the last order to settle or wait',
      async () => {
        const last = (await tenantRows(db, tenant)).find((r) => r.order_id === ids.at(-1));
        return last && (last.status !== 'pending' || last.waiting_since);
      },
      120_000,
    );
    const failedDuring = (await tenantRows(db, tenant)).filter((r) => r.status === 'failed').map((r) => r.order_id);
    expect(failedDuring.filter((id) => !refused.includes(id))).toEqual([]);

    await faultsOf(s)({ errorRate: 0, rejectOrders: refused });
    const rows = await untilTenantSettled(db, tenant, ORDERS, 'every order to settle', 180_000);
    const byStatus = idsByStatus(rows);
    const dispatched = (await s.shipments(tenant)).filter((x) => x.status === 'dispatched');
    console.log(
      `[brownout at low traffic] ${ORDERS} orders, one per ${PACE_MS / 1000} s, 50 % errors: shipped ${byStatus('shipped').length}, ` +
        `failed ${byStatus('failed').join(',')}; ${dispatched.length} dispatched shipments`,
    );
    expect(byStatus('failed')).toEqual(refused);
    expect(byStatus('shipped')).toHaveLength(ORDERS - refused.length);
    expect(dispatched).toHaveLength(ORDERS - refused.length);
    expect(new Set(dispatched.map((x) => x.orderId))).toEqual(new Set(byStatus('shipped')));
  });
});
