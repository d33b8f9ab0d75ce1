/**
 * The order workflow on the Java time-skipping test server (run from the stack's cached wrapper), with fake
 * activities: timers of hours and days complete at once, so grace windows and retry backoff are tested
 * without real waiting.
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflowBundle } from '../../src/temporal.js';
import {
  ORDER_WORKFLOW_TYPE,
  orderEventSignal,
  orderStatusQuery,
  orderWorkflowId,
  retryShipmentUpdate,
  type OrderEvent,
  type OrderView,
  type OrderWorkflowInput,
  type OrderWorkflowSettings,
} from '../../workflows/api.js';
import { SHIPMENT_BACKOFF, jitteredDelayMs } from '../../activities/index.js';
import type { orderFulfilment } from '../../workflows/order-fulfilment.js';
import { fakeActivities, retryable, shipUntilCancelled, type FakeOptions } from '../support/fake-activities.js';
import { events } from '../support/harness.js';
import { startTimeSkipping, type TimeSkippingServer } from '../support/time-skipping.js';

const DAY = 24 * 3600;
let env: TestWorkflowEnvironment;
let server: TimeSkippingServer | undefined;
beforeAll(async () => {
  server = await startTimeSkipping();
  env = server.env;
});
afterAll(async () => server?.teardown());

const settings: OrderWorkflowSettings = { cancelGraceSeconds: 30 * DAY, lingerSeconds: DAY };

/** Runs a worker with fake activities while `body` drives one order through signals. */
async function withOrder<T>(fakes: FakeOptions, body: (o: { start: (e: object) => Promise<void>; signal: (e: object) => Promise<void>; result: () => Promise<OrderView>; query: () => Promise<OrderView> }) => Promise<T>, s = settings) {
  const taskQueue = `wf-${randomUUID()}`;
  const tenantId = 'acme';
  const orderId = `o-${randomUUID().slice(0, 8)}`;
  const fake = fakeActivities(fakes);
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities: fake.activities,
    maxHeartbeatThrottleInterval: '1 second',
  });
  const workflowId = orderWorkflowId(tenantId, orderId);
  const handle = () => env.client.workflow.getHandle(workflowId);
  const withIds = (e: object) => ({ ...e, tenantId, orderId }) as OrderEvent;
  const out = await worker.runUntil(
    body({
      start: async (e) => {
        const input: OrderWorkflowInput = { tenantId, orderId, settings: s };
        await env.client.workflow.signalWithStart<typeof orderFulfilment, [OrderEvent]>(ORDER_WORKFLOW_TYPE, { workflowId, taskQueue, args: [input], signal: orderEventSignal, signalArgs: [withIds(e)] });
      },
      signal: (e) => handle().signal(orderEventSignal, withIds(e)),
      result: () => handle().result() as Promise<OrderView>,
      query: () => handle().query(orderStatusQuery),
    }),
  );
  return { out, calls: fake.calls, rows: fake.rows };
}

describe('order workflow (time-skipping)', () => {
  it('ships a placed order, then closes after the linger window (a day, skipped)', async () => {
    const { out, calls } = await withOrder({}, async (o) => {
      await o.start(events.placed('x', 'x'));
      return o.result();
    });
    expect(out.status).toBe('shipped');
    expect(calls.ship).toHaveLength(1);
    expect(calls.shipped).toHaveLength(1);
  });

  it('a tombstone waits its 30-day grace window, then ends cancelled without a placement', async () => {
    const { out, calls } = await withOrder({}, async (o) => {
      await o.start(events.cancelled('x', 'x'));
      return o.result();
    });
    expect(out.status).toBe('cancelled');
    expect(out.notes.join('\n')).toContain('grace window over');
    expect(calls.ship).toHaveLength(0);
  });

  it('a placement arriving inside the grace window is recorded as cancelled and never shipped', async () => {
    const { out, calls, rows } = await withOrder({}, async (o) => {
      await o.start(events.cancelled('x', 'x', { orderVersion: 2 }));
      await env.sleep('29 days');
      expect((await o.query()).status).toBe('awaiting-placement');
      await o.signal(events.placed('x', 'x', { orderVersion: 1 }));
      return o.result();
    });
    expect(out.status).toBe('cancelled');
    expect(calls.ship).toHaveLength(0);
    expect([...rows.values()][0]).toMatchObject({ status: 'cancelled', placed: true });
  });

  it('a placement arriving after the grace window finds the run closed', async () => {
    await withOrder({}, async (o) => {
      await o.start(events.cancelled('x', 'x'));
      await o.result();
      await expect(o.signal(events.placed('x', 'x'))).rejects.toThrow(/completed|not found/i);
    });
  });

  it('retries a failing warehouse with growing, jittered backoff (2s, 4s, 8s... each halved at most), all in skipped time', async () => {
    const { out, calls } = await withOrder(
      {
        ship: async (_input, attempt) => {
          if (attempt < 5) throw retryable(`warehouse 503 (attempt ${attempt})`, jitteredDelayMs(attempt, SHIPMENT_BACKOFF));
          return 'shp-ok';
        },
        now: () => env.currentTimeMs(),
      },
      async (o) => {
        await o.start(events.placed('x', 'x'));
        return o.result();
      },
    );
    expect(out.status).toBe('shipped');
    expect(calls.ship.map((c) => c.attempt)).toEqual([1, 2, 3, 4, 5]);
    const gaps = calls.ship.slice(1).map((c, i) => (c.atMs - calls.ship[i]!.atMs) / 1000);
    // Each wait lies between half and all of the exponential step, and never beyond the 60 s cap.
    for (const [i, gap] of gaps.entries()) {
      expect(gap).toBeGreaterThanOrEqual(2 ** i);
      expect(gap).toBeLessThanOrEqual(2 * 2 ** i + 1);
    }
  });

  it('holds the order as failed with the reason once the shipment attempts are exhausted', async () => {
    const { out, calls } = await withOrder(
      { ship: async () => { throw retryable('warehouse down'); } },
      async (o) => {
        await o.start(events.placed('x', 'x'));
        return o.result();
      },
    );
    expect(calls.ship).toHaveLength(8);
    expect(out.status).toBe('failed');
    expect(out.failureReason).toContain('warehouse down');
    expect(calls.failed).toHaveLength(1);
  });

  it('a cancellation during the shipment stops it and compensates', async () => {
    let shippingStarted = false;
    const { out, calls } = await withOrder(
      { ship: shipUntilCancelled(() => (shippingStarted = true)) },
      async (o) => {
        await o.start(events.placed('x', 'x'));
        await waitUntil(() => shippingStarted);
        await o.signal(events.cancelled('x', 'x', { orderVersion: 2 }));
        return o.result();
      },
    );
    expect(out.status).toBe('cancelled');
    expect(calls.shipped).toHaveLength(0);
    expect(calls.recalled).toHaveLength(1);
    expect(out.notes.join('\n')).toContain('compensated');
  });

  it('applies a duplicate signal once', async () => {
    const placed = events.placed('x', 'x');
    const { out, calls } = await withOrder({}, async (o) => {
      await o.start(placed);
      await o.signal(placed);
      await o.signal(placed);
      return o.result();
    });
    expect(calls.record).toHaveLength(1);
    expect(out.duplicatesSuppressed).toBe(2);
  });

  it('an event the store can never hold is dead-lettered after one attempt; the order goes on with the next event', async () => {
    const unstorable = events.placed('x', 'x', { orderVersion: 1, origin: { topic: 'orders', partition: 2, offset: '41' } });
    const { out, calls } = await withOrder(
      { refuse: (e) => (e.eventId === unstorable.eventId ? 'PostgreSQL refused it: value out of range (SQLSTATE 22003)' : undefined) },
      async (o) => {
        await o.start(unstorable);
        await o.signal(events.placed('x', 'x', { orderVersion: 2 }));
        return o.result();
      },
    );
    // Not retried: one attempt, then the DLQ — never the 5-minute hold loop of a transient failure.
    expect(calls.record.filter((e) => e.eventId === unstorable.eventId)).toHaveLength(1);
    expect(calls.deadLettered).toHaveLength(1);
    expect(calls.deadLettered[0]).toMatchObject({
      event: { eventId: unstorable.eventId, origin: { topic: 'orders', partition: 2, offset: '41' } },
      error: { name: 'UnstorableEventError', message: expect.stringContaining('SQLSTATE 22003') },
    });
    expect(out.status).toBe('shipped');
    expect(out.notes.join('\n')).toContain(`refused ${unstorable.eventId}`);
  });

  it('re-drives an order held as failed: the retryShipment update ships it once; a retry of a shipped order is refused', async () => {
    let warehouseUp = false;
    const reason = 'warehouse fixed (INC-7)';
    const { out, calls } = await withOrder(
      {
        ship: async (input) => {
          if (!warehouseUp) throw retryable('warehouse down');
          return `shp-${input.orderId}`;
        },
      },
      async (o) => {
        await o.start(events.placed('x', 'x'));
        // Eight attempts with backoff, in skipped time; the run then lingers a day, failed.
        let view = await o.query();
        while (view.status !== 'failed') {
          await env.sleep('30 seconds');
          view = await o.query();
        }
        const handle = env.client.workflow.getHandle(orderWorkflowId(view.tenantId, view.orderId));
        warehouseUp = true;
        const retried = await handle.executeUpdate(retryShipmentUpdate, { args: [{ reason }], updateId: 'retry-1' });
        expect(retried).toMatchObject({ retry: 1, status: 'pending', reason, clearedFailure: expect.stringContaining('warehouse down'), shipmentKey: `ship/${view.tenantId}/${view.orderId}` });
        // The same update id again is the same update: applied once, answered with the first result.
        expect(await handle.executeUpdate(retryShipmentUpdate, { args: [{ reason }], updateId: 'retry-1' })).toEqual(retried);
        while ((await o.query()).status !== 'shipped') await env.sleep('1 second');
        const refused = await handle.executeUpdate(retryShipmentUpdate, { args: [{ reason: 'once more' }], updateId: 'retry-2' }).then(
          () => undefined,
          (err: unknown) => err as Error & { cause?: Error },
        );
        expect(refused?.cause?.message).toMatch(/is shipped, not failed: only an order held as failed can be retried/);
        return o.result();
      },
    );
    expect(calls.ship).toHaveLength(9); // 8 failed attempts, then the retry's one
    expect(calls.failed).toHaveLength(1);
    expect(calls.reopened).toEqual([{ retry: 1, reason, outcome: 'applied' }]);
    expect(calls.shipped).toHaveLength(1);
    expect(out).toMatchObject({ status: 'shipped', retries: 1 });
    expect(out.failureReason).toBeUndefined();
    expect(out.notes.join('\n')).toContain(`retry 1: failed → pending (${reason})`);
  });
});

async function waitUntil(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 20));
}
