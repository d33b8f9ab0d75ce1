/**
 * `fulfilment tenant show` against what is there, on the real stack. Three tenants of one scenario: `paused` with
 * weight 3 has orders shipped, one held as failed (the warehouse refuses it) and orders waiting for its pause of
 * shipping; `busy` (the default weight, 1) has one order whose shipment is at the warehouse right now; `idle` with
 * weight 5 has only a shipped order. Each figure the command prints is checked against the store's rows, the runs'
 * own descriptions and the pauses in force: the weights as configured, the shares over the two tenants with open runs
 * (3/4 and 1/4; the idle one 5/9 once it has work), the backlog counts and the oldest order's age, the open runs, the
 * pause. Bad input names the argument; a tenant found nowhere is not found.
 *
 * One setting differs from the service's defaults, and why: WAREHOUSE_TIMEOUT_MS 90 s (30 s), so that the worker keeps
 * waiting for `busy`'s shipment while the warehouse holds it 60 s, long enough to look at an order being shipped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { TenantShowResult } from '../../src/cli/tenant/show-result.js';
import { loadConfig, type Config } from '../../src/base/config.js';
import { createDb, type Db } from '../../src/adapters/store/db.js';
import type { FulfilmentRow } from '../../src/vocabulary/order.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, tenantRows, waitFor, type Scenario } from '../support/harness.js';
import { cliOf, faultsOf } from '../support/operator.js';
import { untilPauseHolds } from '../support/shipping-pause.js';

/** How long the warehouse holds `busy`'s shipment: the look happens meanwhile. */
const HELD_MS = 60_000;

describe('fulfilment tenant show', () => {
  let s: Scenario;
  let app: App;
  let db: Db;
  let paused: string;
  let busy: string;
  let idle: string;
  /** The scenario's configuration with the tenants' weights, as the operator's shell has them. */
  let config: Config;

  beforeAll(async () => {
    s = await scenario('tenant-show', { WAREHOUSE_TIMEOUT_MS: String(HELD_MS + 30_000) });
    app = await s.startInstance();
    db = createDb(runtimeConnection(s.config), 1);
    [paused, busy, idle] = [s.tenant('paused'), s.tenant('busy'), s.tenant('idle')];
    config = loadConfig({ ...s.env, TENANT_WEIGHTS: `${paused}=3,${idle}=5` });
  });

  afterAll(async () => {
    await faultsOf(s)({ latencyMs: 0, rejectOrders: [] }).catch(() => undefined);
    // No pause of this file outlives it (every worker of every file reads the pauses).
    if (paused) await cli('shipping', 'resume', '--tenant', paused, '--reason', 'test over').catch(() => undefined);
    await db?.end();
    await s?.close();
  });

  const cli = (...argv: string[]) => cliOf({ config })(...argv);
  const show = async (tenant: string): Promise<TenantShowResult> => {
    const r = await cli('tenant', 'show', tenant, '--json');
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as TenantShowResult;
  };
  const produce = (tenant: string, ids: string[]) =>
    s.produce(ids.map((id) => ({ key: `${tenant}/${id}`, value: events.placed(tenant, id) })));
  const statusOf = async (tenant: string, id: string) => (await s.row(tenant, id))?.status;

  /** The tenant's open runs, each run's own description (not visibility) deciding. */
  async function openRuns(tenant: string, rows: FulfilmentRow[]): Promise<number> {
    const described = await Promise.all(
      rows.map((r) => app.client.workflow.getHandle(orderWorkflowId(tenant, r.order_id)).describe()),
    );
    return described.filter((d) => d.status.name === 'RUNNING').length;
  }

  /** The backlog as the rows say it, counted here (waiting_for: what a wait is for, migration 009). */
  function backlogOf(rows: (FulfilmentRow & { waiting_for?: string | null })[]) {
    const pending = rows.filter((r) => r.status === 'pending');
    const unsettled = rows.filter((r) => ['pending', 'failed', 'recall-failed'].includes(r.status));
    const oldest = unsettled.map((r) => (r.placed_at ?? r.created_at).getTime()).sort((a, b) => a - b)[0];
    return {
      orders: rows.length,
      pending: pending.filter((r) => !r.waiting_since).length,
      waiting: pending.filter((r) => r.waiting_since).length,
      waitingForPause: pending.filter((r) => r.waiting_since && r.waiting_for === 'pause').length,
      failed: rows.filter((r) => r.status === 'failed').length,
      recallFailed: rows.filter((r) => r.status === 'recall-failed').length,
      oldestSince: oldest === undefined ? null : new Date(oldest).toISOString(),
    };
  }

  it("shows each tenant's weight, share, backlog, open runs and pause as they are", async () => {
    // paused: two orders shipped and one the warehouse refuses (held as failed) before its pause; idle: one shipped.
    await faultsOf(s)({ rejectOrders: ['p-fail'] });
    await produce(paused, ['p-ship-1', 'p-ship-2', 'p-fail']);
    await produce(idle, ['i-ship']);
    for (const [tenant, id, status] of [
      [paused, 'p-ship-1', 'shipped'],
      [paused, 'p-ship-2', 'shipped'],
      [paused, 'p-fail', 'failed'],
      [idle, 'i-ship', 'shipped'],
    ] as const)
      await waitFor(`${id} ${status}`, async () => (await statusOf(tenant, id)) === status);

    // Its pause, then orders that wait for it (a probe among them: untilPauseHolds).
    expect((await cli('shipping', 'pause', '--tenant', paused, '--reason', 'stock take', '--by', 'ops')).code).toBe(0);
    await untilPauseHolds(s, paused);
    await produce(paused, ['p-wait-1', 'p-wait-2']);
    for (const id of ['p-wait-1', 'p-wait-2'])
      await waitFor(`${id} to wait`, async () => (await s.row(paused, id))?.waiting_since instanceof Date);

    // busy: one order whose shipment the warehouse holds.
    await faultsOf(s)({ latencyMs: HELD_MS });
    await produce(busy, ['b-1']);
    await waitFor('b-1 at the warehouse', () =>
      s.warehouse.requests().some((r) => r.idempotencyKey === `ship/${busy}/b-1`),
    );

    const rows = {
      paused: await tenantRows(db, paused),
      busy: await tenantRows(db, busy),
      idle: await tenantRows(db, idle),
    };
    const runs = {
      paused: await openRuns(paused, rows.paused),
      busy: await openRuns(busy, rows.busy),
      idle: await openRuns(idle, rows.idle),
    };
    // What was placed, as the store and the runs hold it now.
    expect(backlogOf(rows.paused)).toMatchObject({ failed: 1, pending: 0, waiting: 3, waitingForPause: 3 });
    expect(backlogOf(rows.busy)).toMatchObject({ orders: 1, pending: 1, waiting: 0 });
    expect(backlogOf(rows.idle)).toMatchObject({ orders: 1, pending: 0, waiting: 0, oldestSince: null });
    expect(runs).toEqual({ paused: 3, busy: 1, idle: 0 });

    // Visibility catches up with the runs within moments: the look is taken once it counts what the runs say.
    const looked = await waitFor('tenant show to count the open runs', async () => {
      const [p, b, i] = [await show(paused), await show(busy), await show(idle)];
      return p.openRuns === runs.paused && b.openRuns === runs.busy && i.openRuns === runs.idle
        ? { paused: p, busy: b, idle: i }
        : undefined;
    });
    // Nothing moved while it looked: b-1 is still at the warehouse, the waits still wait.
    expect(backlogOf(await tenantRows(db, busy))).toEqual(backlogOf(rows.busy));
    expect(backlogOf(await tenantRows(db, paused))).toEqual(backlogOf(rows.paused));

    expect(looked.paused).toMatchObject({
      weight: 3,
      weightFrom: 'TENANT_WEIGHTS',
      share: {
        hasWork: true,
        share: 0.75,
        totalWeight: 4,
        competing: [
          { tenantId: paused, weight: 3 },
          { tenantId: busy, weight: 1 },
        ],
      },
      backlog: backlogOf(rows.paused),
      pause: { tenantId: paused, pausedBy: 'ops', reason: 'stock take' },
      problems: [],
    });
    expect(looked.busy).toMatchObject({
      weight: 1,
      weightFrom: 'TENANT_DEFAULT_WEIGHT',
      share: { hasWork: true, share: 0.25, totalWeight: 4 },
      backlog: backlogOf(rows.busy),
      pause: null,
    });
    expect(looked.idle).toMatchObject({
      weight: 5,
      weightFrom: 'TENANT_WEIGHTS',
      share: { hasWork: false, share: 5 / 9, totalWeight: 9 },
      backlog: { ...backlogOf(rows.idle), oldestAgeSeconds: 0 },
      pause: null,
    });
    // The oldest order not settled is p-fail, placed before the look: its age is the time since, by the store's clock.
    const pFail = rows.paused.find((r) => r.order_id === 'p-fail')!;
    expect(looked.paused.backlog?.oldestSince).toBe(pFail.placed_at!.toISOString());
    expect(looked.paused.backlog?.oldestAgeSeconds).toBeGreaterThan(0);
    expect(looked.paused.backlog?.oldestAgeSeconds).toBeLessThan((Date.now() - pFail.placed_at!.getTime()) / 1000 + 5);

    // The table, as docs/cli.md shows it.
    const text = await cli('tenant', 'show', paused);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^weight +3 +TENANT_WEIGHTS$/m);
    expect(text.stdout).toMatch(/^share +75% \(3 of 4\) +/m);
    expect(text.stdout).toMatch(/^waiting +3 \(3 for a pause\) +/m);
    expect(text.stdout).toMatch(/^shipping +paused for it by ops at \S+: stock take +shipping_pauses in force$/m);
    expect(text.stdout).toContain(`other tenants with open runs (weight): ${busy} (1)`);

    // The order at the warehouse ships once it answers (each request it holds, it holds HELD_MS from its arrival).
    await faultsOf(s)({ latencyMs: 0 });
    await waitFor('b-1 shipped', async () => (await statusOf(busy, 'b-1')) === 'shipped', HELD_MS + 60_000);
  }, 300_000);

  it('names the argument and what was expected for a bad tenant; a tenant found nowhere is not found', async () => {
    const bad = await cli('tenant', 'show', 'acme eu');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("invalid for argument 'tenant'. expected a tenant id: 1–64 of A–Z a–z 0–9 . _ : -");
    const missing = await cli('tenant', 'show');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing required argument 'tenant'");
    const nowhere = s.tenant('nowhere');
    const unknown = await cli('tenant', 'show', nowhere);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`no tenant ${nowhere}: the store holds no order of it`);
  });
});
