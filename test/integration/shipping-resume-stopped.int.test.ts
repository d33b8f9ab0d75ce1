/**
 * `fulfilment shipping resume --rate` killed part-way and never run again (docs/cli.md, "Pausing shipping"): the
 * release it held runs out, a worker ends the pause (recording why), the workers' resumers wake every order it still
 * held, and each ships once; the scope can be paused again.
 *
 * Setting this test changes, and why: the orders' own checks come every hour (ORDER_WAIT_RECHECK_SECONDS, default 300),
 * so that no order can ship by its own check within the test: only the end of the pause and the resumers' wake-ups
 * ship them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { pausesInForce } from '../../src/adapters/store/shipment-waits.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { cliOf } from '../support/operator.js';
import { endLeftoverPauses, orderRows, resumeKilledOnceItWakes, untilPauseHolds } from '../support/shipping-pause.js';

const ORDERS = 6;

let s: Scenario;
let db: Db;
beforeAll(async () => {
  s = await scenario('resume-stopped', { ORDER_WAIT_RECHECK_SECONDS: '3600' });
  await s.startInstance();
  db = createDb(runtimeConnection(s.config), 2);
});
afterAll(async () => {
  await endLeftoverPauses(db, s);
  await db?.end();
  await s?.close();
});

const rows = (tenant: string) => orderRows(db, tenant);

describe('a resume --rate that stops for good', () => {
  it(
    'ends its pause once its lease runs out; the resumers wake what it held and every order ships',
    { timeout: 480_000 },
    async () => {
      const cli = cliOf(s);
      const tenant = s.tenant('held');
      expect((await cli('shipping', 'pause', '--tenant', tenant, '--reason', 'stock take', '--by', 'ops')).code).toBe(
        0,
      );
      await untilPauseHolds(s, tenant);
      await s.produce(
        Array.from({ length: ORDERS }, (_, i) => ({ key: `${tenant}/o-${i}`, value: events.placed(tenant, `o-${i}`) })),
      );
      await waitFor(
        'every order to wait for the pause',
        async () => (await rows(tenant)).filter((r) => r.waiting_for === 'pause' && r.waiting_since).length === ORDERS,
        120_000,
      );

      // Killed once it woke its first order; nobody runs it again.
      const said = await resumeKilledOnceItWakes(s, tenant, 1);
      const killedWith = (await rows(tenant)).filter((r) => r.status === 'pending').length;

      // Every order ships once, none fails; the pause ended, recorded as such, and the scope can be paused again.
      await waitFor(
        'every order to ship',
        async () => (await rows(tenant)).every((r) => r.status === 'shipped'),
        240_000,
        500,
      );
      const shipments = (await s.shipments(tenant)).filter((x) => x.orderId.startsWith('o-'));
      expect(shipments.map((x) => x.status).sort()).toEqual(Array(ORDERS).fill('dispatched'));
      expect((await pausesInForce(db)).find((p) => p.tenantId === tenant)).toBeUndefined();
      const ended = (
        await db.query<{ resumed_at: Date | null }>('SELECT resumed_at FROM shipping_pauses WHERE tenant_id = $1', [
          tenant,
        ])
      ).rows;
      expect(ended).toHaveLength(1);
      expect(ended[0]?.resumed_at).toBeInstanceOf(Date);
      const again = await cli('shipping', 'pause', '--tenant', tenant, '--reason', 'next window', '--by', 'ops');
      expect(again.code).toBe(0);
      expect(again.stdout).toContain(`paused shipping for tenant ${tenant}`);
      const lastSaid = said.trim().split('\n').at(-1);
      console.log(
        `[resume-stopped] killed after "${lastSaid}" with ${killedWith} of ${ORDERS} orders pending; all shipped once`,
      );
    },
  );
});
