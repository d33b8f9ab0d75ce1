/**
 * Versioned deployments under load (docs/changing-the-workflow.md): while orders flow through the real stack, a
 * second worker version whose workflow is changed incompatibly and unpatched (the replay gate's changed copy: every
 * order starts a one-second timer first) is ramped to half of the new orders, made current, and rolled back — with
 * the operator's own commands (`fulfilment deployment …`). Every order ships once, each on the version it started on
 * (its history says which), none meets a non-determinism failure; the version rolled back from drains and is retired.
 *
 * Setting changed: WORKER_VERSION_ROLLOUT=manual, so the second version waits for the operator's ramp instead of
 * taking every new order the moment it starts (the default, all-at-once).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { cliOf } from '../support/operator.js';

const CHANGED = fileURLToPath(new URL('../workflow/replay-diverging-workflows.ts', import.meta.url));
const A = 'build-a';
const B = 'build-b';
/** Orders produced per second while the versions change. */
const RATE = 8;

describe('worker versions under load', () => {
  let s: Scenario;
  let a: App;
  let b: App;
  beforeAll(async () => {
    s = await scenario('versions', { WORKER_VERSION_ROLLOUT: 'manual' });
    a = await s.startInstance({}, { WORKER_BUILD_ID: A });
  });
  afterAll(async () => s?.close());

  it('ramps, promotes and rolls back a changed workflow while orders flow; each order finishes on its version', async () => {
    const cli = cliOf(s);
    const tenant = s.tenant();
    const produced: string[] = [];
    let flowing = true;
    const flow = (async () => {
      while (flowing) {
        const orderId = `o-${produced.length + 1}`;
        produced.push(orderId);
        await s.produce([{ key: `${tenant}/${orderId}`, value: events.placed(tenant, orderId) }]);
        await new Promise((r) => setTimeout(r, 1000 / RATE));
      }
    })();
    // Each worker's gauge: 1 while its version takes every new order.
    const takesAll = (app: App, buildId: string) =>
      counter(app, 'fulfilment_worker_version', { deployment: s.config.TEMPORAL_TASK_QUEUE, build_id: buildId });
    const shipped = async (n: number) => {
      const rows = await Promise.all(produced.slice(0, n).map((id) => s.row(tenant, id)));
      return rows.filter((r) => r?.status === 'shipped').length;
    };

    await waitFor('orders to ship on version A', async () => (await shipped(produced.length)) >= 10);
    b = await s.startInstance(
      { roles: { worker: true, bridge: false }, workflowsPath: CHANGED },
      { WORKER_BUILD_ID: B },
    );
    expect((await cli('deployment', 'show')).code).toBe(0);

    expect((await cli('deployment', 'ramp', B, '50')).code).toBe(0);
    const ramped = produced.length;
    await waitFor('new orders on version B too', async () => (await countOn(ramped, B)) >= 3, 120_000, 1_000);

    expect((await cli('deployment', 'current', B)).code).toBe(0);
    await waitFor("A's gauge to say it no longer takes new orders", async () => (await takesAll(a, A)) === 0);
    await waitFor("B's gauge to say it takes every new order", async () => (await takesAll(b, B)) === 1);
    const promoted = produced.length;
    await waitFor('new orders on version B', async () => (await countOn(promoted, B)) >= 10, 120_000, 1_000);
    expect((await cli('deployment', 'show')).code).toBe(0);

    const rolledBackAt = Date.now();
    expect((await cli('deployment', 'rollback')).code).toBe(0);
    await waitFor("A's gauge to say it takes every new order again", async () => (await takesAll(a, A)) === 1);
    const rolledBack = produced.length;
    await waitFor('new orders on version A again', async () => (await countOn(rolledBack, A)) >= 10, 120_000, 1_000);
    flowing = false;
    await flow;

    await waitFor('every order to ship', async () => (await shipped(produced.length)) === produced.length, 180_000);
    const versions = await Promise.all(produced.map((id) => versionOf(id)));
    // Nothing shipped twice: one shipment per order, one row per order.
    const shipments = await s.shipments(tenant);
    expect(shipments).toHaveLength(produced.length);
    expect(new Set(shipments.map((x) => x.orderId)).size).toBe(produced.length);
    // Each order ran on one version, start to end: B's runs carry its extra timer, A's none; no task failed.
    for (const v of versions) {
      expect([A, B]).toContain(v.buildId);
      expect(v.behavior).toBe('VERSIONING_BEHAVIOR_PINNED');
      expect(v.timers).toBe(v.buildId === B ? 1 : 0);
      expect(v.failedTasks).toBe(0);
    }
    const on = (from: number, to: number) => versions.slice(from, to).map((v) => v.buildId);
    expect(on(0, 10)).toEqual(Array(10).fill(A));
    expect(on(ramped, promoted)).toContain(B);
    // Rollback: how long after it a run still started on B.
    const lateB = versions.filter((v) => v.buildId === B && v.startedAt.getTime() > rolledBackAt);
    const effectMs = Math.max(0, ...lateB.map((v) => v.startedAt.getTime() - rolledBackAt));
    console.log(
      `${produced.length} orders: ${versions.filter((v) => v.buildId === B).length} on ${B}; the last run started on ${B} ${effectMs} ms after the rollback`,
    );
    expect(versions.slice(-5).map((v) => v.buildId)).toEqual(Array(5).fill(A));

    // B drained: its workers stop, and the version is retired once Temporal has seen it drained and unpolled.
    await b.stop();
    await waitFor(
      'version B to be retired',
      async () => (await cli('deployment', 'retire', B)).code === 0,
      180_000,
      5_000,
    );
    const shown = await cli('deployment', 'show', '--json');
    expect(JSON.parse(shown.stdout)).toMatchObject({
      current: A,
      ramping: null,
      versions: [{ buildId: A, status: 'current' }],
    });

    async function versionOf(orderId: string) {
      const handle = a.client.workflow.getHandle(orderWorkflowId(tenant, orderId));
      const d = await handle.describe();
      const info = d.raw.workflowExecutionInfo?.versioningInfo;
      const history = await handle.fetchHistory();
      return {
        buildId: info?.deploymentVersion?.buildId ?? 'none',
        behavior: info?.behavior === 1 ? 'VERSIONING_BEHAVIOR_PINNED' : String(info?.behavior),
        startedAt: d.startTime,
        timers: history.events?.filter((e) => e.timerStartedEventAttributes).length ?? 0,
        failedTasks: history.events?.filter((e) => e.workflowTaskFailedEventAttributes).length ?? 0,
      };
    }
    /** Runs started since the `from`th order that started on `buildId` (a run not started yet counts as none). */
    async function countOn(from: number, buildId: string) {
      const found = await Promise.all(
        produced.slice(from).map(async (id) => {
          const d = await a.client.workflow
            .getHandle(orderWorkflowId(tenant, id))
            .describe()
            .catch(() => undefined);
          return d?.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId === buildId;
        }),
      );
      return found.filter(Boolean).length;
    }
  });
});
