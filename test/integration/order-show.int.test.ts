/**
 * `fulfilment order show` on the real stack: one order's row (read as the runtime role, scoped to the tenant),
 * workflow (describe and the status query), shipment (row, workflow and warehouse) and dead letters together; the
 * same order id in another tenant is another order; an order known only from its dead letters is shown; an order
 * nowhere is not found; a malformed reference is bad input; a DATABASE_URL that bypasses row-level security is
 * refused rather than read with.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { loadConfig } from '../../src/base/config.js';
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import type { OrderShowResult } from '../../src/cli/order/show.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';

describe('fulfilment order show', () => {
  let s: Scenario;
  let app: App;
  let tenant: string;
  let other: string;

  beforeAll(async () => {
    // At the defaults: each order's run has closed by the time it is shown (its worker answers the query by replay).
    s = await scenario('order-show');
    app = await s.startInstance();
    tenant = s.tenant('show');
    other = s.tenant('other');
    await s.produce([
      {
        key: `${tenant}/o-1`,
        value: events.placed(tenant, 'o-1', {
          data: { customerId: 'cust-show-1', lines: [{ sku: 'SKU-1', quantity: 2 }] },
        }),
      },
      {
        key: `${other}/o-1`,
        value: events.placed(other, 'o-1', {
          data: { customerId: 'cust-other-1', lines: [{ sku: 'SKU-9', quantity: 1 }] },
        }),
      },
      // Poison for o-1 and for o-2 of the tenant, and for o-2 of the other tenant: each dead-lettered by the bridge.
      { key: `${tenant}/o-1`, value: events.cancelled(tenant, 'o-1', { orderVersion: 0 }) },
      {
        key: `${tenant}/o-2`,
        value: events.placed(tenant, 'o-2', { data: { customerId: 'c', lines: [{ sku: 'SKU-1', quantity: 0 }] } }),
      },
      {
        key: `${other}/o-2`,
        value: events.placed(other, 'o-2', { data: { customerId: 'c', lines: [{ sku: 'SKU-1', quantity: 0 }] } }),
      },
    ]);
    await waitFor(
      'both o-1 shipped',
      async () =>
        (await s.row(tenant, 'o-1'))?.status === 'shipped' && (await s.row(other, 'o-1'))?.status === 'shipped',
      120_000,
    );
    await s.readTopic(s.config.DLQ_TOPIC, 3);
  });

  afterAll(async () => s?.close());

  const cli = async (argv: string[], config = s.config) => {
    const out = memoryOutput();
    const code = await runCli(argv, { out, config });
    // The command's real output, for docs/cli.md.
    console.log(
      `$ npx fulfilment ${argv.map((a) => (/[\s"]/.test(a) ? `'${a}'` : a)).join(' ')}\n${out.stdout}${out.stderr}(exit ${code})`,
    );
    return { code, stdout: out.stdout, stderr: out.stderr };
  };

  it("shows the order's row, workflow, shipment and dead letters, personal data redacted", async () => {
    const row = (await s.row(tenant, 'o-1'))!;
    const view = await app.client.workflow.getHandle(orderWorkflowId(tenant, 'o-1')).query(orderStatusQuery);
    const r = await cli(['order', 'show', `${tenant}/o-1`]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const out = r.stdout;
    expect(out).toContain(`order ${tenant}/o-1\n`);
    expect(out).toContain(`row (fulfilments, as the runtime role with app.tenant_id = '${tenant}')`);
    expect(out).toMatch(/\n {2}status +shipped\n/);
    expect(out).toMatch(/\n {2}customer_id +\[redacted\]\n/);
    expect(out).not.toContain('cust-show-1');
    expect(out).toContain(`workflow order/${tenant}/o-1 (namespace ${s.config.TEMPORAL_NAMESPACE})`);
    expect(out).toMatch(/\n {2}run {15}[0-9a-f-]{36} closed completed at \S+Z\n/);
    expect(out).toContain('order status      shipped (search attribute: shipped)');
    for (const note of view.notes) expect(out).toContain(`    - ${note}`);
    expect(view.notes.length).toBeGreaterThan(0);
    expect(out).toContain(`shipment ship/${tenant}/o-1`);
    expect(out).toContain(`id (row)          ${row.shipment_id}`);
    expect(out).toContain(`id (workflow)     ${row.shipment_id}`);
    expect(out).toMatch(new RegExp(`warehouse {9}${row.shipment_id} dispatched, created \\S+Z\\n`));
    expect(out).toContain(`dead letters (${s.config.DLQ_TOPIC})`);
    expect(out).toMatch(/\n {2}0:\d+ +1 +\S+Z +MalformedEventError +cancelled-/);
    expect(out).toContain('personal data redacted (customer_id, shipping_address); --reveal shows it');

    const revealed = await cli(['order', 'show', `${tenant}/o-1`, '--reveal']);
    expect(revealed.code).toBe(0);
    expect(revealed.stdout).toMatch(/\n {2}customer_id +cust-show-1\n/);
    expect(revealed.stdout).toMatch(/\n {2}cancelled_before_placement +false\n/);
  });

  it('--json: one object, the row exactly as the tenant-scoped read returns it', async () => {
    const row = (await s.row(tenant, 'o-1'))!;
    const r = await cli(['order', 'show', `${tenant}/o-1`, '--json', '--reveal']);
    expect(r.code).toBe(0);
    const shown = JSON.parse(r.stdout) as OrderShowResult;
    expect(shown.row).toEqual(JSON.parse(JSON.stringify(row)));
    expect(shown.workflow).toMatchObject({
      workflowId: orderWorkflowId(tenant, 'o-1'),
      running: false,
      status: 'COMPLETED',
      orderStatus: 'shipped',
      view: { status: 'shipped', tenantId: tenant },
    });
    expect(shown.shipment).toEqual({
      key: `ship/${tenant}/o-1`,
      rowShipmentId: row.shipment_id,
      workflowShipmentId: row.shipment_id,
      warehouse: { id: row.shipment_id, status: 'dispatched', createdAt: expect.any(String), cancelledAt: null },
    });
    expect(shown.deadLetters).toHaveLength(1);
    expect(shown.deadLetters[0]).toMatchObject({ tenantId: tenant, errorClass: 'MalformedEventError', copies: 1 });
    expect(shown.problems).toEqual([]);
  });

  it('the same order id in another tenant is another order: its row, its workflow, its dead letters', async () => {
    const r = await cli(['order', 'show', `${other}/o-1`, '--json', '--reveal']);
    expect(r.code).toBe(0);
    const shown = JSON.parse(r.stdout) as OrderShowResult;
    expect(shown.row).toMatchObject({ tenant_id: other, order_id: 'o-1', customer_id: 'cust-other-1' });
    expect(shown.workflow?.view?.tenantId).toBe(other);
    expect(shown.deadLetters).toEqual([]);
  });

  it('an order known only from its dead letters is shown with them; one known nowhere is not found', async () => {
    const r = await cli(['order', 'show', `${tenant}/o-2`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('  none: the tenant has no row for this order');
    expect(r.stdout).toContain('  none: no run of it in the namespace');
    expect(r.stdout).toContain('warehouse         nothing under this key');
    const letters = r.stdout.slice(r.stdout.indexOf('dead letters'));
    expect(letters.match(/MalformedEventError/g)).toHaveLength(1);
    expect(letters).toContain('data.lines[0].quantity');

    const missing = await cli(['order', 'show', `${tenant}/never-seen`]);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain(
      `error: no order ${tenant}/never-seen: tenant ${tenant} has no row for it in fulfilments, namespace ${s.config.TEMPORAL_NAMESPACE} has no workflow order/${tenant}/never-seen`,
    );
  });

  it('a malformed reference is bad input, read nowhere', async () => {
    for (const ref of ['acme eu/o-1', `${tenant}`, `${tenant}/o-1/x`, `/o-1`]) {
      const r = await cli(['order', 'show', ref]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        `value '${ref}' is invalid for argument 'tenant/order'. expected <tenant>/<order>, each 1–64 of A–Z a–z 0–9 . _ : - starting with a letter or digit`,
      );
    }
  });

  it('a DATABASE_URL that row-level security does not bind is refused, not read with; the other sources are still shown', async () => {
    const owner = loadConfig({ ...s.env, DATABASE_URL: s.config.DATABASE_MIGRATION_URL! });
    const r = await cli(['order', 'show', `${tenant}/o-1`], owner);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('  (not read)');
    expect(r.stdout).toContain(`workflow order/${tenant}/o-1`);
    expect(r.stderr).toContain(`error: order ${tenant}/o-1 is shown incomplete:`);
    expect(r.stderr).toMatch(
      /row \(PostgreSQL, DATABASE_URL\): refusing to run: DATABASE_URL connects as "fulfilment_owner", which owns/,
    );
  });

  it('with no worker to answer the status query: the run from describe, the rest shown, the query named (exit 1)', async () => {
    await app.stop();
    const r = await cli(['order', 'show', `${tenant}/o-1`, '--timeout', '3']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/\n {2}run {15}[0-9a-f-]{36} closed completed at \S+Z\n/);
    expect(r.stdout).toContain('order status      shipped (search attribute; the status query was not answered)');
    expect(r.stdout).toMatch(/\n {2}status +shipped\n/);
    expect(r.stderr).toContain(
      `error: order ${tenant}/o-1 is shown incomplete:\n  workflow status query: no answer within 3 s (--timeout): it is answered by a worker polling task queue ${s.config.TEMPORAL_TASK_QUEUE}`,
    );
  });
});
