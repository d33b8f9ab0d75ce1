/**
 * `fulfilment order retry` on the real stack: an order the warehouse refuses for good (4xx, injected with the
 * in-process warehouse's `rejectOrders` fault) is held as failed at once; once the fault is cleared, the retry
 * command moves it back to pending through the workflow's retryShipment update, and it ships exactly once. A retry
 * of a shipped order is refused naming the status; the same request id applies once; an order can fail again after
 * a retry and be retried again. Once its run has closed, a repair run does the same; a tenant's failed orders are
 * retried in bulk (a dry run first, at a rate); a repair racing a late cancellation never ships a cancelled order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import { OrderStatusAttribute, orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';

describe('fulfilment order retry', () => {
  let s: Scenario;
  let app: App;
  let tenant: string;
  const opened: string[] = [];

  beforeAll(async () => {
    // A linger (not the default): the first cases send the retry to the run that held the order; at the default that
    // run has closed and the retry starts a repair run, as the cases below do with runs ended by hand.
    s = await scenario('order-retry', { ORDER_LINGER_SECONDS: '600' });
    app = await s.startInstance();
    tenant = s.tenant('retry');
  });

  afterAll(async () => {
    for (const id of opened)
      await app?.client.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => undefined);
    await s?.close();
  });

  const faults = (body: object) =>
    fetch(`${s.warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) });
  const cli = async (...argv: string[]) => {
    const out = memoryOutput();
    const code = await runCli(argv, { out, config: s.config });
    // The command's real output, for docs/cli.md.
    console.log(
      `$ npx fulfilment ${argv.map((a) => (/[\s"]/.test(a) ? `'${a}'` : a)).join(' ')}\n${out.stdout}${out.stderr}(exit ${code})`,
    );
    return { code, stdout: out.stdout, stderr: out.stderr };
  };
  const view = (orderId: string) =>
    app.client.workflow.getHandle(orderWorkflowId(tenant, orderId)).query(orderStatusQuery);

  /** Places `orderId` while the warehouse refuses it, and waits until it is held as failed in the store and the workflow. */
  async function failedOrder(orderId: string): Promise<void> {
    await faults({ rejectOrders: [orderId] });
    opened.push(orderWorkflowId(tenant, orderId));
    await s.produce([{ key: `${tenant}/${orderId}`, value: events.placed(tenant, orderId) }]);
    await waitFor(
      `${orderId} held as failed`,
      async () => (await s.row(tenant, orderId))?.status === 'failed' && (await view(orderId)).status === 'failed',
    );
  }

  it('re-drives a failed order: failed → pending → shipped, exactly one shipment, the reason recorded', async () => {
    await failedOrder('o-1');
    const failed = await s.row(tenant, 'o-1');
    expect(failed).toMatchObject({ status: 'failed', retry_count: 0 });
    expect(failed!.failure_reason).toContain('422');
    expect(await s.shipments(tenant)).toEqual([]);

    await faults({ rejectOrders: [] });
    const reason = 'warehouse SKU mapping fixed (INC-2041)';
    const r = await cli('order', 'retry', `${tenant}/o-1`, '--reason', reason);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      `retried ${tenant}/o-1 (retry 1, open run): failed → pending; shipping again under ship/${tenant}/o-1`,
    );
    expect(r.stdout).toContain(`reason    ${reason}`);

    await waitFor('o-1 shipped', async () => (await s.row(tenant, 'o-1'))?.status === 'shipped');
    const row = (await s.row(tenant, 'o-1'))!;
    expect(row).toMatchObject({ status: 'shipped', retry_count: 1, last_retry_reason: reason, failure_reason: null });
    expect(row.last_retried_at).toBeInstanceOf(Date);
    const shipments = (await s.shipments(tenant)).filter((x) => x.orderId === 'o-1');
    expect(shipments.map((x) => ({ key: x.key, status: x.status }))).toEqual([
      { key: `ship/${tenant}/o-1`, status: 'dispatched' },
    ]);
    const v = await view('o-1');
    expect(v).toMatchObject({ status: 'shipped', retries: 1, shipmentId: row.shipment_id });
    expect(v.notes.join('\n')).toContain(`retry 1: failed → pending (${reason})`);

    // A shipped order is not retried: refused by the validator, naming its status; nothing changes.
    const again = await cli('order', 'retry', `${tenant}/o-1`, '--reason', 'once more');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      `retry of ${tenant}/o-1 refused: order ${tenant}/o-1 is shipped, not failed: only an order held as failed can be retried`,
    );
    expect(again.stdout).toBe('');
    expect((await s.row(tenant, 'o-1'))?.retry_count).toBe(1);
    expect((await s.shipments(tenant)).filter((x) => x.orderId === 'o-1')).toHaveLength(1);
  });

  it('an order can fail again after a retry and be retried again; the same request id applies once', async () => {
    await failedOrder('o-2');
    // Retried while the warehouse still refuses it: held as failed again (its own claim, failed/…/o-2/1).
    const first = await cli('order', 'retry', `${tenant}/o-2`, '--reason', 'try before the fix', '--json');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      outcome: 'retried',
      retry: 1,
      status: 'pending',
      clearedFailure: expect.stringContaining('422'),
    });
    await waitFor('o-2 failed again', async () => {
      const v = await view('o-2');
      return v.status === 'failed' && v.retries === 1 && (await s.row(tenant, 'o-2'))?.status === 'failed';
    });
    expect(await s.row(tenant, 'o-2')).toMatchObject({
      status: 'failed',
      retry_count: 1,
      last_retry_reason: 'try before the fix',
    });

    await faults({ rejectOrders: [] });
    const second = await cli(
      'order',
      'retry',
      `${tenant}/o-2`,
      '--reason',
      'fixed now',
      '--request-id',
      'INC-2042-retry',
      '--json',
    );
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ outcome: 'retried', retry: 2, updateId: 'INC-2042-retry' });
    const repeat = await cli(
      'order',
      'retry',
      `${tenant}/o-2`,
      '--reason',
      'fixed now',
      '--request-id',
      'INC-2042-retry',
    );
    expect(repeat.code).toBe(0);
    expect(repeat.stdout).toContain(`already applied: request INC-2042-retry was retry 2 of ${tenant}/o-2`);

    await waitFor('o-2 shipped', async () => (await s.row(tenant, 'o-2'))?.status === 'shipped');
    expect(await s.row(tenant, 'o-2')).toMatchObject({ retry_count: 2, last_retry_reason: 'fixed now' });
    expect((await s.shipments(tenant)).filter((x) => x.orderId === 'o-2')).toHaveLength(1);
    expect((await view('o-2')).retries).toBe(2);
  });

  it('repairs an order whose run has closed: a repair run loads it from the store, ships it once and records who asked', async () => {
    await failedOrder('o-3');
    await faults({ rejectOrders: [] });
    await app.client.workflow.getHandle(orderWorkflowId(tenant, 'o-3')).terminate('closed for the test');
    const r = await cli(
      'order',
      'retry',
      `${tenant}/o-3`,
      '--reason',
      'fixed after the run closed',
      '--by',
      'jane.doe',
      '--json',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      outcome: 'retried',
      via: 'repair run',
      retry: 1,
      status: 'pending',
      by: 'jane.doe',
    });
    await waitFor('o-3 shipped', async () => (await s.row(tenant, 'o-3'))?.status === 'shipped');
    const row = (await s.row(tenant, 'o-3'))!;
    expect(row).toMatchObject({
      retry_count: 1,
      last_retry_reason: 'fixed after the run closed',
      last_retried_by: 'jane.doe',
    });
    expect((await s.shipments(tenant)).filter((x) => x.orderId === 'o-3')).toHaveLength(1);
    // The repair run published the order's status for the Web UI like any other run.
    const d = await app.client.workflow.getHandle(orderWorkflowId(tenant, 'o-3')).describe();
    expect(d.typedSearchAttributes.get(OrderStatusAttribute)).toBe('shipped');
    // Dispatched beside the tenant's other orders: its tenant as the fairness key, the tenant's weight (the default).
    expect(d.priority).toMatchObject({ fairnessKey: tenant, fairnessWeight: s.config.TENANT_DEFAULT_WEIGHT });

    const missing = await cli('order', 'retry', `${tenant}/never-seen`, '--reason', 'x');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no order ${tenant}/never-seen in the store`);
  });

  it("bulk: lists a tenant's failed orders in a dry run, then retries each (open and closed runs alike) at the given rate", async () => {
    const bulkTenant = s.tenant('bulk');
    const ids = ['b-1', 'b-2', 'b-3'];
    await faults({ rejectOrders: ids });
    for (const id of ids) opened.push(orderWorkflowId(bulkTenant, id));
    await s.produce(ids.map((id) => ({ key: `${bulkTenant}/${id}`, value: events.placed(bulkTenant, id) })));
    await waitFor('all held as failed', async () => {
      for (const id of ids) if ((await s.row(bulkTenant, id))?.status !== 'failed') return false;
      return true;
    });
    // One of them with its run closed: the bulk retry repairs it like the others.
    await app.client.workflow.getHandle(orderWorkflowId(bulkTenant, 'b-2')).terminate('closed for the test');
    await faults({ rejectOrders: [] });

    const dry = await cli(
      'order',
      'retry',
      '--tenant',
      bulkTenant,
      '--status',
      'failed',
      '--since',
      '1h',
      '--dry-run',
      '--reason',
      'bulk fix',
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`3 order(s) of tenant ${bulkTenant} held as failed since`);
    for (const id of ids) expect(dry.stdout).toContain(`${bulkTenant}/${id}`);
    expect(dry.stdout).toContain('dry run: 3 order(s) would be retried');
    for (const id of ids) expect((await s.row(bulkTenant, id))?.status).toBe('failed');

    const started = Date.now();
    const run = await cli(
      'order',
      'retry',
      '--tenant',
      bulkTenant,
      '--status',
      'failed',
      '--since',
      '1h',
      '--rate',
      '2',
      '--reason',
      'bulk fix',
      '--by',
      'ops-bulk',
      '--json',
    );
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as {
      selected: number;
      lines: { orderId: string; outcome: string; summary?: { via: string } }[];
    };
    expect(report.selected).toBe(3);
    expect(report.lines.map((l) => [l.orderId, l.outcome]).sort()).toEqual(ids.map((id) => [id, 'retried']));
    expect(report.lines.find((l) => l.orderId === 'b-2')?.summary?.via).toBe('repair run');
    // 2 a second, a burst of one: the third no sooner than a second after the first.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    for (const id of ids)
      await waitFor(`${id} shipped`, async () => (await s.row(bulkTenant, id))?.status === 'shipped');
    for (const id of ids)
      expect(await s.row(bulkTenant, id)).toMatchObject({ retry_count: 1, last_retried_by: 'ops-bulk' });
    expect((await s.shipments(bulkTenant)).map((x) => x.orderId).sort()).toEqual(ids);

    // Nothing is left to retry: the selection is empty.
    const again = await cli('order', 'retry', '--tenant', bulkTenant, '--status', 'failed', '--reason', 'bulk fix');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`0 order(s) of tenant ${bulkTenant} held as failed`);
  });

  it('a repair racing a late cancellation never ships a cancelled order', async () => {
    const raceTenant = s.tenant('race');
    const ids = ['r-1', 'r-2', 'r-3', 'r-4', 'r-5', 'r-6'];
    await faults({ rejectOrders: ids });
    for (const id of ids) opened.push(orderWorkflowId(raceTenant, id));
    await s.produce(ids.map((id) => ({ key: `${raceTenant}/${id}`, value: events.placed(raceTenant, id) })));
    await waitFor('all held as failed', async () => {
      for (const id of ids) if ((await s.row(raceTenant, id))?.status !== 'failed') return false;
      return true;
    });
    // Their runs closed (terminated here; with no linger they close by themselves), and a warehouse slow enough that a
    // shipment is in flight when a cancellation lands: each order's retry and its late cancellation are sent at once.
    for (const id of ids)
      await app.client.workflow.getHandle(orderWorkflowId(raceTenant, id)).terminate('closed for the test');
    await faults({ rejectOrders: [], latencyMs: 300 });
    const results = await Promise.all(
      ids.map(async (id, i) => {
        const cancel = s.produce([
          { key: `${raceTenant}/${id}`, value: events.cancelled(raceTenant, id, { orderVersion: 2 }) },
        ]);
        const retry = cli('order', 'retry', `${raceTenant}/${id}`, '--reason', `race ${i}`);
        await cancel;
        return retry;
      }),
    );
    await faults({ latencyMs: 0 });
    // Each order settles as one of the two legitimate outcomes, never a cancelled order with a shipment out.
    const settled = (st?: string) => st === 'cancelled' || st === 'shipped';
    for (const id of ids) await waitFor(`${id} settled`, async () => settled((await s.row(raceTenant, id))?.status));
    const shipments = await s.shipments(raceTenant);
    for (const [i, id] of ids.entries()) {
      const row = (await s.row(raceTenant, id))!;
      const out = shipments.filter((x) => x.orderId === id && x.status === 'dispatched');
      if (row.status === 'cancelled') {
        expect(out, `${id} is cancelled: nothing may be out`).toEqual([]);
      } else {
        // Shipped: the retry won and the cancellation came after the shipment: it is recorded as refused, by the run or
        // by the bridge's late path — once its own delivery has landed, which may be after the row read shipped.
        await waitFor(
          `${id} shipped, so its cancellation is recorded late`,
          async () => (await s.row(raceTenant, id))?.cancel_refused_at instanceof Date,
        );
        expect(out).toHaveLength(1);
        expect(results[i]!.code).toBe(0);
      }
    }
  });

  it('a retry after the late cancellation was recorded is refused, naming the status', async () => {
    await failedOrder('o-9');
    await app.client.workflow.getHandle(orderWorkflowId(tenant, 'o-9')).terminate('closed for the test');
    await s.produce([{ key: `${tenant}/o-9`, value: events.cancelled(tenant, 'o-9', { orderVersion: 2 }) }]);
    await waitFor('o-9 cancelled', async () => (await s.row(tenant, 'o-9'))?.status === 'cancelled');
    const r = await cli('order', 'retry', `${tenant}/o-9`, '--reason', 'too late');
    expect(r.code).toBe(1);
    // Its late cancellation started a run of its own (the closed run had failed), which the command meets open.
    expect(r.stderr).toContain(
      `order ${tenant}/o-9 is cancelled, not failed: only an order held as failed can be retried`,
    );
    expect((await s.shipments(tenant)).filter((x) => x.orderId === 'o-9')).toEqual([]);
  });
});
