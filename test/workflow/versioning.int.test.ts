/**
 * Changing the workflow safely (docs/changing-the-workflow.md): a change to its commands goes in behind
 * patched(), so runs recorded before it replay the old path and running orders take the new one from the point
 * they reach it. Shown with the real example in the code, `dead-letter-refused-events` (an event the store refuses
 * for good is dead-lettered), against the workflow as it was just before that change (commit 74af5af), on the
 * time-skipping server with fake activities.
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflowBundle } from '../../src/temporal.js';
import {
  ORDER_WORKFLOW_TYPE,
  ORDER_WORKFLOW_TYPE_V1,
  orderEventSignal,
  orderStatusQuery,
  orderWorkflowId,
  type OrderWorkflowInput,
} from '../../workflows/api.js';
import { type OrderEvent } from '../../src/order.js';
import type { orderFulfilment } from '../../workflows/order-fulfilment-v1.js';
import { events } from '../support/events.js';
import { fakeActivities } from '../support/fake-activities.js';
import { startTimeSkipping, type TimeSkippingServer } from '../support/time-skipping.js';
import { workflowBundleAt } from '../support/workflow-at.js';

/** The last commit before the `dead-letter-refused-events` patch. */
const BEFORE_PATCH = '74af5af';
// A linger of a minute: runs started on the old code must still be open when the new code takes them over.
const settings = { cancelGraceSeconds: 3600, lingerSeconds: 60 };

let server: TimeSkippingServer | undefined;
let env: TestWorkflowEnvironment;
let before: WorkflowBundleWithSourceMap;
let current: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  server = await startTimeSkipping();
  env = server.env;
  [before, current] = await Promise.all([workflowBundleAt(BEFORE_PATCH), workflowBundle()]);
});
afterAll(async () => server?.teardown());

/** Replays one fetched history against `bundle`; the error, if it does not replay. */
async function replayError(bundle: WorkflowBundleWithSourceMap, workflowId: string): Promise<unknown> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  for await (const r of Worker.runReplayHistories({ workflowBundle: bundle }, [{ workflowId, history }]))
    return r.error;
  throw new Error('nothing replayed');
}

function order() {
  const orderId = `o-${randomUUID().slice(0, 8)}`;
  const workflowId = orderWorkflowId('acme', orderId);
  const taskQueue = `versioning-${randomUUID()}`;
  const refused = events.placed('acme', orderId, { orderVersion: 1 }) as OrderEvent;
  const fake = fakeActivities({
    refuse: (e) => (e.eventId === refused.eventId ? 'value out of range (SQLSTATE 22003)' : undefined),
  });
  const start = (e: OrderEvent) =>
    env.client.workflow.signalWithStart<typeof orderFulfilment, [OrderEvent | readonly OrderEvent[]]>(
      ORDER_WORKFLOW_TYPE_V1,
      {
        workflowId,
        taskQueue,
        args: [{ tenantId: 'acme', orderId, settings } satisfies OrderWorkflowInput],
        signal: orderEventSignal,
        signalArgs: [e],
      },
    );
  // No sticky cache: a stopped worker's workflows go straight back to the task queue for the next worker (the
  // time-skipping server does not hand a sticky queue's tasks on when its worker leaves).
  const worker = (bundle: WorkflowBundleWithSourceMap) =>
    Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities: fake.activities,
      maxCachedWorkflows: 0,
    });
  return {
    orderId,
    workflowId,
    taskQueue,
    refused,
    fake,
    start,
    worker,
    handle: () => env.client.workflow.getHandle(workflowId),
  };
}

describe('changing the workflow behind patched()', () => {
  it('a run recorded before the change replays on the current code (and its refused event stays un-dead-lettered)', async () => {
    const o = order();
    const old = await o.worker(before);
    await old.runUntil(async () => {
      await o.start(o.refused);
      await o.handle().signal(orderEventSignal, events.placed('acme', o.orderId, { orderVersion: 2 }) as OrderEvent);
      await o.handle().result();
    });
    // The old code refused the event without dead-lettering it.
    expect(o.fake.calls.deadLettered).toHaveLength(0);
    expect(await replayError(current, o.workflowId)).toBeUndefined();
  });

  it('a running order started on the old code takes the new path on the current code, and its history replays there only', async () => {
    const o = order();
    const old = await o.worker(before);
    await old.runUntil(async () => {
      await o.start(events.cancelled('acme', o.orderId, { orderVersion: 1 }) as OrderEvent);
      // A tombstone waiting for its placement: the run is open, with history written by the old code.
      for (;;) {
        const view = await o.handle().query(orderStatusQuery);
        if (view.status === 'awaiting-placement') break;
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    const next = await o.worker(current);
    await next.runUntil(async () => {
      await o.handle().signal(orderEventSignal, { ...o.refused, orderVersion: 2 });
      await o.handle().signal(orderEventSignal, events.placed('acme', o.orderId, { orderVersion: 3 }) as OrderEvent);
      await o.handle().result();
    });
    // The refusal happened on the current code, so it took the patched path.
    expect(o.fake.calls.deadLettered.map((d) => d.event.eventId)).toEqual([o.refused.eventId]);
    expect(await replayError(current, o.workflowId)).toBeUndefined();
    // The old code cannot replay it: without patched() this change would have broken running orders.
    expect(String(await replayError(before, o.workflowId))).toMatch(/[Nn]ondeterminism|TMPRL1100/);
  });
});

/** The last commit before the `cheaper-orders` patch (local-activity records, one shipping activity, one linger timer). */
const BEFORE_CHEAPER = '57d86d4';

describe('the cheaper order shape behind patched("cheaper-orders")', () => {
  let beforeCheaper: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    beforeCheaper = await workflowBundleAt(BEFORE_CHEAPER);
  });

  const scheduledActivities = async (workflowId: string) =>
    ((await env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? []).flatMap((e) =>
      e.activityTaskScheduledEventAttributes?.activityType?.name
        ? [e.activityTaskScheduledEventAttributes.activityType.name]
        : [],
    );

  it('an order shipped on the old code and lingering finishes on the current code in the old shape; its history replays on both', async () => {
    const o = order();
    const old = await o.worker(beforeCheaper);
    await old.runUntil(async () => {
      await o.start(events.placed('acme', o.orderId, { orderVersion: 1 }) as OrderEvent);
      for (;;) {
        if ((await o.handle().query(orderStatusQuery)).status === 'shipped') break;
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    const next = await o.worker(current);
    const out = await next.runUntil(async () => {
      await o.handle().signal(orderEventSignal, events.cancelled('acme', o.orderId, { orderVersion: 2 }) as OrderEvent);
      return o.handle().result();
    });
    expect(out).toMatchObject({ status: 'shipped', cancelRefused: true });
    // The late cancellation was recorded by the old shape's activity, not a local activity.
    expect(await scheduledActivities(o.workflowId)).toEqual([
      'recordOrderEvent',
      'shipOrder',
      'markOrderShipped',
      'recordOrderEvent',
    ]);
    expect(await replayError(current, o.workflowId)).toBeUndefined();
    expect(await replayError(beforeCheaper, o.workflowId)).toBeUndefined();
  });

  it('an order started on the current code takes the cheaper shape, whose history the old code cannot replay', async () => {
    const o = order();
    const next = await o.worker(current);
    const out = await next.runUntil(async () => {
      await o.start(events.placed('acme', o.orderId, { orderVersion: 1 }) as OrderEvent);
      return o.handle().result();
    });
    expect(out.status).toBe('shipped');
    expect(await scheduledActivities(o.workflowId)).toEqual(['shipAndRecordOrder']);
    expect(await replayError(current, o.workflowId)).toBeUndefined();
    expect(String(await replayError(beforeCheaper, o.workflowId))).toMatch(/[Nn]ondeterminism|TMPRL1100/);
  });
});

/** The last commit before orderFulfilmentV2: new orders started orderFulfilment there. */
const BEFORE_V2 = '7bceeef';

describe('the one-task order type, orderFulfilmentV2, beside the earlier type', () => {
  let beforeV2: WorkflowBundleWithSourceMap;
  beforeAll(async () => {
    beforeV2 = await workflowBundleAt(BEFORE_V2);
  });

  const historyOf = async (workflowId: string) =>
    (await env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];

  it('an order started as orderFulfilment before the change finishes on the current code in its own shape, a list of events included', async () => {
    const o = order();
    const old = await o.worker(beforeV2);
    await old.runUntil(async () => {
      await o.start(events.placed('acme', o.orderId, { orderVersion: 1 }) as OrderEvent);
      for (;;) {
        if ((await o.handle().query(orderStatusQuery)).status === 'shipped') break;
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    const next = await o.worker(current);
    const out = await next.runUntil(async () => {
      // The current bridge sends several events of one order as one list: the earlier type takes them.
      await o
        .handle()
        .signal(orderEventSignal, [
          events.placed('acme', o.orderId, { orderVersion: 1 }) as OrderEvent,
          events.cancelled('acme', o.orderId, { orderVersion: 2 }) as OrderEvent,
        ]);
      return o.handle().result();
    });
    expect(out).toMatchObject({ status: 'shipped', cancelRefused: true, staleIgnored: 1 });
    expect((await o.handle().describe()).type).toBe(ORDER_WORKFLOW_TYPE_V1);
    expect(await replayError(current, o.workflowId)).toBeUndefined();
  });

  it('a new order runs as orderFulfilmentV2: recorded, shipped and closed in its first workflow task', async () => {
    const o = order();
    const next = await o.worker(current);
    const out = await next.runUntil(async () => {
      await env.client.workflow.signalWithStart(ORDER_WORKFLOW_TYPE, {
        workflowId: o.workflowId,
        taskQueue: o.taskQueue,
        args: [
          {
            tenantId: 'acme',
            orderId: o.orderId,
            settings: { ...settings, lingerSeconds: 0 },
          } satisfies OrderWorkflowInput,
        ],
        signal: orderEventSignal,
        signalArgs: [events.placed('acme', o.orderId, { orderVersion: 1 }) as OrderEvent],
      });
      return o.handle().result();
    });
    expect(out.status).toBe('shipped');
    const history = await historyOf(o.workflowId);
    expect(history.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
    expect(history.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(0);
    // Seven: started, signalled, one task (scheduled, started, completed) whose completion carries the placement and
    // its shipment as one local-activity marker, and completed. The time-skipping server has no OrderStatus attribute,
    // so the upsert at settling (the eighth on a stack) is skipped.
    expect(history).toHaveLength(7);
    expect(await replayError(current, o.workflowId)).toBeUndefined();
    expect(String(await replayError(beforeV2, o.workflowId))).toMatch(/not registered|not found|orderFulfilmentV2/i);
  });
});
