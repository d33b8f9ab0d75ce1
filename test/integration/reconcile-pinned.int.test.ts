/**
 * `fulfilment reconcile`, kind `run-without-workers`, made the way it happens in life: an order cancelled before its
 * placement waits for it (its run open for CANCEL_GRACE_SECONDS) pinned to version A; version B starts and, by the
 * default rollout, becomes current; every worker of A stops. (An order waiting for the warehouse would move forward to
 * B by itself — src/adapters/deployment/move-rule.ts — so it is not the one left behind.) The pass names the order, A
 * and the versions with workers; `--repair --yes` flags it for a person with the command that fixes it — a worker of A
 * — which the test then runs (a worker-only instance with `WORKER_BUILD_ID=build-a`, as the command starts one); the
 * next pass agrees.
 *
 * The stack's Temporal forgets a stopped worker's pollers after 30 s (production: 5 minutes): that is how long A
 * still counts as having workers once its worker stopped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportJson } from '../../src/reconcile/report.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { events, waitFor } from '../support/harness.js';
import { reconcileCase, type ReconcileCase } from '../support/reconcile.js';
import { cliOf } from '../support/operator.js';

const A = 'build-a';
const B = 'build-b';

describe('reconcile: an open run pinned to a version whose workers are gone', () => {
  let c: ReconcileCase;

  beforeAll(async () => {
    c = await reconcileCase('reconcile-pinned');
    const a = await c.s.startInstance({}, { WORKER_BUILD_ID: A });
    await c.s.produce([{ value: events.cancelled(c.tenant, 'stranded', { orderVersion: 2 }) }]);
    const handle = a.client.workflow.getHandle(orderWorkflowId(c.tenant, 'stranded'));
    await waitFor('the order to wait for its placement on A', async () => {
      const d = await handle.describe();
      return (
        d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId === A &&
        (await handle.query(orderStatusQuery)).status === 'awaiting-placement'
      );
    });
    await c.s.startInstance({ roles: { worker: true, bridge: false } }, { WORKER_BUILD_ID: B });
    const shown = JSON.parse((await cliOf(c.s)('deployment', 'show', '--json')).stdout) as { current: string };
    expect(shown.current).toBe(B);
    await a.stop();
  }, 180_000);

  afterAll(async () => {
    await c?.s.close();
  });

  it('names the order, the version it is pinned to and the versions with workers', async () => {
    const found = await waitFor(
      "the pass to find the order once Temporal forgot A's pollers",
      async () => {
        const run = await c.reconcile('--check', 'runs', '--json');
        if (run.code !== 1) return undefined;
        return (JSON.parse(run.stdout) as ReportJson).checks.flatMap((x) => x.mismatches);
      },
      120_000,
      2000,
    );
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      kind: 'run-without-workers',
      tenantId: c.tenant,
      orderId: 'stranded',
      buildId: A,
    });
    expect(found[0]!.sides[0]!.state).toMatch(/^cancelled before placement since /);
    expect(found[0]!.sides[1]!.state).toMatch(
      new RegExp(`^run \\S+ pinned to version ${A}, which no worker polls for$`),
    );
    expect(found[0]!.sides[2]).toEqual({ source: 'workers', state: `versions with workers: ${B}` });
  });

  it('--repair --yes flags it with the command; run, the run has workers again and the next pass agrees', async () => {
    const run = await c.reconcile('--check', 'runs', '--repair', '--yes', '--reason', 'workers gone', '--by', 'it');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('"action":"flag"');
    expect(run.stderr).toContain(`FULFILMENT_ROLES=worker WORKER_BUILD_ID=${A} node dist/src/service.js`);
    // The flagged command: a worker of A.
    await c.s.startInstance(
      { roles: { worker: true, bridge: false } },
      { FULFILMENT_ROLES: 'worker', WORKER_BUILD_ID: A },
    );
    // Its worker polls at once: the run is on a version with workers again, and waits there for its placement.
    await waitFor('a pass to agree', async () => (await c.reconcile()).code === 0, 60_000, 1000);
    const again = await c.reconcile();
    expect(again.stdout).toContain('everything agrees');
    expect(again.code).toBe(0);
  });
});
