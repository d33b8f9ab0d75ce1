/**
 * Fair dispatch between tenants on the real stack, whose Temporal dispatches fairly (matching.enableFairness,
 * tools/stack/services/temporal-server.ts fairDispatch): every order's run starts with its tenant as the fairness key
 * (src/base/tenants/fairness.ts), so a quiet tenant's orders are not held behind another tenant's backlog.
 *
 * - A backlog of one tenant's orders, then a few of another's, all waiting in the task queue (its worker stopped),
 *   then the worker: the quiet tenant's orders ship among the first, not after the backlog. In arrival order (a
 *   Temporal without fairness, or runs started without a fairness key) every one of the backlog would ship first.
 * - Two tenants' backlogs, the second weighted 10 (TENANT_WEIGHTS): while both have work waiting, the second gets
 *   most of the dispatches (ten elevenths, less what the task queue's partitions blur), though the first's orders all
 *   came first.
 * - What the order workflow relies on instead of setting priorities itself: a run continued as new keeps its start's
 *   priority, and an activity it schedules without one is given the run's.
 *
 * Asserted on the order orders shipped in (the store's shipped_at), never on how long anything took.
 */
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { createOrderStarter } from '../../src/roles/bridge/order-starter.js';
import { loadConfig } from '../../src/base/config.js';
import { createDb, type Db } from '../../src/adapters/store/db.js';
import type { OrderEvent } from '../../src/vocabulary/order.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { connectClient, connectNative, workflowBundle } from '../../src/domain/temporal.js';
import { tenantWeights, type TenantWeightOf } from '../../src/base/tenants/weights.js';
import { workflowSettings } from '../../src/domain/workflow-settings.js';
import { events, scenario, tenantRows, waitFor, type Scenario } from '../support/harness.js';
import type { priorityProbe } from '../support/priority-probe-workflow.js';

/** The busy tenant's backlog: enough that, dispatched in arrival order, it takes the worker many rounds of polls. */
const BACKLOG = 400;
const QUIET_ORDERS = 5;

/** One order that shipped: whose, and when the store recorded it. */
interface Shipped {
  tenant: string;
  at: number;
}

describe('fair dispatch between tenants', () => {
  let s: Scenario;
  let client: Client;
  let db: Db;
  /** The scenario's worker while one runs. */
  let worker: App | undefined;

  beforeAll(async () => {
    s = await scenario('fair-dispatch');
    client = await connectClient(s.config);
    db = createDb(runtimeConnection(s.config), 2);
    // A worker makes its version current (every new run goes to it); each case stops it while its orders queue.
    worker = await s.startInstance({ roles: { worker: true, bridge: false } });
  });
  afterAll(async () => {
    await db?.end();
    await client?.connection.close();
    await s?.close();
  });

  /** The workflow tasks waiting in the scenario's task queue, every partition and worker version. */
  const backlog = async () => {
    const res = await client.workflowService.describeTaskQueue({
      namespace: s.config.TEMPORAL_NAMESPACE,
      taskQueue: { name: s.config.TEMPORAL_TASK_QUEUE },
      taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      reportStats: true,
    });
    return Number(res.stats?.approximateBacklogCount ?? 0);
  };

  /**
   * Places `orders` (tenant and order ids) in this order, through the bridge's starter with `weightOf`, while no
   * worker polls; once every run's first task waits in the task queue, starts a worker, and answers every order as
   * it shipped, in the order the store recorded them.
   */
  async function shippedAfterBacklog(orders: [string, string][], weightOf: TenantWeightOf): Promise<Shipped[]> {
    await worker?.stop();
    worker = undefined;
    const starter = createOrderStarter(client, s.config.TEMPORAL_TASK_QUEUE, workflowSettings(s.config), s.late, {
      weightOf,
    });
    for (let i = 0; i < orders.length; i += 20)
      await Promise.all(orders.slice(i, i + 20).map(([t, o]) => starter.deliver([events.placed(t, o) as OrderEvent])));
    // Temporal hands a run's first task to the task queue after the start returns: every one of them must be waiting
    // there before a worker polls, or a late one would be measured, not the order of dispatch.
    await waitFor(
      "every order's first task to wait in the task queue",
      async () => (await backlog()) >= orders.length,
      120_000,
    );
    worker = await s.startInstance({ roles: { worker: true, bridge: false } });
    const tenants = [...new Set(orders.map(([t]) => t))];
    const shipped = async () =>
      (await Promise.all(tenants.map((t) => tenantRows(db, t))))
        .flat()
        .filter((r) => r.status === 'shipped' && r.shipped_at !== null)
        .map((r) => ({ tenant: r.tenant_id, at: r.shipped_at!.getTime() }));
    const all = await waitFor(
      'every order to ship',
      async () => {
        const rows = await shipped();
        return rows.length === orders.length ? rows : undefined;
      },
      300_000,
    );
    return all.sort((a, b) => a.at - b.at);
  }

  const ids = (tenant: string, n: number, prefix: string): [string, string][] =>
    Array.from({ length: n }, (_, i) => [tenant, `${prefix}-${String(i).padStart(4, '0')}`]);

  it("a quiet tenant's orders ship ahead of another tenant's backlog, not behind it", async () => {
    const busy = s.tenant('busy');
    const quiet = s.tenant('quiet');
    const order = await shippedAfterBacklog(
      [...ids(busy, BACKLOG, 'b'), ...ids(quiet, QUIET_ORDERS, 'q')],
      tenantWeights(s.config),
    );
    const quietLast = order.findLastIndex((o) => o.tenant === quiet);
    const busyBefore = order.slice(0, quietLast).filter((o) => o.tenant === busy).length;
    process.stdout.write(
      `[fair-dispatch] ${busyBefore} of the busy tenant's ${BACKLOG} orders shipped before the quiet tenant's last\n`,
    );
    // In arrival order, all of them (the quiet orders were started last). Fairly, the quiet tenant's tasks are at the
    // head of every partition's backlog: what ships before them is what the worker had in hand (its 40 workflow task
    // slots) and each partition's first read; a quarter of the backlog is far above that and far below all of it.
    expect(
      busyBefore,
      "the quiet tenant's orders waited behind the backlog: does the stack's Temporal dispatch fairly? (`npm run stack -- up` restarts one started without matching.enableFairness)",
    ).toBeLessThan(BACKLOG / 4);
  });

  it('tenants with work waiting share dispatch in proportion to their weights (TENANT_WEIGHTS)', async () => {
    const light = s.tenant('light');
    const heavy = s.tenant('heavy');
    const weightOf = tenantWeights(loadConfig({ ...s.env, TENANT_WEIGHTS: `${heavy}=10` }));
    // The light tenant's orders first: in arrival order every one of them would ship before the heavy tenant's.
    const order = await shippedAfterBacklog(
      [...ids(light, BACKLOG / 2, 'l'), ...ids(heavy, BACKLOG / 2, 'h')],
      weightOf,
    );
    const firstQuarter = order.slice(0, BACKLOG / 4);
    const heavyShare = firstQuarter.filter((o) => o.tenant === heavy).length / firstQuarter.length;
    process.stdout.write(
      `[fair-dispatch] weights 10:1: the heavy tenant's share of the first ${firstQuarter.length} orders shipped: ${heavyShare.toFixed(2)}\n`,
    );
    // 10:1 gives it ten elevenths (0.91) while both have work waiting; equal weights half (measured 0.49), arrival
    // order none.
    expect(heavyShare).toBeGreaterThan(0.7);
  });

  it("a run continued as new keeps its start's priority, and an activity scheduled without one is given the run's", async () => {
    const taskQueue = `${s.config.TEMPORAL_TASK_QUEUE}-probe`;
    const connection = await connectNative(s.config);
    const worker = await Worker.create({
      connection,
      namespace: s.config.TEMPORAL_NAMESPACE,
      taskQueue,
      workflowBundle: await workflowBundle({
        workflowsPath: fileURLToPath(new URL('../support/priority-probe-workflow.ts', import.meta.url)),
      }),
      activities: { priorityOfActivity: async () => Context.current().info.priority },
    });
    try {
      const priority = { fairnessKey: s.tenant('probe'), fairnessWeight: 2.5 };
      const answer = await worker.runUntil(
        client.workflow.execute<typeof priorityProbe>('priorityProbe', {
          taskQueue,
          workflowId: `priority-probe-${s.suffix}`,
          args: [false],
          priority,
        }),
      );
      expect(answer.run).toMatchObject(priority);
      expect(answer.activity).toMatchObject(priority);
    } finally {
      await connection.close();
    }
  });
});
