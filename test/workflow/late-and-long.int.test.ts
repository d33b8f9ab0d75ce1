/**
 * The order workflow at the service's defaults (runs close as they settle) on the time-skipping test server, with
 * fake activities over a fake warehouse that behaves like the real one: a shipment attempt that lands after the key
 * was recalled makes nothing. The cases here are the ones a closed or abandoned path could get wrong:
 * - a cancellation recorded after the placement's quick shipment attempt gave up (the warehouse may still ship);
 * - a late cancellation of a failed order, handled by a run started from the store, recalls the shipment key;
 * - an order whose run continued as new still knows what it saw before: duplicates, stale versions, cancellations.
 */
import { Context } from '@temporalio/activity';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ORDER_WORKFLOW_TYPE, orderEventSignal, type OrderWorkflowInput } from '../../workflows/api.js';
import { shipmentKey, type OrderEvent } from '../../src/vocabulary/order.js';
import type { orderFulfilmentV2 } from '../../workflows/order-fulfilment.js';
import { events } from '../support/events.js';
import { timeSkippingForThisFile } from '../support/time-skipping.js';
import { defaultSettings as settings, waitUntil, withOrder } from '../support/workflow-driver.js';
import { retryable, type FakeRow } from '../support/fake-activities.js';
import { QUICK_SHIPMENT } from '../../workflows/activity-options.js';

const ts = timeSkippingForThisFile();

/** A warehouse as the real one keeps its keys: a shipment made once per key; a recall burns the key, shipped or not. */
function fakeWarehouse() {
  const keys = new Map<string, 'shipped' | 'recalled' | 'burnt'>();
  return {
    keys,
    ship(key: string): string | undefined {
      const state = keys.get(key);
      if (state === 'recalled' || state === 'burnt') return undefined;
      keys.set(key, 'shipped');
      return `shp-${key}`;
    },
    recall(key: string): boolean {
      const existed = keys.get(key) === 'shipped';
      keys.set(key, existed ? 'recalled' : 'burnt');
      return existed;
    },
  };
}

const quickTimeoutMs = Number.parseInt(QUICK_SHIPMENT.startToCloseTimeout, 10) * 1000;

describe('a cancellation over an abandoned shipment attempt', () => {
  it('the quick attempt gives up while the warehouse is still making the shipment, and the record falls back to an activity; the cancellation that arrives meanwhile recalls the key, so nothing ships', async () => {
    const warehouse = fakeWarehouse();
    let recordAttempts = 0;
    let durableRecord: (() => void) | undefined;
    let cancelSent = false;
    let quickLanded = false;
    let rows: Map<string, FakeRow> | undefined;
    const { out, calls } = await withOrder(
      ts.env,
      {
        ship: async (input) => {
          if (!Context.current().info.isLocal)
            return warehouse.ship(input.key) ?? Promise.reject(new Error('recalled'));
          // The quick attempt's request reached the warehouse, which makes the shipment only after the attempt's
          // timeout (the workflow gave up on it) and after the cancellation was recorded — unless the key was burnt.
          await new Promise((resolve) => setTimeout(resolve, quickTimeoutMs));
          await waitUntil(() => rows?.get(`${input.tenantId}/${input.orderId}`)?.status === 'cancelled');
          const made = warehouse.ship(input.key);
          quickLanded = true;
          return made ?? `too-late-${input.key}`;
        },
        // After the quick attempt (placeAndShip's own record), the placement's record meets a store that is down for
        // the local attempts, and goes to the activity — a workflow task boundary, where the cancellation arrives.
        record: async (_event, local) => {
          recordAttempts += 1;
          if (recordAttempts === 1) return;
          if (local) throw retryable('PostgreSQL restarting');
          await new Promise<void>((resolve) => {
            durableRecord = resolve;
            if (cancelSent) resolve();
          });
        },
        recall: async (key) => warehouse.recall(key),
      },
      async (o) => {
        rows = o.rows;
        await o.start(events.placed('x', 'x', { orderVersion: 1 }));
        await waitUntil(() => durableRecord !== undefined);
        await o.signal(events.cancelled('x', 'x', { orderVersion: 2 }));
        cancelSent = true;
        durableRecord!();
        const view = await o.result();
        await waitUntil(() => quickLanded);
        return view;
      },
    );
    expect(out.status, out.notes.join('\n')).toBe('cancelled');
    const key = shipmentKey('acme', out.orderId);
    expect(calls.recalled).toEqual([key]);
    // Whichever came first at the warehouse — the recall or the abandoned attempt — no shipment stands.
    expect(warehouse.keys.get(key)).toMatch(/^(recalled|burnt)$/);
    // The abandoned attempt's own record of the shipment came after the cancellation: the store refused it.
    expect([...(rows?.values() ?? [])][0]).toMatchObject({ status: 'cancelled' });
  });

  it("a late cancellation of a failed order, in a run started from the store, cancels it and recalls (burns) the order's key", async () => {
    const warehouse = fakeWarehouse();
    const { out, calls, rows } = await withOrder(
      ts.env,
      { recall: async (key) => warehouse.recall(key) },
      async (o) => {
        o.rows.set(`${o.tenantId}/${o.orderId}`, {
          status: 'failed',
          orderVersion: 1,
          placed: true,
          cancelRefused: false,
          failureReason: 'warehouse down',
        });
        // As the bridge starts it when the store hands the event back (src/roles/bridge/order-starter.ts
        // startFromStore).
        const input: OrderWorkflowInput = { tenantId: o.tenantId, orderId: o.orderId, settings, repair: true };
        const cancel = { ...events.cancelled(o.tenantId, o.orderId, { orderVersion: 2 }) } as OrderEvent;
        await ts.env.client.workflow.signalWithStart<typeof orderFulfilmentV2, [OrderEvent | readonly OrderEvent[]]>(
          ORDER_WORKFLOW_TYPE,
          {
            workflowId: o.handle().workflowId,
            taskQueue: o.taskQueue,
            workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
            args: [input],
            signal: orderEventSignal,
            signalArgs: [cancel],
          },
        );
        return o.result();
      },
    );
    expect(out.status).toBe('cancelled');
    expect(calls.loaded).toHaveLength(1);
    expect(calls.recalled).toEqual([shipmentKey(out.tenantId, out.orderId)]);
    expect(warehouse.keys.get(shipmentKey(out.tenantId, out.orderId))).toBe('burnt');
    expect([...rows.values()][0]).toMatchObject({ status: 'cancelled' });
    expect(calls.ship).toHaveLength(0);
  });
});

describe('continue-as-new of the current workflow type', () => {
  it('a tombstone whose history grew past the limit continues as new and still knows what it saw: a duplicate from before, a stale version, a newer cancellation, then its placement', async () => {
    const first = events.cancelled('x', 'x', { orderVersion: 5 });
    const { out, calls } = await withOrder(
      ts.env,
      {},
      async (o) => {
        await o.start(first);
        const firstRun = (await o.handle().describe()).runId;
        // Older cancellations, each its own event id: each costs the history a signal and a task, nothing else.
        for (let v = 1; v <= 4; v += 1) await o.signal(events.cancelled('x', 'x', { orderVersion: v }));
        let runId = firstRun;
        while (runId === firstRun) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          runId = (await o.handle().describe()).runId;
        }
        const before = await ts.env.client.workflow.getHandle(o.handle().workflowId, firstRun).describe();
        expect(before.status.name).toBe('CONTINUED_AS_NEW');
        await o.signal(first); // a duplicate of an event from before the cut
        await o.signal(events.cancelled('x', 'x', { orderVersion: 3 })); // stale
        await o.signal(events.cancelled('x', 'x', { orderVersion: 6 })); // newer: recorded
        await o.signal(events.placed('x', 'x', { orderVersion: 1 })); // the placement the tombstone waited for
        return o.result();
      },
      // The smallest limit the service accepts (ORDER_CONTINUE_AS_NEW_AFTER_EVENTS ≥ 10), so a few events force it.
      { ...settings, continueAsNewAfterEvents: 10 },
    );
    expect(out).toMatchObject({ status: 'cancelled', orderVersion: 6 });
    expect(out.duplicatesSuppressed).toBeGreaterThanOrEqual(1);
    expect(out.staleIgnored).toBe(5);
    // Recorded through the store: the first cancellation, the newer one and the placement — never the duplicate. (A
    // record's quick attempt that ran out of time on a loaded machine is tried again: the store's claim absorbs it.)
    expect(
      [...new Set(calls.record.map((e) => e.eventId))].map(
        (id) => calls.record.find((e) => e.eventId === id)!.orderVersion,
      ),
    ).toEqual([5, 6, 1]);
    expect(calls.ship).toHaveLength(0);
  });
});
