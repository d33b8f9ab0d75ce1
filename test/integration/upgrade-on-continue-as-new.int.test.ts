/**
 * A long-lived order moves to new code (docs/changing-the-workflow.md, "Orders that wait"): an order pinned to its
 * worker version waits — here a cancellation that arrived before its placement, in its grace window (an hour by
 * default) — while a newer version becomes current. The next time it wakes, Temporal tells the run its target version
 * changed, and it continues as new onto the current version with its state (upgrade on continue-as-new); there the
 * placement settles it. Temporal tells runs so from server 1.32 (the stack's is 1.32.0). The service's defaults: the
 * new version becomes current when its worker starts.
 *
 * Only forward (src/adapters/deployment/move-rule.ts): after a rollback, Temporal tells the runs pinned to the newer
 * version that their target changed too, but an order waiting there stays, and settles on the version it waited on.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { describeDeployment, setCurrentVersion } from '../../src/adapters/deployment/routing.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';

/** The changed workflow (a one-second timer before anything else): what version B runs. */
const CHANGED = fileURLToPath(new URL('../workflow/replay-diverging-workflows.ts', import.meta.url));

let s: Scenario;
beforeAll(async () => {
  s = await scenario('upgrade');
});
afterAll(async () => {
  await s?.close();
});

describe('upgrade on continue-as-new', () => {
  it('a waiting order moves to the version made current while it waited, with its state, and settles there', async () => {
    const env = (buildId: string) => ({ WORKER_BUILD_ID: buildId });
    const { client } = await s.startInstance({}, env('build-a'));
    const tenant = s.tenant();
    const order = 'o-waits';
    const handle = client.workflow.getHandle(orderWorkflowId(tenant, order));

    await s.produce([{ key: `${tenant}/${order}`, value: events.cancelled(tenant, order, { orderVersion: 2 }) }]);
    await waitFor('the order to wait for its placement', async () => {
      return (await handle.query(orderStatusQuery)).status === 'awaiting-placement';
    });
    const first = await handle.describe();
    expect(first.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId).toBe('build-a');

    // Version B starts and, by the default rollout, becomes current; the waiting run stays pinned to A meanwhile.
    await s.startInstance({ roles: { worker: true, bridge: false }, workflowsPath: CHANGED }, env('build-b'));
    // The order wakes (a newer cancellation, which leaves it waiting: still no placement) and moves to B. Temporal
    // hands the new routing to the task queue a moment after the change: until a wake-up meets it, another newer
    // cancellation follows, as later events or the run's own timer would wake it in production.
    let version = 2;
    const moved = await waitFor(
      'the order to run on version B',
      async () => {
        const d = await client.workflow.getHandle(orderWorkflowId(tenant, order)).describe();
        // The new run shows the version it is pinned to once its first task completed there (a moment later on a
        // loaded machine).
        if (d.runId !== first.runId)
          return d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId ? d : undefined;
        version += 1;
        await s.produce([
          { key: `${tenant}/${order}`, value: events.cancelled(tenant, order, { orderVersion: version }) },
        ]);
        return undefined;
      },
      120_000,
      2_000,
    );
    expect(moved.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId).toBe('build-b');
    const before = await client.workflow.getHandle(orderWorkflowId(tenant, order), first.runId).describe();
    expect(before.status.name).toBe('CONTINUED_AS_NEW');
    // Its state came along: still waiting for the placement (asked once B's code has registered its query, after
    // the timer it starts with).
    const view = await waitFor('the moved run to answer its query', () => handle.query(orderStatusQuery));
    expect(view.status).toBe('awaiting-placement');

    await s.produce([{ key: `${tenant}/${order}`, value: events.placed(tenant, order, { orderVersion: 1 }) }]);
    await waitFor('the order to settle cancelled', async () => (await s.row(tenant, order))?.status === 'cancelled');
    expect(await s.shipments(tenant)).toEqual([]);
    // B's run: its changed code's timer first, and no failed task (the history replays on B's code).
    const history = await client.workflow.getHandle(orderWorkflowId(tenant, order), moved.runId).fetchHistory();
    expect(history.events?.filter((e) => e.timerStartedEventAttributes).length).toBeGreaterThanOrEqual(1);
    expect(history.events?.some((e) => e.workflowTaskFailedEventAttributes)).toBe(false);
  });

  it('after a rollback, an order waiting on the newer version stays there and settles there', async () => {
    // The previous case left both versions running, B current (each case of this file runs in order).
    const { client } = await s.startInstance({ roles: { worker: false, bridge: true } });
    const tenant = s.tenant();
    const order = 'o-waits-through-rollback';
    const handle = client.workflow.getHandle(orderWorkflowId(tenant, order));
    const key = `${tenant}/${order}`;
    await s.produce([{ key, value: events.cancelled(tenant, order, { orderVersion: 2 }) }]);
    const first = await waitFor('the order to wait on version B', async () => {
      const d = await handle.describe();
      return d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId === 'build-b' ? d : undefined;
    });

    // The operator rolls back to A (its worker still runs).
    const deployment = s.config.TEMPORAL_TASK_QUEUE;
    const service = client.workflowService;
    const view = await describeDeployment(service, s.config.TEMPORAL_NAMESPACE, deployment);
    expect(view?.current).toBe('build-b');
    await setCurrentVersion(service, {
      namespace: s.config.TEMPORAL_NAMESPACE,
      deployment,
      buildId: 'build-a',
      identity: 'upgrade-test',
    });

    // Woken by newer cancellations until the run has been offered the move and refused it (its note says why).
    let version = 2;
    const notes = await waitFor(
      'the order to refuse the move back to version A',
      async () => {
        const { notes } = await handle.query(orderStatusQuery);
        if (notes.some((n) => n.startsWith('stays on its version'))) return notes;
        version += 1;
        await s.produce([{ key, value: events.cancelled(tenant, order, { orderVersion: version }) }]);
        return undefined;
      },
      120_000,
      2_000,
    );
    expect(notes.find((n) => n.startsWith('stays on its version'))).toMatch(/build-a is older than build-b/);
    const now = await handle.describe();
    expect(now.runId).toBe(first.runId);
    expect(now.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId).toBe('build-b');

    await s.produce([{ key, value: events.placed(tenant, order, { orderVersion: 1 }) }]);
    await waitFor('the order to settle cancelled', async () => (await s.row(tenant, order))?.status === 'cancelled');
    const settled = await handle.describe();
    expect(settled.runId).toBe(first.runId);
    const history = await handle.fetchHistory();
    expect(history.events?.some((e) => e.workflowTaskFailedEventAttributes)).toBe(false);
    expect(history.events?.some((e) => e.workflowExecutionContinuedAsNewEventAttributes)).toBe(false);
  });
});
