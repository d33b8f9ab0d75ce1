/**
 * `fulfilment order retry` on the real stack: an order the warehouse refuses for good (4xx, injected with the
 * in-process warehouse's `rejectOrders` fault) is held as failed at once; once the fault is cleared, the retry
 * command moves it back to pending through the workflow's retryShipment update, and it ships exactly once. A retry
 * of a shipped order is refused naming the status; the same request id applies once; an order can fail again after
 * a retry and be retried again; a closed run is refused with what an operator can do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';

describe('fulfilment order retry', () => {
  let s: Scenario;
  let app: App;
  let tenant: string;
  const opened: string[] = [];

  beforeAll(async () => {
    // Settled runs stay open long enough to be retried (terminated in afterAll).
    s = await scenario('order-retry', { ORDER_LINGER_SECONDS: '600' });
    app = await s.startInstance();
    tenant = s.tenant('retry');
  });

  afterAll(async () => {
    for (const id of opened) await app?.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
    await s?.close();
  });

  const faults = (body: object) => fetch(`${s.warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) });
  const cli = async (...argv: string[]) => {
    const out = memoryOutput();
    const code = await runCli(argv, { out, config: s.config });
    // The command's real output, for docs/cli.md.
    console.log(`$ npx fulfilment ${argv.map((a) => (/[\s"]/.test(a) ? `'${a}'` : a)).join(' ')}\n${out.stdout}${out.stderr}(exit ${code})`);
    return { code, stdout: out.stdout, stderr: out.stderr };
  };
  const view = (orderId: string) => app.client.workflow.getHandle(orderWorkflowId(tenant, orderId)).query(orderStatusQuery);

  /** Places `orderId` while the warehouse refuses it, and waits until it is held as failed in the store and the workflow. */
  async function failedOrder(orderId: string): Promise<void> {
    await faults({ rejectOrders: [orderId] });
    opened.push(orderWorkflowId(tenant, orderId));
    await s.produce([{ key: `${tenant}/${orderId}`, value: events.placed(tenant, orderId) }]);
    await waitFor(`${orderId} held as failed`, async () => (await s.row(tenant, orderId))?.status === 'failed' && (await view(orderId)).status === 'failed');
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
    expect(r.stdout).toContain(`retried ${tenant}/o-1 (retry 1): failed → pending; shipping again under ship/${tenant}/o-1`);
    expect(r.stdout).toContain(`reason    ${reason}`);

    await waitFor('o-1 shipped', async () => (await s.row(tenant, 'o-1'))?.status === 'shipped');
    const row = (await s.row(tenant, 'o-1'))!;
    expect(row).toMatchObject({ status: 'shipped', retry_count: 1, last_retry_reason: reason, failure_reason: null });
    expect(row.last_retried_at).toBeInstanceOf(Date);
    const shipments = (await s.shipments(tenant)).filter((x) => x.orderId === 'o-1');
    expect(shipments.map((x) => ({ key: x.key, status: x.status }))).toEqual([{ key: `ship/${tenant}/o-1`, status: 'dispatched' }]);
    const v = await view('o-1');
    expect(v).toMatchObject({ status: 'shipped', retries: 1, shipmentId: row.shipment_id });
    expect(v.notes.join('\n')).toContain(`retry 1: failed → pending (${reason})`);

    // A shipped order is not retried: refused by the validator, naming its status; nothing changes.
    const again = await cli('order', 'retry', `${tenant}/o-1`, '--reason', 'once more');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`retry of ${tenant}/o-1 refused: order ${tenant}/o-1 is shipped, not failed: only an order held as failed can be retried`);
    expect(again.stdout).toBe('');
    expect((await s.row(tenant, 'o-1'))?.retry_count).toBe(1);
    expect((await s.shipments(tenant)).filter((x) => x.orderId === 'o-1')).toHaveLength(1);
  });

  it('an order can fail again after a retry and be retried again; the same request id applies once', async () => {
    await failedOrder('o-2');
    // Retried while the warehouse still refuses it: held as failed again (its own claim, failed/…/o-2/1).
    const first = await cli('order', 'retry', `${tenant}/o-2`, '--reason', 'try before the fix', '--json');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ outcome: 'retried', retry: 1, status: 'pending', clearedFailure: expect.stringContaining('422') });
    await waitFor('o-2 failed again', async () => {
      const v = await view('o-2');
      return v.status === 'failed' && v.retries === 1 && (await s.row(tenant, 'o-2'))?.status === 'failed';
    });
    expect(await s.row(tenant, 'o-2')).toMatchObject({ status: 'failed', retry_count: 1, last_retry_reason: 'try before the fix' });

    await faults({ rejectOrders: [] });
    const second = await cli('order', 'retry', `${tenant}/o-2`, '--reason', 'fixed now', '--request-id', 'INC-2042-retry', '--json');
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ outcome: 'retried', retry: 2, updateId: 'INC-2042-retry' });
    const repeat = await cli('order', 'retry', `${tenant}/o-2`, '--reason', 'fixed now', '--request-id', 'INC-2042-retry');
    expect(repeat.code).toBe(0);
    expect(repeat.stdout).toContain(`already applied: request INC-2042-retry was retry 2 of ${tenant}/o-2`);

    await waitFor('o-2 shipped', async () => (await s.row(tenant, 'o-2'))?.status === 'shipped');
    expect(await s.row(tenant, 'o-2')).toMatchObject({ retry_count: 2, last_retry_reason: 'fixed now' });
    expect((await s.shipments(tenant)).filter((x) => x.orderId === 'o-2')).toHaveLength(1);
    expect((await view('o-2')).retries).toBe(2);
  });

  it('a closed run is not reopened: the command says so and what an operator can do', async () => {
    await failedOrder('o-3');
    await faults({ rejectOrders: [] });
    await app.client.workflow.getHandle(orderWorkflowId(tenant, 'o-3')).terminate('closed for the test');
    const r = await cli('order', 'retry', `${tenant}/o-3`, '--reason', 'too late');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`order ${tenant}/o-3 cannot be retried: its run closed at \\S+ \\(terminated, order failed\\); a closed run is never reopened`));
    expect(r.stderr).toContain('What you can do:');
    expect(r.stderr).toContain('ORDER_LINGER_SECONDS (now 600 s)');
    expect(await s.row(tenant, 'o-3')).toMatchObject({ status: 'failed', retry_count: 0 });

    const missing = await cli('order', 'retry', `${tenant}/never-seen`, '--reason', 'x');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no workflow order/${tenant}/never-seen`);
  });
});
