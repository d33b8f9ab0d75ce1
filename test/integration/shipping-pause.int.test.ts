/**
 * A planned warehouse window: an operator pauses shipping for one tenant with `fulfilment shipping pause` (a dry run
 * first), its orders wait while another tenant's ship, a cancellation of a paused order wins at once, and
 * `fulfilment shipping resume` lets the held orders ship by themselves, each once; who, when and why are recorded.
 * At the service's defaults.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import { createDb } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { pausesInForce } from '../../src/adapters/store/shipment-waits.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';

describe('fulfilment shipping pause and resume', () => {
  let s: Scenario;
  let app: App;
  beforeAll(async () => {
    s = await scenario('shipping-pause');
    app = await s.startInstance();
  });
  /** The tenant whose shipping the case paused. */
  let pausedTenant: string | undefined;
  afterAll(async () => {
    // A case that failed half-way leaves no pause in force behind it (every worker of every file would read it).
    if (pausedTenant && (await openPause(pausedTenant)))
      await cli('shipping', 'resume', '--tenant', pausedTenant, '--reason', 'test over').catch(() => undefined);
    await s?.close();
  });
  const openPause = async (tenant: string) => {
    const db = createDb(runtimeConnection(s.config), 1);
    try {
      return (await pausesInForce(db)).some((p) => p.tenantId === tenant);
    } finally {
      await db.end();
    }
  };

  const cli = async (...argv: string[]) => {
    const out = memoryOutput();
    const code = await runCli(argv, { out, config: s.config });
    // The command's real output, for docs/cli.md.
    console.log(
      `$ npx fulfilment ${argv.map((a) => (/[\s"]/.test(a) ? `'${a}'` : a)).join(' ')}\n${out.stdout}${out.stderr}(exit ${code})`,
    );
    return { code, stdout: out.stdout, stderr: out.stderr };
  };
  const sentTo = (tenant: string) =>
    s.warehouse.requests().filter((r) => r.path === '/shipments' && r.idempotencyKey?.startsWith(`ship/${tenant}/`))
      .length;

  it("holds one tenant's orders (waiting, attempts unspent) until the pause ends, while others ship; dry run first", async () => {
    const paused = s.tenant('paused');
    pausedTenant = paused;
    const other = s.tenant('other');
    const db = createDb(runtimeConnection(s.config), 1);
    try {
      const dry = await cli(
        'shipping',
        'pause',
        '--tenant',
        paused,
        '--reason',
        'warehouse maintenance, CHG-812',
        '--by',
        'jane.doe',
        '--dry-run',
      );
      expect(dry.code).toBe(0);
      expect(dry.stdout).toContain(`dry run: would pause shipping for tenant ${paused}`);
      expect(await pausesInForce(db)).not.toContainEqual(expect.objectContaining({ tenantId: paused }));

      const pause = await cli(
        'shipping',
        'pause',
        '--tenant',
        paused,
        '--reason',
        'warehouse maintenance, CHG-812',
        '--by',
        'jane.doe',
      );
      expect(pause.code).toBe(0);
      const recorded = (await pausesInForce(db)).find((p) => p.tenantId === paused);
      expect(recorded).toMatchObject({ pausedBy: 'jane.doe', reason: 'warehouse maintenance, CHG-812' });
      // The worker's gauge counts every pause in force (other files' too): it has read this one once it counts as many
      // as the store holds. A count that merely reached 1 could be another file's pause, and this tenant's orders
      // would then ship before the worker knew of it.
      await waitFor(
        'the worker to read the pause',
        async () => (await counter(app, 'fulfilment_shipping_pauses')) === (await pausesInForce(db)).length,
      );

      const held = ['h-1', 'h-2', 'h-3', 'h-4'];
      await s.produce([
        ...held.map((id) => ({ key: id, value: events.placed(paused, id) })),
        { key: 'x-1', value: events.placed(other, 'x-1') },
      ]);
      await waitFor('the other tenant to ship', async () => (await s.row(other, 'x-1'))?.status === 'shipped');
      for (const id of held) {
        await waitFor(`${id} to wait`, async () => (await s.row(paused, id))?.waiting_since instanceof Date);
        const row = (await s.row(paused, id))!;
        expect(row.status).toBe('pending');
        expect(row.waiting_reason).toContain('shipping paused for tenant');
        expect(row.waiting_reason).toContain('jane.doe');
        const view = await app.client.workflow.getHandle(orderWorkflowId(paused, id)).query(orderStatusQuery);
        expect(view.waitingReason).toContain('warehouse maintenance, CHG-812');
      }
      expect(sentTo(paused)).toBe(0);
      const status = await cli('shipping', 'status');
      expect(status.stdout).toContain(`tenant ${paused}: paused by jane.doe`);

      // A cancellation of a paused order wins at once.
      await s.produce([{ key: 'h-4', value: events.cancelled(paused, 'h-4') }]);
      await waitFor('h-4 to be cancelled', async () => (await s.row(paused, 'h-4'))?.status === 'cancelled');

      const dryResume = await cli(
        'shipping',
        'resume',
        '--tenant',
        paused,
        '--reason',
        'maintenance done, CHG-812',
        '--rate',
        '2',
        '--dry-run',
      );
      expect(dryResume.stdout).toContain('dry run: would end the pause');
      expect(dryResume.stdout).toContain('waking its orders first at 2/s');
      expect((await pausesInForce(db)).some((p) => p.tenantId === paused)).toBe(true);
      // Paced: this command wakes the pause's orders at ≤ 2/s, oldest first, then ends the pause.
      const resume = await cli(
        'shipping',
        'resume',
        '--tenant',
        paused,
        '--reason',
        'maintenance done, CHG-812',
        '--by',
        'jane.doe',
        '--rate',
        '2',
      );
      expect(resume.code).toBe(0);
      expect(resume.stdout).toContain('woke 3 waiting order(s) at ≤ 2/s, oldest first, before ending the pause');
      expect((await pausesInForce(db)).some((p) => p.tenantId === paused)).toBe(false);
      const ended = (
        await db.query<{ resumed_by: string; resume_reason: string }>(
          'SELECT resumed_by, resume_reason FROM shipping_pauses WHERE tenant_id = $1',
          [paused],
        )
      ).rows;
      expect(ended).toEqual([{ resumed_by: 'jane.doe', resume_reason: 'maintenance done, CHG-812' }]);

      for (const id of held.slice(0, 3))
        await waitFor(
          `${id} to ship after the pause`,
          async () => (await s.row(paused, id))?.status === 'shipped',
          120_000,
        );
      const shipments = await s.shipments(paused);
      expect(
        shipments
          .filter((x) => x.status === 'dispatched')
          .map((x) => x.orderId)
          .sort(),
      ).toEqual(held.slice(0, 3));
      expect((await s.row(paused, 'h-4'))?.status).toBe('cancelled');
      const again = await cli('shipping', 'resume', '--tenant', paused, '--reason', 'twice');
      expect(again.code).toBe(1);
      expect(again.stderr).toContain(`no pause in force for tenant ${paused}`);
    } finally {
      await db.end();
    }
  });
});
