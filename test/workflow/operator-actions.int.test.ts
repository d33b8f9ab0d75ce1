/**
 * What needs a person, on the time-skipping test server with fake activities: a recall the warehouse refuses for good
 * holds a cancelled order as recall-failed (the run ends failed, so its id stays free for a repair); the resolveRecall
 * update retries the recall or records it done by hand; and a repair run — what `fulfilment order retry|resolve`
 * starts once the order's run closed — loads the order from the store and applies the operator's request to it, or
 * refuses it when the store holds the order otherwise (a late cancellation won).
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { resolveRecallUpdate, retryShipmentUpdate, type ResolveRecallResult } from '../../workflows/api.js';
import { shipUntilCancelled } from '../support/fake-activities.js';
import { events } from '../support/harness.js';
import { timeSkippingForThisFile } from '../support/time-skipping.js';
import { waitUntil, withOrder, type OrderDriver } from '../support/workflow-driver.js';

const ts = timeSkippingForThisFile();

/** The warehouse's refusal of a recall, as the activity reports it (a non-retryable WarehouseRejectedError). */
const refusedRecall = () =>
  ApplicationFailure.nonRetryable('warehouse refused to cancel ship/acme/o: 409', 'WarehouseRejectedError');

/** Places the order, cancels it while the shipment is in flight, and waits until the workflow settled. */
async function cancelDuringShipment(o: OrderDriver, started: () => boolean): Promise<void> {
  await o.start(events.placed('x', 'x'));
  await waitUntil(started);
  await o.signal(events.cancelled('x', 'x', { orderVersion: 2 }));
  while (!['cancelled', 'recall-failed'].includes((await o.query()).status)) await ts.env.sleep('1 second');
}

/** The failure an update was refused with (its cause's message), or undefined when it was accepted. */
async function refusal(update: Promise<unknown>): Promise<string | undefined> {
  return update.then(
    () => undefined,
    (err: unknown) => (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message,
  );
}

describe('orders that need a person (time-skipping)', () => {
  it('a recall the warehouse refuses for good holds the cancelled order as recall-failed, and its run ends failed', async () => {
    let shipping = false;
    const { out, calls, rows } = await withOrder(
      ts.env,
      {
        ship: shipUntilCancelled(() => (shipping = true)),
        recall: async () => {
          throw refusedRecall();
        },
      },
      async (o) => {
        await cancelDuringShipment(o, () => shipping);
        return o.result();
      },
      { cancelGraceSeconds: 3600, lingerSeconds: 0 },
    );
    expect(out).toMatchObject({
      status: 'recall-failed',
      recallFailures: 1,
      failureReason: expect.stringContaining('409'),
    });
    expect(calls.recalled).toHaveLength(1);
    expect(calls.recallFailed).toEqual([{ reason: expect.stringContaining('409'), attempt: 1, outcome: 'applied' }]);
    expect([...rows.values()][0]).toMatchObject({ status: 'recall-failed', recallFailures: 1 });
    expect(calls.shipped).toHaveLength(0);
  });

  it('resolveRecall: a retried recall refused again stays recall-failed; recalled on the next try, the order is cancelled', async () => {
    let shipping = false;
    let warehouseRefuses = true;
    const { out, calls } = await withOrder(
      ts.env,
      {
        ship: shipUntilCancelled(() => (shipping = true)),
        recall: async () => {
          if (warehouseRefuses) throw refusedRecall();
          return true;
        },
      },
      async (o) => {
        await cancelDuringShipment(o, () => shipping);
        const h = o.handle();
        // Refused by the validator, nothing recorded: an unknown action, and a retry (the order is not failed).
        expect(
          await refusal(h.executeUpdate(resolveRecallUpdate, { args: [{ action: 'shrug' as never, reason: 'x' }] })),
        ).toMatch(/action must be one of retry-recall, recalled-by-hand/);
        expect(await refusal(h.executeUpdate(retryShipmentUpdate, { args: [{ reason: 'x' }] }))).toMatch(
          /is recall-failed, not failed/,
        );

        const again: ResolveRecallResult = await h.executeUpdate(resolveRecallUpdate, {
          args: [{ action: 'retry-recall', reason: 'asked the carrier', by: 'ops-1' }],
          updateId: 'r-1',
        });
        expect(again).toMatchObject({ status: 'recall-failed', refusal: expect.stringContaining('409'), by: 'ops-1' });
        expect((await o.query()).recallFailures).toBe(2);

        warehouseRefuses = false;
        const done = await h.executeUpdate(resolveRecallUpdate, {
          args: [{ action: 'retry-recall', reason: 'carrier agreed', by: 'ops-1' }],
          updateId: 'r-2',
        });
        expect(done).toMatchObject({ status: 'cancelled', action: 'retry-recall', reason: 'carrier agreed' });
        // A repeated update id is the same request: answered with the first result, applied once.
        expect(
          await h.executeUpdate(resolveRecallUpdate, {
            args: [{ action: 'retry-recall', reason: 'carrier agreed', by: 'ops-1' }],
            updateId: 'r-2',
          }),
        ).toEqual(done);
        return o.result();
      },
      // A linger of a day: updates to the run that held the order (ORDER_LINGER_SECONDS > 0); at the default the run
      // closes and the operator's request starts a repair run (the repair tests below).
      { cancelGraceSeconds: 3600, lingerSeconds: 24 * 3600 },
    );
    expect(out).toMatchObject({ status: 'cancelled', recallFailures: 2 });
    expect(out.failureReason).toBeUndefined();
    expect(out.notes.join('\n')).toContain('resolved (retry-recall) by ops-1: carrier agreed');
    expect(calls.recalled).toHaveLength(3);
    expect(calls.recallFailed.map((c) => c.attempt)).toEqual([1, 2]);
    expect(calls.resolved).toEqual([
      { action: 'retry-recall', reason: 'carrier agreed', by: 'ops-1', failures: 2, outcome: 'applied' },
    ]);
  });

  it('a repair run loads a recall-failed order from the store and records it recalled by hand', async () => {
    const { out, calls } = await withOrder(ts.env, {}, async (o) => {
      o.rows.set(`${o.tenantId}/${o.orderId}`, {
        status: 'recall-failed',
        orderVersion: 2,
        placed: true,
        cancelRefused: false,
        recallFailures: 1,
        failureReason: 'refused: 409',
      });
      await o.startRepair();
      const done = await o.handle().executeUpdate(resolveRecallUpdate, {
        args: [{ action: 'recalled-by-hand', reason: 'returned by the carrier', by: 'ops-2' }],
      });
      expect(done).toMatchObject({ status: 'cancelled', action: 'recalled-by-hand' });
      return o.result();
    });
    expect(out).toMatchObject({ status: 'cancelled', orderVersion: 2, recallFailures: 1 });
    expect(out.notes[0]).toContain('loaded from the store: recall-failed v2');
    expect(calls.recalled).toHaveLength(0);
    expect(calls.resolved).toEqual([
      { action: 'recalled-by-hand', reason: 'returned by the carrier', by: 'ops-2', failures: 1, outcome: 'applied' },
    ]);
  });

  it('a repair run of a failed order ships it once; one whose order the store holds cancelled refuses the retry and ends cancelled', async () => {
    const shipped = await withOrder(ts.env, {}, async (o) => {
      o.rows.set(`${o.tenantId}/${o.orderId}`, {
        status: 'failed',
        orderVersion: 1,
        placed: true,
        cancelRefused: false,
        failureReason: 'warehouse 422',
      });
      await o.startRepair();
      const retried = await o
        .handle()
        .executeUpdate(retryShipmentUpdate, { args: [{ reason: 'SKU mapping fixed', by: 'ops-3' }] });
      expect(retried).toMatchObject({ retry: 1, status: 'pending', clearedFailure: 'warehouse 422', by: 'ops-3' });
      return o.result();
    });
    expect(shipped.out).toMatchObject({ status: 'shipped', retries: 1 });
    expect(shipped.calls.ship).toHaveLength(1);
    expect(shipped.calls.shipped).toHaveLength(1);

    // A late cancellation was recorded after the operator looked: the store holds the order cancelled, and wins.
    const raced = await withOrder(ts.env, {}, async (o) => {
      o.rows.set(`${o.tenantId}/${o.orderId}`, {
        status: 'cancelled',
        orderVersion: 3,
        placed: true,
        cancelRefused: false,
      });
      await o.startRepair();
      expect(await refusal(o.handle().executeUpdate(retryShipmentUpdate, { args: [{ reason: 'try again' }] }))).toMatch(
        /is cancelled, not failed/,
      );
      return o.result();
    });
    expect(raced.out.status).toBe('cancelled');
    expect(raced.calls.ship).toHaveLength(0);
    expect(raced.calls.reopened).toHaveLength(0);
  });

  it('a repair run that finds no order in the store ends failed, leaving the id free', async () => {
    const { out, calls } = await withOrder(ts.env, {}, async (o) => {
      await o.startRepair();
      return o.result();
    });
    expect(out.status).toBe('new');
    expect(out.notes).toContain('loaded from the store: no such order');
    expect(calls.loaded).toHaveLength(1);
  });
});
