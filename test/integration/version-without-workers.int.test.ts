/**
 * A version with no live workers (docs/changing-the-workflow.md, "A version with no workers"), on the real stack: an
 * order waits (for its placement) pinned to version A; version B starts and, by the default rollout, becomes current;
 * A's worker stops. Then the running worker's gauge counts the order stranded on A, `deployment rollback` and
 * `deployment current build-a` refuse A — naming it and the override — and leave the routing as it was, `rollback
 * --force` rolls back anyway, `current build-b` (which has a worker) needs no force, and once a worker of A polls
 * again the gauge says 0.
 *
 * Settings shortened: WORKER_VERSION_CHECK_SECONDS=2 (default 30). The stack's Temporal forgets a stopped worker's
 * pollers after 30 s (production: 5 minutes), so that is how long A still counts as live once its worker stopped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { cliOf } from '../support/operator.js';

const A = 'build-a';
const B = 'build-b';

let s: Scenario;
beforeAll(async () => {
  s = await scenario('noworkers', { WORKER_VERSION_CHECK_SECONDS: '2' });
});
afterAll(async () => {
  await s?.close();
});

describe('a version with no live workers', () => {
  it('is refused by rollback and current unless forced, and the orders pinned to it are counted', async () => {
    const cli = cliOf(s);
    const deployment = s.config.TEMPORAL_TASK_QUEUE;
    const a = await s.startInstance({}, { WORKER_BUILD_ID: A });
    const tenant = s.tenant();
    const order = 'o-stranded';
    const handle = a.client.workflow.getHandle(orderWorkflowId(tenant, order));
    // A cancellation before its placement: the order waits for it (an hour's grace), pinned to A.
    await s.produce([{ key: `${tenant}/${order}`, value: events.cancelled(tenant, order, { orderVersion: 2 }) }]);
    await waitFor('the order to wait for its placement on A', async () => {
      const d = await handle.describe();
      return (
        d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId === A &&
        (await handle.query(orderStatusQuery)).status === 'awaiting-placement'
      );
    });

    const b = await s.startInstance({ roles: { worker: true, bridge: false } }, { WORKER_BUILD_ID: B });
    const shown = async () => JSON.parse((await cli('deployment', 'show', '--json')).stdout) as { current: string };
    expect((await shown()).current).toBe(B);
    const stranded = (app: App, buildId: string) =>
      counter(app, 'fulfilment_orders_pinned_without_workers', { deployment, build_id: buildId });
    // While A's worker polls, nothing is stranded.
    await waitFor("B's worker to have checked A and found it polled", async () => {
      const text = await b.metrics.registry.metrics();
      return text.includes(`fulfilment_orders_pinned_without_workers{deployment="${deployment}",build_id="${A}"} 0`);
    });

    await a.stop();
    const stoppedAt = Date.now();
    const counted = await waitFor(
      'the gauge to count the order stranded on A',
      async () => ((await stranded(b, A)) > 0 ? stranded(b, A) : undefined),
      120_000,
      500,
    );
    console.log(`stranded on ${A}: ${counted}, counted ${Date.now() - stoppedAt} ms after its worker stopped`);
    expect(counted).toBe(1);
    expect(await stranded(b, B)).toBe(0);

    // Refused, naming the version and the override; the routing unchanged.
    const rollback = await cli('deployment', 'rollback');
    expect(rollback.code).toBe(2);
    expect(rollback.stderr).toContain(`version ${A} of ${deployment} has no live workers`);
    expect(rollback.stderr).toContain('`fulfilment deployment rollback --force`');
    const current = await cli('deployment', 'current', A);
    expect(current.code).toBe(2);
    expect(current.stderr).toContain(`\`fulfilment deployment current ${A} --force\``);
    expect((await shown()).current).toBe(B);

    // Forced, it goes ahead and says so.
    const forced = await cli('deployment', 'rollback', '--force');
    expect(forced.code).toBe(0);
    expect(forced.stderr).toContain('going ahead (--force)');
    expect(forced.stdout).toContain(`rolled back to ${A} (was ${B})`);
    expect((await shown()).current).toBe(A);
    // A version with a worker needs no force.
    expect((await cli('deployment', 'current', B)).code).toBe(0);
    expect((await shown()).current).toBe(B);

    // A worker of A polls again: nothing is stranded any more.
    await s.startInstance({ roles: { worker: true, bridge: false } }, { WORKER_BUILD_ID: A });
    await waitFor('the gauge to count nothing on A', async () => (await stranded(b, A)) === 0, 60_000, 500);
  });
});
