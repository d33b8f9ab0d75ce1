/**
 * Records workflow histories from real runs on the local stack into test/histories/, for the replay gate.
 * Run after a deliberate change to the workflow's behaviour:  npx tsx test/support/record-histories.ts [name…]
 * A history that is already checked in is kept (it guards the runs recorded on the code of its day); name a story
 * to record it again only on purpose.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { temporalCliPath } from '../../tools/stack/index.js';
import { orderEventSignal, orderStatusQuery, orderWorkflowId, retryShipmentUpdate } from '../../workflows/api.js';
import { type OrderEvent } from '../../src/vocabulary/order.js';
import { parseRecord } from '../../src/adapters/events/envelope.js';
import { counter, events, scenario, waitFor, type Scenario } from './harness.js';
import { createDb } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import type { App } from '../../src/app.js';

const run = promisify(execFile);

interface Story {
  order: string;
  /** Environment of the story's instance (on top of a 2 s linger). */
  env?: Record<string, string>;
  /** Drives the order; the run must then close by itself. Resolves with the run to export when not the last one. */
  drive(ctx: {
    s: Scenario;
    app: App;
    tenant: string;
    order: string;
    send(value: object, direct?: boolean): Promise<void>;
    sendTogether(values: object[]): Promise<void>;
  }): Promise<string | void>;
}

const handleOf = (app: App, tenant: string, order: string) =>
  app.client.workflow.getHandle(orderWorkflowId(tenant, order));
const view = (app: App, tenant: string, order: string) => handleOf(app, tenant, order).query(orderStatusQuery);
const settledAs = (app: App, tenant: string, order: string, status: string) =>
  waitFor(`${order} to be ${status}`, async () => (await view(app, tenant, order)).status === status, 120_000, 200);

const stories: Record<string, Story> = {
  'shipped-with-duplicate-stale-and-late-cancel': {
    order: 'o-shipped',
    async drive({ app, tenant, order, send }) {
      const placed = events.placed(tenant, order, { orderVersion: 2 });
      await send(placed);
      await settledAs(app, tenant, order, 'shipped');
      await send(placed, true);
      await send(events.cancelled(tenant, order, { orderVersion: 1 }));
      await send(events.cancelled(tenant, order, { orderVersion: 3 }));
    },
  },
  'cancel-before-placement': {
    order: 'o-tombstone',
    env: { CANCEL_GRACE_SECONDS: '600' },
    async drive({ app, tenant, order, send }) {
      await send(events.cancelled(tenant, order, { orderVersion: 2 }));
      await settledAs(app, tenant, order, 'awaiting-placement');
      await send(events.placed(tenant, order, { orderVersion: 1 }));
    },
  },
  'tombstone-expired': {
    order: 'o-expired',
    env: { CANCEL_GRACE_SECONDS: '2' },
    async drive({ send, tenant, order }) {
      await send(events.cancelled(tenant, order, { orderVersion: 2 }));
    },
  },
  'tombstone-expired-then-an-older-placement-joins': {
    order: 'o-expired-joined',
    // Grace 1 s, so the tombstone expires at once; linger 20 s, so the run is still open when the placement comes.
    env: { CANCEL_GRACE_SECONDS: '1', ORDER_LINGER_SECONDS: '20' },
    // The grace window ends, the run lingers, and a placement older than the cancellation arrives: the tombstone takes
    // its data and the order stays cancelled (the rules' join-tombstone), as the store and the late path do too.
    async drive({ app, tenant, order, send }) {
      await send(events.cancelled(tenant, order, { orderVersion: 2 }));
      await settledAs(app, tenant, order, 'cancelled');
      await send(events.placed(tenant, order, { orderVersion: 1 }), true);
      await waitFor(
        `${order}: the placement recorded`,
        async () => (await view(app, tenant, order)).appliedEvents === 2,
        120_000,
        100,
      );
    },
  },
  'cancelled-during-shipment-compensated': { order: 'o-compensated', drive: (ctx) => cancelDuringShipment(ctx) },
  'held-as-failed-then-retried': {
    order: 'o-retried',
    async drive({ s, app, tenant, order, send }) {
      await fault(s, { rejectOrders: [order] });
      await send(events.placed(tenant, order));
      await settledAs(app, tenant, order, 'failed');
      await fault(s, { rejectOrders: [] });
      await handleOf(app, tenant, order).executeUpdate(retryShipmentUpdate, {
        args: [{ reason: 'warehouse fixed the SKU mapping' }],
        updateId: `retry-${order}-1`,
      });
      await settledAs(app, tenant, order, 'shipped');
    },
  },
  // Late events while the run lingers (a linger timer), the late cancellation refused.
  'shipped-with-late-events-while-lingering': {
    order: 'o-cheap',
    env: { ORDER_LINGER_SECONDS: '4' },
    async drive({ app, tenant, order, send }) {
      const placed = events.placed(tenant, order, { orderVersion: 2 });
      await send(placed);
      await settledAs(app, tenant, order, 'shipped');
      await send(placed, true);
      await send(events.cancelled(tenant, order, { orderVersion: 1 }), true);
      await send(events.cancelled(tenant, order, { orderVersion: 3 }), true);
      await waitFor(
        'the late cancellation to be refused',
        async () => (await view(app, tenant, order)).cancelRefused,
        30_000,
        100,
      );
    },
  },
  'continued-as-new': {
    order: 'o-continued',
    env: { ORDER_CONTINUE_AS_NEW_AFTER_EVENTS: '40', ORDER_LINGER_SECONDS: '20' },
    async drive({ app, tenant, order, send }) {
      await send(events.placed(tenant, order, { orderVersion: 1 }));
      await settledAs(app, tenant, order, 'shipped');
      // Late events each add a few history events; the run continues as new once it passes 40.
      const first = (await handleOf(app, tenant, order).describe()).runId;
      for (let v = 2; v < 40; v += 1) {
        // The first run may already have continued as new (and the new run closed after its linger).
        if ((await handleOf(app, tenant, order).describe()).runId !== first) return first;
        await send(events.cancelled(tenant, order, { orderVersion: v }), true);
        await waitFor(
          `v${v} decided`,
          async () =>
            (await handleOf(app, tenant, order).describe()).runId !== first ||
            (await view(app, tenant, order)).orderVersion >= v,
          30_000,
          100,
        );
        if ((await handleOf(app, tenant, order).describe()).runId !== first) return first;
      }
      throw new Error('the run did not continue as new');
    },
  },
  // The stories' instance runs both roles: runs start eagerly, events in their input.
  'shipped-in-one-task': {
    order: 'o-v2',
    env: { ORDER_LINGER_SECONDS: '0' },
    async drive({ send, tenant, order }) {
      await send(events.placed(tenant, order));
    },
  },
  'burst-in-one-signal-while-lingering': {
    order: 'o-v2-burst',
    env: { ORDER_LINGER_SECONDS: '4' },
    async drive({ app, tenant, order, send, sendTogether }) {
      const placed = events.placed(tenant, order, { orderVersion: 2 });
      await send(placed);
      await settledAs(app, tenant, order, 'shipped');
      // What the bridge sends for one order's events queued together: a duplicate, a stale and a late cancellation.
      await sendTogether([
        placed,
        events.cancelled(tenant, order, { orderVersion: 1 }),
        events.cancelled(tenant, order, { orderVersion: 3 }),
      ]);
      await waitFor(
        'the late cancellation to be refused',
        async () => (await view(app, tenant, order)).cancelRefused,
        30_000,
        100,
      );
    },
  },
  'cancel-before-placement-closed-at-once': {
    order: 'o-v2-tombstone',
    env: { CANCEL_GRACE_SECONDS: '600', ORDER_LINGER_SECONDS: '0' },
    async drive({ app, tenant, order, send }) {
      await send(events.cancelled(tenant, order, { orderVersion: 2 }));
      await settledAs(app, tenant, order, 'awaiting-placement');
      await send(events.placed(tenant, order, { orderVersion: 1 }));
    },
  },
  'cancelled-during-shipment': {
    order: 'o-v2-compensated',
    env: { ORDER_LINGER_SECONDS: '0' },
    drive: (ctx) => cancelDuringShipment(ctx),
  },
  'held-as-failed': {
    order: 'o-v2-failed',
    env: { ORDER_LINGER_SECONDS: '0' },
    async drive({ s, tenant, order, send }) {
      await fault(s, { rejectOrders: [order] });
      try {
        await send(events.placed(tenant, order));
        await waitFor(
          `${order} to be failed`,
          async () => (await s.row(tenant, order))?.status === 'failed',
          120_000,
          200,
        );
      } finally {
        await fault(s, { rejectOrders: [] });
      }
    },
  },
  'waited-out-warehouse-outage': {
    order: 'o-v2-waited',
    // The breaker opens at the first failure and the resumer probes every 2 s: the wait is seconds long.
    env: {
      ORDER_LINGER_SECONDS: '0',
      WAREHOUSE_BREAKER_FAILURES: '1',
      WAREHOUSE_BREAKER_HALF_OPEN_MS: '1000',
      WAREHOUSE_PROBE_SECONDS: '2',
    },
    async drive({ app, s, tenant, order, send }) {
      await fault(s, { down: true });
      try {
        await send(events.placed(tenant, order));
        // Woken to probe at least once while the warehouse is still down: the order waits again.
        await waitFor(
          `${order} to wait again after a probe`,
          async () =>
            ((await s.row(tenant, order))?.released_at ?? 0) < ((await s.row(tenant, order))?.waited_at ?? 0) &&
            (await view(app, tenant, order)).notes.some((n) => n.startsWith('woken')),
          120_000,
          200,
        );
      } finally {
        await fault(s, { down: false });
      }
      await settledAs(app, tenant, order, 'shipped');
    },
  },
  'checked-the-warehouse-by-itself': {
    order: 'o-v2-checked',
    // No probe wakes it (hourly); its own check every 3 s ± 20 % does: it finds the warehouse down, waits again, and
    // ships at a check after the warehouse answers.
    env: {
      ORDER_LINGER_SECONDS: '0',
      WAREHOUSE_BREAKER_FAILURES: '1',
      WAREHOUSE_BREAKER_HALF_OPEN_MS: '1000',
      WAREHOUSE_PROBE_SECONDS: '3600',
      ORDER_WAIT_RECHECK_SECONDS: '3',
    },
    async drive({ app, s, tenant, order, send }) {
      await fault(s, { down: true });
      try {
        await send(events.placed(tenant, order));
        await waitFor(
          `${order} to check by itself and wait again`,
          async () =>
            (await view(app, tenant, order)).notes.filter((n) => n.startsWith('nothing woke it')).length >= 2 &&
            (await view(app, tenant, order)).waitingSince !== undefined,
          120_000,
          200,
        );
      } finally {
        await fault(s, { down: false });
      }
      await settledAs(app, tenant, order, 'shipped');
    },
  },
  'held-by-a-pause-past-its-deadline': {
    order: 'o-v2-paused',
    // A deadline of 2 s and checks every 3 s: the pause holds the order through several checks, past the deadline.
    env: { ORDER_LINGER_SECONDS: '0', ORDER_SHIPMENT_DEADLINE_SECONDS: '2', ORDER_WAIT_RECHECK_SECONDS: '3' },
    async drive({ app, s, tenant, order, send }) {
      const db = createDb(runtimeConnection(s.config), 1);
      try {
        const before = await counter(app, 'fulfilment_shipping_pauses');
        await db.query("INSERT INTO shipping_pauses (tenant_id, paused_by, reason) VALUES ($1, 'ops', 'stock take')", [
          tenant,
        ]);
        await waitFor(
          'the worker to read the pause',
          async () => (await counter(app, 'fulfilment_shipping_pauses')) > before,
          30_000,
          200,
        );
        await send(events.placed(tenant, order));
        await waitFor(
          `${order} to be held past its deadline`,
          async () => (await view(app, tenant, order)).notes.filter((n) => n.startsWith('nothing woke it')).length >= 2,
          120_000,
          200,
        );
        await db.query(
          "UPDATE shipping_pauses SET resumed_at = now(), resumed_by = 'ops', resume_reason = 'done' WHERE tenant_id = $1 AND resumed_at IS NULL",
          [tenant],
        );
      } finally {
        await db.end();
      }
      await settledAs(app, tenant, order, 'shipped');
    },
  },
  'continued-as-new-while-awaiting-placement': {
    order: 'o-v2-continued',
    env: { ORDER_CONTINUE_AS_NEW_AFTER_EVENTS: '10', ORDER_LINGER_SECONDS: '0', CANCEL_GRACE_SECONDS: '600' },
    async drive({ app, tenant, order, send }) {
      // A tombstone waits for its placement; older cancellations (stale) each add a signal and a task, until the run
      // continues as new past 10 events. The first run is the history kept.
      await send(events.cancelled(tenant, order, { orderVersion: 20 }));
      await settledAs(app, tenant, order, 'awaiting-placement');
      const first = (await handleOf(app, tenant, order).describe()).runId;
      for (let v = 1; v < 20; v += 1) {
        await send(events.cancelled(tenant, order, { orderVersion: v }), true);
        const continued = await waitFor(
          `v${v} decided`,
          async () => {
            if ((await handleOf(app, tenant, order).describe()).runId !== first) return 'continued';
            return (await view(app, tenant, order)).staleIgnored >= v ? 'decided' : undefined;
          },
          30_000,
          100,
        );
        if (continued === 'continued') {
          await send(events.placed(tenant, order, { orderVersion: 1 }), true);
          return first;
        }
      }
      throw new Error('the run did not continue as new');
    },
  },
  'failed-then-late-cancel-from-store': {
    order: 'o-v2-failed-late',
    env: { ORDER_LINGER_SECONDS: '0' },
    async drive({ s, app, tenant, order, send }) {
      // Held as failed, its run closed; the late cancellation reaches the bridge, whose store hands it back (a failed
      // order's shipment must be recalled): the run started from the store cancels the order and burns the key.
      await fault(s, { rejectOrders: [order] });
      try {
        await send(events.placed(tenant, order));
        await waitFor(
          `${order} to be failed`,
          async () => (await s.row(tenant, order))?.status === 'failed',
          120_000,
          200,
        );
        await waitFor(
          `${order}'s run to close`,
          async () => (await handleOf(app, tenant, order).describe()).status.name !== 'RUNNING',
          120_000,
          200,
        );
      } finally {
        await fault(s, { rejectOrders: [] });
      }
      await send(events.cancelled(tenant, order, { orderVersion: 2 }));
      await waitFor(
        `${order} to be cancelled`,
        async () => (await s.row(tenant, order))?.status === 'cancelled',
        120_000,
        200,
      );
    },
  },
};

/** A slow warehouse, a placement, and its cancellation while the shipment is in flight: compensated. */
async function cancelDuringShipment({ s, app, tenant, order, send }: Parameters<Story['drive']>[0]): Promise<void> {
  await fault(s, { latencyMs: 4000 });
  try {
    await send(events.placed(tenant, order));
    await waitFor(
      'the shipment to be in flight',
      async () => ((await handleOf(app, tenant, order).describe()).raw.pendingActivities ?? []).length > 0,
      60_000,
      100,
    );
    await send(events.cancelled(tenant, order, { orderVersion: 2 }));
    await settledAs(app, tenant, order, 'cancelled');
  } finally {
    await fault(s, { latencyMs: 0 });
  }
}

async function fault(s: Scenario, faults: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${s.warehouse.url}/admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(faults),
  });
  if (!res.ok) throw new Error(`setting warehouse faults failed: ${res.status}`);
}

function parsed(value: object): OrderEvent {
  const r = parseRecord({ value: Buffer.from(JSON.stringify(value)) });
  if (r.kind !== 'order-event') throw new Error('story events must be order events');
  return r.event;
}

const asked = process.argv.slice(2);
for (const [name, story] of Object.entries(stories)) {
  const file = `test/histories/${name}.json`;
  if (asked.length > 0 ? !asked.includes(name) : existsSync(file)) {
    console.log(`kept ${file}`);
    continue;
  }
  const s = await scenario(`history-${name}`.slice(0, 40), { ORDER_LINGER_SECONDS: '2', ...story.env });
  try {
    const app = await s.startInstance();
    const tenant = `history-${s.suffix}`.slice(0, 64);
    const handle = handleOf(app, tenant, story.order);
    const runId = await story.drive({
      s,
      app,
      tenant,
      order: story.order,
      async send(value, direct) {
        if (direct) await handle.signal(orderEventSignal, parsed(value));
        else await s.produce([{ value }]);
      },
      sendTogether: (values) => handle.signal(orderEventSignal, values.map(parsed)),
    });
    await waitFor(`${name}: run closed`, async () => (await handle.describe()).status.name !== 'RUNNING', 120_000, 250);
    // The same export a person makes to debug a workflow: temporal workflow show --output json.
    const { stdout } = await run(await temporalCliPath(), [
      'workflow',
      'show',
      '--address',
      s.config.TEMPORAL_ADDRESS,
      '--namespace',
      s.config.TEMPORAL_NAMESPACE,
      '-w',
      handle.workflowId,
      ...(runId ? ['-r', runId] : []),
      '--output',
      'json',
    ]);
    await writeFile(file, stdout);
    console.log(`wrote ${file}`);
  } finally {
    await s.close();
  }
}
process.exit(0);
