/**
 * `fulfilment reconcile`, kinds `shipment-unexpected` and `shipment-missing`, made the way they happen in life: a
 * shipment created at the warehouse directly (someone's script, a second system) with no order behind it, beside an
 * order that shipped as it should. The pass flags the stray shipment; a repair cannot judge it and flags it for a
 * person (exit 1 still). A warehouse without a read API cannot be compared: the pass says so and does not pass.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReportJson } from '../../src/reconcile/report.js';
import { events, waitFor } from '../support/harness.js';
import { reconcileCase, type ReconcileCase } from '../support/reconcile.js';
import { cliOf } from '../support/operator.js';

describe('reconcile: the store against the warehouse', () => {
  let c: ReconcileCase;
  const reconcile = (...more: string[]) => c.reconcile('--check', 'shipments', ...more);

  beforeAll(async () => {
    c = await reconcileCase('reconcile-shipments');
    await c.s.startInstance();
    await c.s.produce([{ value: events.placed(c.tenant, 'fine') }]);
    await waitFor('fine to ship', async () => (await c.s.row(c.tenant, 'fine'))?.status === 'shipped');
    const res = await fetch(`${c.s.warehouse.url}/shipments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `ship/${c.tenant}/ghost` },
      body: JSON.stringify({ tenantId: c.tenant, orderId: 'ghost', lines: [{ sku: 'X-1', quantity: 1 }] }),
    });
    expect(res.status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await c?.s.close();
  });

  it('flags the shipment with no order behind it; the shipped order agrees', async () => {
    const run = await reconcile('--json');
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as ReportJson;
    const found = report.checks.flatMap((c) => c.mismatches);
    expect(found.map((m) => `${m.kind} ${m.orderId}`)).toEqual(['shipment-unexpected ghost']);
    expect(found[0]!.sides[0]).toEqual({ source: 'store', state: 'no such order' });
    expect(found[0]!.sides[1]!.state).toMatch(new RegExp(`^dispatched shp_\\S+ under ship/${c.tenant}/ghost at `));
  });

  it('a repair flags it for a person and changes nothing', async () => {
    const run = await reconcile('--repair', '--yes', '--reason', 'stray shipment', '--by', 'it');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('"action":"flag"');
    expect(run.stderr).toContain('"outcome":"flagged for a person"');
    expect((await c.s.shipments(c.tenant)).map((x) => [x.orderId, x.status]).sort()).toEqual([
      ['fine', 'dispatched'],
      ['ghost', 'dispatched'],
    ]);
  });

  it('a warehouse without a read API cannot be compared: said, and not passed', async () => {
    // A warehouse that ships but lists nothing: every read answers 404.
    const bare = createServer((_req, res) => res.writeHead(404).end());
    await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = bare.address() as AddressInfo;
      const run = await cliOf({ config: { ...c.s.config, WAREHOUSE_URL: `http://127.0.0.1:${port}` } })(
        'reconcile',
        '--since',
        c.since,
        '--tenant',
        c.tenant,
        '--check',
        'shipments',
      );
      expect(run.code).toBe(1);
      expect(run.stdout).toContain(`cannot see: tenant ${c.tenant}: the warehouse has no read API`);
      expect(run.stdout).toContain('shipments: 0 compared, could not see everything');
    } finally {
      await new Promise((resolve) => bare.close(resolve));
    }
  });
});
