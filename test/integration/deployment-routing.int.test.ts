/**
 * Where `fulfilment deployment ramp` and `rollback` send new orders (docs/changing-the-workflow.md), judged by where
 * orders really start, on the real stack. Versions: A (current first), B (made current by its start, the default
 * rollout), C and D (canaries: started with WORKER_VERSION_ROLLOUT=manual so that they wait for the operator's ramp).
 *
 * - `rollback` after a canary's ramp was aborted goes back to the version that was current before (A), not to the
 *   canary that only ramped (C): new orders start on A.
 * - `ramp` refuses a version with no live workers (D: its worker polled once, then stopped), as `current` and
 *   `rollback` do, naming it and `--force`; the routing stays as it was and new orders keep shipping.
 *
 * Settings changed: WORKER_VERSION_ROLLOUT=manual for C and D only (above). The stack's Temporal forgets a stopped
 * worker's pollers after 30 s (production: 5 minutes), which is how long D still counts as live once its worker stopped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { pollersByVersion } from '../../src/adapters/deployment/live-workers.js';
import { setRampingVersion } from '../../src/adapters/deployment/routing.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { cliOf } from '../support/operator.js';

const [A, B, C, D] = ['build-a', 'build-b', 'build-c', 'build-d'];

interface Shown {
  current: string | null;
  ramping: { buildId: string; percent: number } | null;
  versions: { buildId: string }[];
}

let s: Scenario;
let a: App;
beforeAll(async () => {
  s = await scenario('routing');
  a = await s.startInstance({}, { WORKER_BUILD_ID: A });
});
afterAll(async () => {
  await s?.close();
});

describe('deployment ramp and rollback', () => {
  const cli = () => cliOf(s);
  const deployment = () => s.config.TEMPORAL_TASK_QUEUE;
  const shown = async () => JSON.parse((await cli()('deployment', 'show', '--json')).stdout) as Shown;
  /** Produces `n` new orders and returns the build each started on once all have started. */
  async function startedOn(n: number, label: string): Promise<string[]> {
    const tenant = s.tenant();
    const ids = Array.from({ length: n }, (_, i) => `o-${label}-${i + 1}`);
    await s.produce(ids.map((id) => ({ key: `${tenant}/${id}`, value: events.placed(tenant, id) })));
    return Promise.all(
      ids.map((id) =>
        waitFor(`order ${id} to start`, async () => {
          const d = await a.client.workflow.getHandle(orderWorkflowId(tenant, id)).describe();
          return d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId;
        }),
      ),
    );
  }

  it('rollback after an aborted canary ramp goes back to the version current before, not to the canary', async () => {
    await s.startInstance({ roles: { worker: true, bridge: false } }, { WORKER_BUILD_ID: B });
    await waitFor('B to be current', async () => (await shown()).current === B);
    await s.startInstance(
      { roles: { worker: true, bridge: false } },
      { WORKER_BUILD_ID: C, WORKER_VERSION_ROLLOUT: 'manual' },
    );
    await waitFor('C to exist', async () => (await cli()('deployment', 'ramp', C, '10')).code === 0);
    expect(await shown()).toMatchObject({ current: B, ramping: { buildId: C } });
    // The canary's ramp aborted (as `temporal worker deployment set-ramping-version --delete` does): C stops
    // ramping after A stopped being current.
    await setRampingVersion(a.client.workflowService, {
      namespace: s.config.TEMPORAL_NAMESPACE,
      deployment: deployment(),
      buildId: '',
      percent: 0,
      identity: 'deployment-routing test',
    });
    expect(await shown()).toMatchObject({ current: B, ramping: null });

    const rollback = await cli()('deployment', 'rollback');
    expect(rollback.code).toBe(0);
    expect(await shown()).toMatchObject({ current: A, ramping: null });
    expect(await startedOn(5, 'after-rollback')).toEqual(Array(5).fill(A));
  });

  it('ramp refuses a version with no live workers unless forced; the routing stays and orders keep shipping', async () => {
    // A build whose worker polled once and stopped (manual: it never took new orders by itself).
    const d = await s.startInstance(
      { roles: { worker: true, bridge: false } },
      { WORKER_BUILD_ID: D, WORKER_VERSION_ROLLOUT: 'manual' },
    );
    await waitFor('D to exist', async () => (await shown()).versions.some((v) => v.buildId === D));
    await d.stop();
    await waitFor(
      "Temporal to forget D's pollers",
      async () => {
        const p = await pollersByVersion(a.client.workflowService, s.config.TEMPORAL_NAMESPACE, deployment(), [D]);
        return p.get(D)?.pollers === 0;
      },
      120_000,
      1_000,
    );
    const before = await shown();
    const ramp = await cli()('deployment', 'ramp', D, '50');
    expect(ramp.code).toBe(2);
    expect(ramp.stderr).toContain(`version ${D} of ${deployment()} has no live workers`);
    expect(ramp.stderr).toContain(`\`fulfilment deployment ramp ${D} 50 --force\``);
    expect(await shown()).toEqual(before);
    // New orders all start on the current version, none on D where nothing would run them.
    const tenant = s.tenant();
    const ids = Array.from({ length: 8 }, (_, i) => `o-after-ramp-${i + 1}`);
    await s.produce(ids.map((id) => ({ key: `${tenant}/${id}`, value: events.placed(tenant, id) })));
    await waitFor(
      'every order produced after the refused ramp to ship',
      async () => (await Promise.all(ids.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
      120_000,
    );

    // Forced, it goes ahead and says so; then the share goes back to none.
    const forced = await cli()('deployment', 'ramp', D, '5', '--force');
    expect(forced.code).toBe(0);
    expect(forced.stderr).toContain('going ahead (--force)');
    expect(await shown()).toMatchObject({ ramping: { buildId: D, percent: 5 } });
    // A share of none sends no order anywhere: no check needed.
    expect((await cli()('deployment', 'ramp', D, '0')).code).toBe(0);
    expect(await shown()).toMatchObject({ ramping: { buildId: D, percent: 0 } });
  });
});
