/**
 * `fulfilment reconcile`, kinds `status-unpublished` and `status-missing-on-topic`, made the way they happen in life,
 * with the status relay off while the orders ship (STATUS_RELAY=false: their outbox rows wait unsent):
 *   - one order's outbox entry is deleted before it was published (by the owner role, tenant-scoped);
 *   - another's is marked sent by a relay session whose publish never reached the topic (the relay's own functions).
 * The pass names both; `--repair --yes` writes the missing entry into the outbox and publishes the other's record
 * again, as the relay does; with a relay running again the next pass agrees, and both events are on the topic.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { ReportJson } from '../../src/reconcile/report.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { openRelaySession } from '../../src/adapters/status-events/outbox.js';
import { events, waitFor } from '../support/harness.js';
import { reconcileCase, type ReconcileCase } from '../support/reconcile.js';

describe('reconcile: status events lost between the store, the outbox and the topic', () => {
  let c: ReconcileCase;
  const reconcile = (...more: string[]) => c.reconcile(...more);
  let quiet: App;
  const shipped = (order: string) =>
    waitFor(`${order} to ship`, async () => (await c.s.row(c.tenant, order))?.status === 'shipped');

  beforeAll(async () => {
    c = await reconcileCase('reconcile-status');
    quiet = await c.s.startInstance({}, { STATUS_RELAY: 'false' });
    await c.s.produce([
      { value: events.placed(c.tenant, 'lost-entry') },
      { value: events.placed(c.tenant, 'lost-record') },
    ]);
    await shipped('lost-entry');
    await shipped('lost-record');
    // The entry of one order deleted before it was published: as the owner, in the tenant's scope.
    const owner = new pg.Client({ connectionString: c.s.config.DATABASE_MIGRATION_URL });
    await owner.connect();
    try {
      await owner.query('BEGIN');
      await owner.query("SELECT set_config('app.tenant_id', $1, true)", [c.tenant]);
      const del = await owner.query('DELETE FROM status_outbox WHERE tenant_id = $1 AND order_id = $2', [
        c.tenant,
        'lost-entry',
      ]);
      expect(del.rowCount).toBe(1);
      await owner.query('COMMIT');
    } finally {
      await owner.end();
    }
    // The other's marked sent by a relay whose publish never reached the topic.
    const session = await openRelaySession(runtimeConnection(c.s.config), c.s.config.STATUS_TOPIC);
    try {
      expect(await session.tryLead()).toBe(true);
      const rows = (await session.unsent(100)).filter((r) => r.tenantId === c.tenant && r.orderId === 'lost-record');
      expect(rows).toHaveLength(1);
      expect(await session.markSent(rows.map((r) => r.id))).toBe(1);
    } finally {
      await session.close();
    }
  }, 120_000);

  afterAll(async () => {
    await c?.s.close();
  });

  it('names both: the change with no outbox entry, the entry marked sent that is not on the topic', async () => {
    const run = await reconcile('--check', 'status', '--json');
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as ReportJson;
    const found = report.checks.flatMap((c) => c.mismatches);
    expect(found.map((m) => `${m.kind} ${m.orderId}`).sort()).toEqual([
      'status-missing-on-topic lost-record',
      'status-unpublished lost-entry',
    ]);
    const unpublished = found.find((m) => m.kind === 'status-unpublished')!;
    expect(unpublished.sides).toEqual([
      expect.objectContaining({ source: 'store', state: expect.stringMatching(/^shipped since /) }),
      { source: 'outbox', state: 'no fulfilment.Shipped (has none)' },
    ]);
  });

  it('--repair --yes re-queues the one and republishes the other; the next pass agrees', async () => {
    const run = await reconcile(
      '--check',
      'status',
      '--repair',
      '--yes',
      '--reason',
      'status events lost',
      '--by',
      'it',
    );
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/write-outbox .*\/lost-entry: written: fulfilment.Shipped /);
    expect(run.stdout).toMatch(/republish .*\/lost-record: published to /);
    await quiet.stop();
    await c.s.startInstance();
    const watch = await c.s.watchTopic(c.s.config.STATUS_TOPIC);
    try {
      await waitFor('both Shipped events on the status topic', () => {
        const shippedOn = watch.records
          .map((r) => JSON.parse(r.value!.toString()) as { orderId: string; type: string })
          .filter((e) => e.type === 'fulfilment.Shipped')
          .map((e) => e.orderId);
        return shippedOn.includes('lost-entry') && shippedOn.includes('lost-record');
      });
    } finally {
      await watch.close();
    }
    const again = await reconcile();
    expect(again.code).toBe(0);
    const twice = await reconcile('--repair', '--yes', '--reason', 'again', '--by', 'it');
    expect(twice.code).toBe(0);
    expect(twice.stderr).toContain('"actions":[]');
  });
});
