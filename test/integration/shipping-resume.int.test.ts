/**
 * A pause and its resume through the faults production brings (docs/operating.md, "Pausing shipping"):
 * - a pause held three times longer than the shipment deadline fails none of its orders, though each checks the
 *   warehouse again by itself many times meanwhile;
 * - `fulfilment shipping resume --rate` is SIGKILLed part-way (the pause stays in force, being released; orders it
 *   had released but not yet signalled are released again by their lease) and run again while the warehouse is
 *   down, so that orders it wakes wait again, for the outage: it wakes each pause's order, leaves the ones that wait
 *   for the outage to the workers' resumers, and ends the pause;
 * every order then ships once, none fails, none is left waiting.
 *
 * Settings this test changes, and why: the shipment deadline is 30 s (ORDER_SHIPMENT_DEADLINE_SECONDS, default a day)
 * and the orders' own checks come every 5 s (ORDER_WAIT_RECHECK_SECONDS, default 300), so that a pause outlasts the
 * deadline, checked many times, within the test's time; the breaker half-opens after 2 s and the resumer probes every
 * 3 s (defaults 10 s and 15 s), so that recovery starts within seconds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/db.js';
import { runtimeConnection } from '../../src/store/connection.js';
import { pausesInForce } from '../../src/store/shipment-waits.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { cliOf, faultsOf } from '../support/operator.js';
import { endLeftoverPauses, orderRows, resumeKilledOnceItWakes, untilPauseHolds } from '../support/shipping-pause.js';

const ORDERS = 40;
const DEADLINE_S = 30;

let s: Scenario;
let db: Db;
beforeAll(async () => {
  s = await scenario('shipping-resume', {
    ORDER_SHIPMENT_DEADLINE_SECONDS: String(DEADLINE_S),
    ORDER_WAIT_RECHECK_SECONDS: '5',
    WAREHOUSE_BREAKER_HALF_OPEN_MS: '2000',
    WAREHOUSE_PROBE_SECONDS: '3',
  });
  await s.startInstance();
  db = createDb(runtimeConnection(s.config), 2);
});
afterAll(async () => {
  await faultsOf(s)({ down: false }).catch(() => undefined);
  await endLeftoverPauses(db, s);
  await db?.end();
  await s?.close();
});

async function tally(tenant: string) {
  const rows = await orderRows(db, tenant);
  const waiting = rows.filter((r) => r.status === 'pending' && r.waiting_since);
  return {
    paused: waiting.filter((r) => r.waiting_for === 'pause').length,
    outage: waiting.filter((r) => r.waiting_for === 'outage').length,
    shipped: rows.filter((r) => r.status === 'shipped').length,
    failed: rows.filter((r) => r.status === 'failed').length,
  };
}

describe('a pause and its resume', () => {
  it('outlasts the deadline failing none; resume --rate killed and run again, with re-waits, strands no order', async () => {
    const cli = cliOf(s);
    const faults = faultsOf(s);
    const tenant = s.tenant('held');
    expect((await cli('shipping', 'pause', '--tenant', tenant, '--reason', 'stock take', '--by', 'ops')).code).toBe(0);
    const pausedAt = Date.now();
    await untilPauseHolds(s, tenant);
    await s.produce(
      Array.from({ length: ORDERS }, (_, i) => ({ key: `${tenant}/o-${i}`, value: events.placed(tenant, `o-${i}`) })),
    );
    await waitFor(
      'every order to wait for the pause',
      async () => {
        const t = await tally(tenant);
        if (t.shipped > 0) throw new Error(`${t.shipped} order(s) of a paused tenant shipped`);
        return t.paused === ORDERS;
      },
      120_000,
    );

    // Three deadlines long, each order checking again by itself every 5 s ± 20 %: none fails.
    await waitFor('three deadlines to pass', () => Date.now() - pausedAt >= 3 * DEADLINE_S * 1000, 200_000, 1_000);
    expect(await tally(tenant)).toMatchObject({ paused: ORDERS, failed: 0, shipped: 0 });

    // The resume is killed part-way: the pause stays in force, being released.
    const firstSaid = await resumeKilledOnceItWakes(s, tenant, 2);
    const pause = (await pausesInForce(db)).find((p) => p.tenantId === tenant);
    expect(pause?.releasingAt).toBeDefined();

    // Run again with the warehouse down: what it wakes waits again, for the outage, and is left to the resumers.
    await faults({ down: true });
    const again = await cli(
      'shipping',
      'resume',
      '--tenant',
      tenant,
      '--reason',
      'done',
      '--by',
      'ops',
      '--rate',
      '20',
    );
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`resumed shipping for tenant ${tenant}`);
    expect((await pausesInForce(db)).find((p) => p.tenantId === tenant)).toBeUndefined();
    const afterResume = await tally(tenant);
    await faults({ down: false });

    const end = await waitFor(
      'every order to settle',
      async () => {
        const t = await tally(tenant);
        return t.shipped + t.failed === ORDERS ? t : undefined;
      },
      240_000,
      500,
    );
    expect(end.failed).toBe(0);
    const shipments = (await s.shipments(tenant)).filter((x) => x.orderId.startsWith('o-'));
    expect(shipments).toHaveLength(ORDERS);
    expect(shipments.filter((x) => x.status !== 'dispatched')).toEqual([]);
    console.log(
      `[shipping-resume] ${ORDERS} orders held ${((Date.now() - pausedAt) / 1000).toFixed(0)} s by a pause (deadline ` +
        `${DEADLINE_S} s), none failed; the first resume was killed after: ${firstSaid.trim().split('\n').at(-1)}; ` +
        `after the second (warehouse down): ${afterResume.paused} waiting for the pause, ${afterResume.outage} for the ` +
        `outage, ${afterResume.shipped} shipped; all ${ORDERS} shipped once`,
    );
  });
});
