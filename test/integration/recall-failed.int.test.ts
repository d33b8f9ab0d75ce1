/**
 * Compensation that cannot finish asks for a person, on the real stack. An order is cancelled while its shipment is in
 * flight (the in-process warehouse made slow), and the warehouse refuses for good to recall it (its `refuseRecalls`
 * fault): the order is held as recall-failed with the refusal — in the store, `order show`, the OrderStatus search
 * attribute the Web UI shows, fulfilment_orders_recall_failed_total and fulfilment_orders_needing_attention — and its
 * run ends. `fulfilment order resolve` then resolves it through a repair run: a retried recall refused again leaves it
 * held (exit 1), one the warehouse accepts records it cancelled; `recalled-by-hand` records it cancelled as it is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { metricValue } from '../../src/base/metrics.js';
import { OrderStatusAttribute, orderWorkflowId } from '../../workflows/api.js';
import { counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { cliOf, faultsOf } from '../support/operator.js';

describe('recall-failed: a recall the warehouse refuses for good', () => {
  let s: Scenario;
  let app: App;
  let tenant: string;

  beforeAll(async () => {
    s = await scenario('recall-failed', { WORKER_ATTENTION_POLL_SECONDS: '1' });
    app = await s.startInstance();
    tenant = s.tenant('recall');
  });

  afterAll(async () => {
    await fetch(`${s.warehouse.url}/admin/faults`, {
      method: 'POST',
      body: JSON.stringify({ latencyMs: 0, refuseRecalls: [] }),
    }).catch(() => undefined);
    await s?.close();
  });

  const faults = (body: object) => faultsOf(s)(body);
  /**
   * How slow the warehouse is made: past the quick shipment's 3 s, so the order's shipment is the cancellable
   * activity when its cancellation comes, with seconds to spare for a loaded machine to deliver that (at 3 s, the
   * quick attempt and the warehouse's answer raced, and a slow delivery could find the order shipped).
   */
  const SLOW_MS = 8000;
  const cli = (...argv: string[]) => cliOf(s)(...argv);

  /** Places `orderId`, cancels it once the warehouse received its shipment request, and waits until it is held. */
  async function recallFailedOrder(orderId: string): Promise<void> {
    const key = `ship/${tenant}/${orderId}`;
    await s.produce([{ key: `${tenant}/${orderId}`, value: events.placed(tenant, orderId) }]);
    await waitFor(`${orderId}'s shipment request at the warehouse`, () =>
      s.warehouse.requests().some((r) => r.idempotencyKey === key),
    );
    await s.produce([{ key: `${tenant}/${orderId}`, value: events.cancelled(tenant, orderId, { orderVersion: 2 }) }]);
    await waitFor(
      `${orderId} recall-failed`,
      async () => (await s.row(tenant, orderId))?.status === 'recall-failed',
      120_000,
    );
    // The shipment the cancellation could not stop is out (the warehouse finishes the request it was slow on).
    await waitFor(`${orderId} dispatched`, async () =>
      (await s.shipments(tenant)).some((x) => x.orderId === orderId && x.status === 'dispatched'),
    );
    const handle = app.client.workflow.getHandle(orderWorkflowId(tenant, orderId));
    await waitFor(`${orderId}'s run closed`, async () => (await handle.describe()).status.name !== 'RUNNING');
  }

  it('holds the order as recall-failed, visible in the store, order show, the Web UI status and the metrics', async () => {
    await faults({ latencyMs: SLOW_MS, refuseRecalls: ['o-1', 'o-2'] });
    await recallFailedOrder('o-1');
    await faults({ latencyMs: 0 });
    const row = (await s.row(tenant, 'o-1'))!;
    expect(row).toMatchObject({ status: 'recall-failed', recall_failures: 1, shipped_at: null });
    expect(row.failure_reason).toContain('409');
    expect(row.failed_at).toBeInstanceOf(Date);
    // The shipment is out: that is what a person must deal with.
    expect((await s.shipments(tenant)).filter((x) => x.orderId === 'o-1').map((x) => x.status)).toEqual(['dispatched']);

    const d = await app.client.workflow.getHandle(orderWorkflowId(tenant, 'o-1')).describe();
    expect(d.status.name).toBe('FAILED');
    expect(d.typedSearchAttributes.get(OrderStatusAttribute)).toBe('recall-failed');

    expect(await counter(app, 'fulfilment_orders_recall_failed_total')).toBe(1);
    // The gauges hold what the store counts over every tenant (another file's held orders among them), as of the
    // worker's last poll (every second here): the count is exactly the store's, o-1 among them, and the oldest's age
    // is the store's oldest as of that poll — within the poll's second (and a loaded machine's), and once it is some
    // seconds old, so a gauge left at 0 cannot pass for it.
    await waitFor("the needing-attention gauges to hold the store's count and oldest", async () => {
      const gauge = async (name: string) => metricValue(app.metrics.registry, name, { status: 'recall-failed' });
      const store = (
        await app.db!.query<{ orders: string; oldest: Date }>(
          "SELECT orders, oldest FROM orders_needing_attention() WHERE status = 'recall-failed'",
        )
      ).rows[0];
      const count = await gauge('fulfilment_orders_needing_attention');
      const oldest = await gauge('fulfilment_orders_needing_attention_oldest_seconds');
      const age = store ? (Date.now() - store.oldest.getTime()) / 1000 : 0;
      return (
        store !== undefined &&
        store.oldest.getTime() <= row.failed_at!.getTime() &&
        count === Number(store.orders) &&
        age >= 4 &&
        oldest <= age &&
        oldest >= age - 3
      );
    });

    const show = await cli('order', 'show', `${tenant}/o-1`);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/status\s+recall-failed/);
    expect(show.stdout).toContain(
      '→ needs a person: it is cancelled, but the warehouse refused to recall its shipment',
    );
    expect(show.stdout).toMatch(/order status\s+recall-failed/);
  });

  it('order resolve --action retry-recall: refused again it stays held (exit 1); accepted, the order is cancelled and the shipment recalled', async () => {
    const refusedAgain = await cli(
      'order',
      'resolve',
      `${tenant}/o-1`,
      '--action',
      'retry-recall',
      '--reason',
      'asked the carrier',
      '--by',
      'ops-1',
    );
    expect(refusedAgain.code).toBe(1);
    expect(refusedAgain.stdout).toContain(
      `not resolved: the warehouse refused the recall of ${tenant}/o-1 again (repair run)`,
    );
    expect(await s.row(tenant, 'o-1')).toMatchObject({ status: 'recall-failed', recall_failures: 2 });

    await faults({ refuseRecalls: ['o-2'] });
    const resolved = await cli(
      'order',
      'resolve',
      `${tenant}/o-1`,
      '--action',
      'retry-recall',
      '--reason',
      'carrier agreed',
      '--by',
      'ops-1',
      '--json',
    );
    expect(resolved.code, resolved.stderr).toBe(0);
    // The repair run the first resolution started may still be open, or closed already: either takes it.
    expect(JSON.parse(resolved.stdout)).toMatchObject({ status: 'cancelled', action: 'retry-recall', by: 'ops-1' });
    const row = (await s.row(tenant, 'o-1'))!;
    expect(row).toMatchObject({
      status: 'cancelled',
      failure_reason: null,
      resolution: 'retry-recall: carrier agreed',
      resolved_by: 'ops-1',
      recall_failures: 2,
    });
    expect(row.resolved_at).toBeInstanceOf(Date);
    expect((await s.shipments(tenant)).filter((x) => x.orderId === 'o-1').map((x) => x.status)).toEqual(['cancelled']);
    expect(
      (await app.client.workflow.getHandle(orderWorkflowId(tenant, 'o-1')).describe()).typedSearchAttributes.get(
        OrderStatusAttribute,
      ),
    ).toBe('cancelled');

    // Resolved orders are not resolved twice: the store holds it cancelled, and its run has closed.
    const again = await cli('order', 'resolve', `${tenant}/o-1`, '--action', 'recalled-by-hand', '--reason', 'x');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(new RegExp(`order ${tenant}/o-1 is cancelled( in the store)?, not recall-failed`));
  });

  it('order resolve --action recalled-by-hand records the order cancelled, as done outside the service', async () => {
    await faults({ latencyMs: SLOW_MS });
    await recallFailedOrder('o-2');
    await faults({ latencyMs: 0 });
    const r = await cli(
      'order',
      'resolve',
      `${tenant}/o-2`,
      '--action',
      'recalled-by-hand',
      '--reason',
      'returned by the courier, RMA-77',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`resolved ${tenant}/o-2 (recalled-by-hand, repair run): recall-failed → cancelled`);
    expect(await s.row(tenant, 'o-2')).toMatchObject({
      status: 'cancelled',
      resolution: 'recalled-by-hand: returned by the courier, RMA-77',
    });
    // Nothing was asked of the warehouse: its record stays as the courier left it.
    expect((await s.shipments(tenant)).filter((x) => x.orderId === 'o-2').map((x) => x.status)).toEqual(['dispatched']);
  });
});
