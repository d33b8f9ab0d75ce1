/**
 * The order workflow on the Java time-skipping test server (run from the stack's cached wrapper), with fake
 * activities: timers of hours and days complete at once, so grace windows and retry backoff are tested
 * without real waiting.
 */
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowBundle } from '../../src/domain/temporal.js';
import {
  ORDER_WORKFLOW_TYPE,
  orderEventSignal,
  orderWorkflowId,
  retryShipmentUpdate,
  type OrderView,
} from '../../workflows/api.js';
import { type OrderEvent } from '../../src/vocabulary/order.js';
import { jitteredDelayMs } from '../../activities/index.js';
import { SHIPMENT_BACKOFF } from '../../src/base/retry-policies.js';
import type { orderFulfilmentV2 } from '../../workflows/order-fulfilment.js';
import { fakeActivities, retryable, shipUntilCancelled } from '../support/fake-activities.js';
import { events } from '../support/harness.js';
import { timeSkippingForThisFile } from '../support/time-skipping.js';
import { defaultSettings as settings, waitUntil, withOrder } from '../support/workflow-driver.js';

const ts = timeSkippingForThisFile();

describe('order workflow (time-skipping)', () => {
  it('ships a placed order and closes as it settles', async () => {
    const { out, calls } = await withOrder(ts.env, {}, async (o) => {
      await o.start(events.placed('x', 'x'));
      return o.result();
    });
    expect(out.status).toBe('shipped');
    expect(calls.ship).toHaveLength(1);
    expect(calls.shipped).toHaveLength(1);
  });

  it('a tombstone waits its 30-day grace window, then ends cancelled without a placement', async () => {
    const { out, calls } = await withOrder(ts.env, {}, async (o) => {
      await o.start(events.cancelled('x', 'x'));
      return o.result();
    });
    expect(out.status).toBe('cancelled');
    expect(out.notes.join('\n')).toContain('grace window over');
    expect(calls.ship).toHaveLength(0);
  });

  it('a placement arriving inside the grace window is recorded as cancelled and never shipped', async () => {
    const { out, calls, rows } = await withOrder(ts.env, {}, async (o) => {
      await o.start(events.cancelled('x', 'x', { orderVersion: 2 }));
      await ts.env.sleep('29 days');
      expect((await o.query()).status).toBe('awaiting-placement');
      await o.signal(events.placed('x', 'x', { orderVersion: 1 }));
      return o.result();
    });
    expect(out.status).toBe('cancelled');
    expect(calls.ship).toHaveLength(0);
    expect([...rows.values()][0]).toMatchObject({ status: 'cancelled', placed: true });
  });

  it('a placement arriving after the grace window finds the run closed', async () => {
    await withOrder(ts.env, {}, async (o) => {
      await o.start(events.cancelled('x', 'x'));
      await o.result();
      await expect(o.signal(events.placed('x', 'x'))).rejects.toThrow(/completed|not found/i);
    });
  });

  it('retries a failing warehouse with growing, jittered backoff (2s, 4s, 8s... each halved at most), all in skipped time', async () => {
    let tries = 0;
    const { out, calls } = await withOrder(
      ts.env,
      {
        ship: async (_input, attempt) => {
          if ((tries += 1) < 5)
            throw retryable(`warehouse 503 (attempt ${attempt})`, jitteredDelayMs(attempt, SHIPMENT_BACKOFF));
          return 'shp-ok';
        },
        now: () => ts.env.currentTimeMs(),
      },
      async (o) => {
        await o.start(events.placed('x', 'x'));
        return o.result();
      },
    );
    expect(out.status).toBe('shipped');
    // The quick attempt (with the placement, a local activity) failed, then the activity's attempts backed off.
    expect(calls.ship.map((c) => `${c.local ? 'quick' : 'activity'} ${c.attempt}`)).toEqual([
      'quick 1',
      'activity 1',
      'activity 2',
      'activity 3',
      'activity 4',
    ]);
    const attempts = calls.ship.filter((c) => !c.local);
    const gaps = attempts.slice(1).map((c, i) => (c.atMs - attempts[i]!.atMs) / 1000);
    // Each wait lies between half and all of the exponential step, and never beyond the 60 s cap.
    for (const [i, gap] of gaps.entries()) {
      expect(gap).toBeGreaterThanOrEqual(2 ** i);
      expect(gap).toBeLessThanOrEqual(2 * 2 ** i + 1);
    }
  });

  it('holds the order as failed with the reason once the shipment attempts are exhausted', async () => {
    const { out, calls } = await withOrder(
      ts.env,
      {
        ship: async () => {
          throw retryable('warehouse down');
        },
      },
      async (o) => {
        await o.start(events.placed('x', 'x'));
        return o.result();
      },
    );
    // The quick attempt, then the activity's 8 (WAREHOUSE_ACTIVITY).
    expect(calls.ship.map((c) => c.local)).toEqual([true, ...Array<boolean>(8).fill(false)]);
    // Its run ended failed (OrderFailed), the order's view in the failure: the order's id may start again.
    expect(out.status).toBe('failed');
    expect(out.failureReason).toContain('warehouse down');
    expect(calls.failed).toHaveLength(1);
  });

  it('a cancellation during the shipment stops it and compensates', async () => {
    let shippingStarted = false;
    const { out, calls } = await withOrder(
      ts.env,
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

  it('ships and closes in the first workflow task with no linger: the record and the shipment are local activities', async () => {
    const { out, calls } = await withOrder(
      ts.env,
      {},
      async (o) => {
        await o.start(events.placed('x', 'x'));
        return o.result();
      },
      { ...settings, lingerSeconds: 0 },
    );
    expect(out.status).toBe('shipped');
    expect(calls.ship.map((c) => c.local)).toEqual([true]);
  });

  it('a cancellation delivered with its placement in one signal wins: never shipped', async () => {
    const { out, calls } = await withOrder(ts.env, {}, async (o) => {
      await o.start(events.placed('x', 'x'), events.cancelled('x', 'x', { orderVersion: 2 }));
      return o.result();
    });
    expect(out).toMatchObject({ status: 'cancelled', appliedEvents: 2 });
    expect(calls.ship).toHaveLength(0);
  });

  it("a burst of one order's events in one signal is applied in order, each once", async () => {
    const placed = events.placed('x', 'x');
    const storm = Array.from({ length: 300 }, (_, i) => ({ ...placed, eventId: `${placed.eventId}-again-${i}` }));
    const { out, calls } = await withOrder(ts.env, {}, async (o) => {
      await o.start(placed, placed, ...storm, events.placed('x', 'x', { orderVersion: 2 }));
      return o.result();
    });
    expect(out).toMatchObject({
      status: 'shipped',
      orderVersion: 2,
      appliedEvents: 2,
      duplicatesSuppressed: 1,
      staleIgnored: 300,
    });
    expect(calls.record.map((e) => e.orderVersion)).toEqual([1, 2]);
    expect(calls.ship).toHaveLength(1);
  });

  it('signals that arrived before the run first ran keep their order, a list and a single event alike', async () => {
    // All of it is in the history before a worker polls: the run meets a list, then a single event, in one activation.
    const taskQueue = `wf-${randomUUID()}`;
    const orderId = `o-${randomUUID().slice(0, 8)}`;
    const workflowId = orderWorkflowId('acme', orderId);
    const [v1, v2] = [1, 2].map(
      (v) => ({ ...events.placed('acme', orderId, { orderVersion: v }), tenantId: 'acme', orderId }) as OrderEvent,
    );
    const resent = { ...v1!, eventId: `${v1!.eventId}-resent` } as OrderEvent;
    await ts.env.client.workflow.signalWithStart<typeof orderFulfilmentV2, [OrderEvent | readonly OrderEvent[]]>(
      ORDER_WORKFLOW_TYPE,
      {
        workflowId,
        taskQueue,
        args: [{ tenantId: 'acme', orderId, settings: { ...settings, lingerSeconds: 0 } }],
        signal: orderEventSignal,
        signalArgs: [[v1!, v2!]],
      },
    );
    await ts.env.client.workflow.getHandle(workflowId).signal(orderEventSignal, resent);
    const fake = fakeActivities({});
    const worker = await Worker.create({
      connection: ts.env.nativeConnection,
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: fake.activities,
    });
    const out = (await worker.runUntil(ts.env.client.workflow.getHandle(workflowId).result())) as OrderView;
    expect(fake.calls.record.map((e) => e.eventId)).toEqual([v1!.eventId, v2!.eventId]);
    expect(out).toMatchObject({ status: 'shipped', orderVersion: 2, appliedEvents: 2, staleIgnored: 1 });
  });

  it('applies a duplicate once: copies that reach the open run together are recognised by their event id', async () => {
    const placed = events.placed('x', 'x');
    const { out, calls } = await withOrder(ts.env, {}, async (o) => {
      // As the bridge hands over copies queued together in one lane (a run that closed meets the store instead).
      await o.start(placed, placed, placed);
      return o.result();
    });
    expect(calls.record).toHaveLength(1);
    expect(out.duplicatesSuppressed).toBe(2);
  });

  it('an event the store can never hold is dead-lettered after one attempt; the order goes on with the next event', async () => {
    const unstorable = events.placed('x', 'x', {
      orderVersion: 1,
      origin: { topic: 'orders', partition: 2, offset: '41' },
    });
    const { out, calls } = await withOrder(
      ts.env,
      {
        refuse: (e) =>
          e.eventId === unstorable.eventId ? 'PostgreSQL refused it: value out of range (SQLSTATE 22003)' : undefined,
      },
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
      ts.env,
      {
        ship: async (input) => {
          if (!warehouseUp) throw retryable('warehouse down');
          return `shp-${input.orderId}`;
        },
      },
      async (o) => {
        await o.start(events.placed('x', 'x'));
        // Eight attempts with backoff, in skipped time; the run then lingers a day, failed (set below).
        let view = await o.query();
        while (view.status !== 'failed') {
          await ts.env.sleep('30 seconds');
          view = await o.query();
        }
        const handle = ts.env.client.workflow.getHandle(orderWorkflowId(view.tenantId, view.orderId));
        warehouseUp = true;
        const retried = await handle.executeUpdate(retryShipmentUpdate, { args: [{ reason }], updateId: 'retry-1' });
        expect(retried).toMatchObject({
          retry: 1,
          status: 'pending',
          reason,
          clearedFailure: expect.stringContaining('warehouse down'),
          shipmentKey: `ship/${view.tenantId}/${view.orderId}`,
        });
        // The same update id again is the same update: applied once, answered with the first result.
        expect(await handle.executeUpdate(retryShipmentUpdate, { args: [{ reason }], updateId: 'retry-1' })).toEqual(
          retried,
        );
        while ((await o.query()).status !== 'shipped') await ts.env.sleep('1 second');
        const refused = await handle
          .executeUpdate(retryShipmentUpdate, { args: [{ reason: 'once more' }], updateId: 'retry-2' })
          .then(
            () => undefined,
            (err: unknown) => err as Error & { cause?: Error },
          );
        expect(refused?.cause?.message).toMatch(/is shipped, not failed: only an order held as failed can be retried/);
        return o.result();
      },
      // A linger of a day: this test is the update on an open run (ORDER_LINGER_SECONDS > 0); at the default the
      // failed run closes and the operator's retry starts a repair run (operator-actions.int.test.ts).
      { ...settings, lingerSeconds: 24 * 3600 },
    );
    expect(calls.ship).toHaveLength(10); // the quick attempt and 8 failed ones, then the retry's (quick, and it ships)
    expect(calls.failed).toHaveLength(1);
    expect(calls.reopened).toEqual([{ retry: 1, reason, outcome: 'applied' }]);
    expect(calls.shipped).toHaveLength(1);
    expect(out).toMatchObject({ status: 'shipped', retries: 1 });
    expect(out.failureReason).toBeUndefined();
    expect(out.notes.join('\n')).toContain(`retry 1: failed → pending (${reason})`);
  });
});
