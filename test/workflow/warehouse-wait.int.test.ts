/**
 * An order whose shipment meets the warehouse down for everyone waits instead of failing, on the time-skipping test
 * server with fake activities (the real activity's WarehouseWaiting failure, test/support/fake-activities.ts
 * warehouseDown). What the resumer does in production — wake the order with resumeShipment — the test does by hand.
 */
import { Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { resumeShipmentSignal } from '../../workflows/api.js';
import { shipmentKey } from '../../src/vocabulary/order.js';
import { events } from '../support/events.js';
import { retryable, warehouseDown } from '../support/fake-activities.js';
import { timeSkippingForThisFile } from '../support/time-skipping.js';
import { defaultSettings, waitUntil, withOrder } from '../support/workflow-driver.js';

const ts = timeSkippingForThisFile();

describe('an order whose warehouse is down for everyone', () => {
  it('waits through an outage many times longer than its retry budget, spending no attempt, and ships once woken after it', async () => {
    const WAKES = 30;
    let down = true;
    let tries = 0;
    const ship = async () => {
      tries += 1;
      return down ? Promise.reject(warehouseDown()) : 'shp-1';
    };
    const { out, calls } = await withOrder(
      ts.env,
      { ship },
      async (o) => {
        await o.start(events.placed(o.tenantId, o.orderId));
        for (let wake = 1; wake <= WAKES; wake += 1) {
          // Each wake-up is one probe of the warehouse: the order tries once, finds it down, and waits again.
          await waitUntil(() => tries >= wake);
          await expect.poll(async () => (await o.query()).waitingSince, { timeout: 30_000 }).toBeDefined();
          if (wake === WAKES) down = false;
          // An outage of 30 hours, against a budget of 8 attempts in about 3 minutes; the last wake-up comes at once.
          if (wake < WAKES) await ts.env.sleep('1 hour');
          await o.handle().signal(resumeShipmentSignal);
        }
        return o.result();
      },
      { ...defaultSettings, shipmentDeadlineSeconds: 7 * 24 * 3600 },
    );
    expect(out.status).toBe('shipped');
    expect(calls.failed).toEqual([]);
    // Not one attempt spent: every try is the first attempt of its activity (or the quick local one).
    expect(calls.ship.map((c) => c.attempt).every((a) => a === 1)).toBe(true);
    // Each hour: the wake-up, and the order's own checks every 5 minutes ± 20 % (10 to 15 an hour) that nothing woke.
    expect(calls.ship.length).toBeGreaterThanOrEqual(WAKES * 10);
    expect(calls.ship.length).toBeLessThanOrEqual(WAKES * 16 + 1);
    expect(out.waitingSince).toBeUndefined();
  });

  it('shows the wait in its status — since when and why — and a cancellation wins at once: recorded, nothing shipped, the key recalled', async () => {
    let tries = 0;
    const ship = async () => {
      tries += 1;
      return Promise.reject(warehouseDown('shipping paused by ops: warehouse maintenance'));
    };
    const { out, calls } = await withOrder(ts.env, { ship }, async (o) => {
      await o.start(events.placed(o.tenantId, o.orderId));
      await waitUntil(() => tries >= 1);
      await expect
        .poll(async () => o.query(), { timeout: 30_000 })
        .toMatchObject({ status: 'pending', waitingReason: 'shipping paused by ops: warehouse maintenance' });
      expect(Date.parse((await o.query()).waitingSince!)).toBeGreaterThan(0);
      await o.signal(events.cancelled(o.tenantId, o.orderId));
      return o.result();
    });
    expect(out.status).toBe('cancelled');
    expect(calls.ship).toHaveLength(1);
    expect(calls.shipped).toEqual([]);
    expect(calls.recalled).toEqual([shipmentKey(out.tenantId, out.orderId)]);
  });

  it('is held as failed, with the reason, once it has waited past its shipment deadline', async () => {
    const { out, calls } = await withOrder(
      ts.env,
      { ship: async () => Promise.reject(warehouseDown()) },
      async (o) => {
        await o.start(events.placed(o.tenantId, o.orderId));
        return o.result(); // time skips to the deadline: nothing wakes the order
      },
      { ...defaultSettings, shipmentDeadlineSeconds: 6 * 3600 },
    );
    expect(out.status).toBe('failed');
    expect(out.failureReason).toMatch(/past the order's shipment deadline \(\S+Z\): warehouse circuit open/);
    // Its own checks every 5 minutes ± 20 % for 6 hours, then the one more try the deadline gives it.
    expect(calls.ship.length).toBeGreaterThanOrEqual(60);
    expect(calls.ship.every((c) => c.attempt === 1)).toBe(true);
    expect(calls.failed).toHaveLength(1);
  });

  it('ships by itself within one check once the warehouse answers, though no wake-up ever comes', async () => {
    let down = true;
    let tries = 0;
    const { out, calls } = await withOrder(
      ts.env,
      {
        ship: async () => {
          tries += 1;
          return down ? Promise.reject(warehouseDown(undefined, undefined, { recheckSeconds: 120 })) : 'shp-1';
        },
      },
      async (o) => {
        await o.start(events.placed(o.tenantId, o.orderId));
        await waitUntil(() => tries >= 1);
        await ts.env.sleep('10 minutes'); // its own checks, every 2 minutes ± 20 %, find the warehouse still down
        expect(tries).toBeGreaterThanOrEqual(4);
        down = false;
        return o.result();
      },
    );
    expect(out.status).toBe('shipped');
    expect(calls.ship.every((c) => c.attempt === 1)).toBe(true);
  });

  it('takes the deadline the worker that met the wait gives, not the one its start carried', async () => {
    const { out, calls } = await withOrder(
      ts.env,
      { ship: async () => Promise.reject(warehouseDown(undefined, undefined, { deadlineSeconds: 3600 })) },
      async (o) => {
        await o.start(events.placed(o.tenantId, o.orderId));
        return o.result();
      },
      { ...defaultSettings, shipmentDeadlineSeconds: 30 * 24 * 3600 },
    );
    expect(out.status).toBe('failed');
    expect(out.failureReason).toMatch(/past the order's shipment deadline/);
    // An hour of checks every 5 minutes ± 20 % and the deadline's try — not 30 days' worth.
    expect(calls.ship.length).toBeLessThanOrEqual(17);
  });

  it('is held by a pause for longer than its deadline without failing, and ships once the pause ends', async () => {
    let paused = true;
    let tries = 0;
    const pausedFor = 'shipping paused by ops at 2026-12-05T00:00:00.000Z: stock take';
    const { out, calls } = await withOrder(
      ts.env,
      {
        ship: async () => {
          tries += 1;
          if (tries === 1) throw warehouseDown(); // first an outage: the deadline starts
          if (paused) throw warehouseDown(pausedFor, undefined, { for: 'pause', deadlineSeconds: 3600 });
          return 'shp-1';
        },
      },
      async (o) => {
        await o.start(events.placed(o.tenantId, o.orderId));
        await waitUntil(() => tries >= 1);
        await ts.env.sleep('3 hours'); // three times the deadline: its own checks meet the pause, which holds it
        expect(await o.query()).toMatchObject({ status: 'pending', waitingReason: pausedFor });
        paused = false;
        await o.handle().signal(resumeShipmentSignal);
        return o.result();
      },
      { ...defaultSettings, shipmentDeadlineSeconds: 3600 },
    );
    expect(out.status).toBe('shipped');
    expect(calls.failed).toEqual([]);
  });

  it('waits for the store when the wait could not be recorded, checking again by itself soon, spending no attempt', async () => {
    let tries = 0;
    const { out, calls } = await withOrder(
      ts.env,
      {
        ship: async () => {
          tries += 1;
          if (tries <= 3)
            throw warehouseDown(undefined, undefined, {
              recheckSeconds: 30,
              unrecorded: 'permission denied for table fulfilments',
            });
          return 'shp-1';
        },
      },
      async (o) => {
        await o.start(events.placed(o.tenantId, o.orderId));
        await waitUntil(() => tries >= 1);
        await expect
          .poll(async () => (await o.query()).waitingReason, { timeout: 30_000 })
          .toMatch(/wait not recorded: permission denied/);
        return o.result();
      },
    );
    expect(out.status).toBe('shipped');
    expect(calls.ship.every((c) => c.attempt === 1)).toBe(true);
    expect(calls.failed).toEqual([]);
  });

  it('still spends its bounded attempts on a failure of its own (the warehouse answers others), and is held as failed after them', async () => {
    const { out, calls } = await withOrder(
      ts.env,
      { ship: async () => Promise.reject(retryable('warehouse answered 503 to /shipments', 1000)) },
      async (o) => {
        await o.start(events.placed(o.tenantId, o.orderId));
        return o.result();
      },
    );
    expect(out.status).toBe('failed');
    // The quick local attempt, then the heartbeating activity's bounded attempts.
    expect(calls.ship.filter((c) => !c.local).map((c) => c.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('tries again at once when it was woken while the attempt that found the warehouse down was still running', async () => {
    let tries = 0;
    let release: (() => void) | undefined;
    const { out, calls } = await withOrder(
      ts.env,
      {
        ship: async () => {
          tries += 1;
          if (tries === 1) throw warehouseDown();
          if (tries === 2) {
            // The second try is slow to fail: the wake-up lands while it runs.
            if (!Context.current().info.isLocal) Context.current().heartbeat();
            await new Promise<void>((r) => (release = r));
            throw warehouseDown();
          }
          return 'shp-2';
        },
      },
      async (o) => {
        await o.start(events.placed(o.tenantId, o.orderId));
        await waitUntil(() => tries >= 1);
        await expect.poll(async () => (await o.query()).waitingSince, { timeout: 30_000 }).toBeDefined();
        await o.handle().signal(resumeShipmentSignal);
        await waitUntil(() => release !== undefined);
        await o.handle().signal(resumeShipmentSignal);
        release!();
        return o.result();
      },
    );
    expect(out.status).toBe('shipped');
    expect(calls.ship).toHaveLength(3);
  });
});
