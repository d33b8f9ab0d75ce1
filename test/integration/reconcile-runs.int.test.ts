/**
 * `fulfilment reconcile`, kind `run-missing`, made the way it happens in life: an order waits for a warehouse that is
 * down (pending, its run open), and its run is terminated by hand. Nothing will ever ship it: the resumer wakes a
 * waiting order through its run. The pass names it; `--repair --yes` starts a run from the store (`order retry`'s
 * path), which ships it once the warehouse is back; the next pass agrees.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { ReportJson } from '../../src/reconcile/report.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { events, waitFor } from '../support/harness.js';
import { reconcileCase, type ReconcileCase } from '../support/reconcile.js';
import { faultsOf } from '../support/operator.js';

describe('reconcile: a pending order whose run is gone', () => {
  let c: ReconcileCase;
  const reconcile = (...more: string[]) => c.reconcile(...more);
  let app: App;

  beforeAll(async () => {
    c = await reconcileCase('reconcile-runs');
    app = await c.s.startInstance();
    await faultsOf(c.s)({ down: true });
    await c.s.produce([{ value: events.placed(c.tenant, 'stuck') }]);
    await waitFor(
      'the order to wait for the warehouse',
      async () => (await c.s.row(c.tenant, 'stuck'))?.waiting_since != null,
    );
    await app.client.workflow.getHandle(orderWorkflowId(c.tenant, 'stuck')).terminate('terminated by hand');
  }, 120_000);

  afterAll(async () => {
    if (c) await faultsOf(c.s)({ down: false }).catch(() => undefined);
    await c?.s.close();
  });

  it('names the pending order without a run, with the store and Temporal sides', async () => {
    const run = await reconcile('--check', 'runs', '--json');
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as ReportJson;
    const [found, ...rest] = report.checks.flatMap((c) => c.mismatches);
    expect(rest).toEqual([]);
    expect(found).toMatchObject({ kind: 'run-missing', tenantId: c.tenant, orderId: 'stuck' });
    expect(found!.sides[0]!.state).toMatch(/^pending since .*, waiting since /);
    expect(found!.sides[1]).toEqual({ source: 'temporal', state: 'no open run' });
  });

  it('--repair --yes starts a run from the store; it ships once the warehouse is back; the next pass agrees', async () => {
    const run = await reconcile('--check', 'runs', '--repair', '--yes', '--reason', 'run lost', '--by', 'it');
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/start-run .*\/stuck: run \S+ started from the store/);
    await faultsOf(c.s)({ down: false });
    await waitFor('the order to ship', async () => (await c.s.row(c.tenant, 'stuck'))?.status === 'shipped');
    expect((await c.s.shipments(c.tenant)).filter((x) => x.orderId === 'stuck')).toHaveLength(1);
    const again = await reconcile();
    expect(again.code).toBe(0);
    const twice = await reconcile('--repair', '--yes', '--reason', 'again', '--by', 'it');
    expect(twice.code).toBe(0);
    expect(twice.stderr).toContain('"actions":[]');
  });
});
