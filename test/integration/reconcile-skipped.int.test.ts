/**
 * `fulfilment reconcile`, kind `skipped`, made the way it happens in life: with the bridge stopped, three orders are
 * published and the consumer group's offsets are moved past them with Kafka's admin API (an operator skipping a bad
 * stretch); the bridge starts again, its lag reads 0 and nothing else notices. The pass names the three, a dry-run
 * repair plans their redelivery, `--repair --yes` redelivers them through the bridge's path, and the next pass agrees.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { ReportJson } from '../../src/reconcile/report.js';
import { caughtUp, events, recordsOn, waitFor } from '../support/harness.js';
import { reconcileCase, skipStretch, type ReconcileCase } from '../support/reconcile.js';
import { cliOf } from '../support/operator.js';

describe('reconcile: records skipped past the committed offsets', () => {
  let c: ReconcileCase;
  const reconcile = (...more: string[]) => c.reconcile(...more);
  let worker: App;
  const skipped = ['skip-a', 'skip-b', 'skip-c'];
  const cli = () => cliOf(c.s);
  const shipped = (order: string) =>
    waitFor(`${order} to ship`, async () => (await c.s.row(c.tenant, order))?.status === 'shipped');

  beforeAll(async () => {
    c = await reconcileCase('reconcile-skipped');
    worker = await c.s.startInstance({ roles: { worker: true, bridge: false } });
    const bridge = await c.s.startInstance({ roles: { worker: false, bridge: true } });
    // Handled in every way the service handles a record: shipped, a duplicate of it, poison dead-lettered, a type
    // the service does not know (ignored by design).
    const before = events.placed(c.tenant, 'before');
    const { eventId: _none, ...poison } = events.placed(c.tenant, 'poison');
    await c.s.produce([
      { partition: 0, value: before },
      { partition: 0, value: before },
      { partition: 1, value: poison },
      { partition: 2, value: { ...events.placed(c.tenant, 'refund'), type: 'orders.OrderRefunded' } },
    ]);
    await shipped('before');
    await waitFor('the poison dead-lettered', async () => (await recordsOn(c.s.admin, c.s.config.DLQ_TOPIC)) === 1);
    await waitFor('the bridge caught up', () =>
      caughtUp(c.s.admin, c.s.config.CONSUMER_GROUP, c.s.config.ORDERS_TOPIC),
    );
    await skipStretch(c, bridge, skipped);
    await c.s.produce([{ partition: 0, value: events.placed(c.tenant, 'after') }]);
    await shipped('after');
    await waitFor('the bridge caught up', () =>
      caughtUp(c.s.admin, c.s.config.CONSUMER_GROUP, c.s.config.ORDERS_TOPIC),
    );
  }, 120_000);

  afterAll(async () => {
    await c?.s.close();
  });

  it('names the three skipped orders, and nothing else disagrees', async () => {
    expect(worker).toBeDefined();
    // What the service's own monitoring sees: no lag at all.
    const lag = JSON.parse((await cli()('lag', '--json')).stdout) as { partitions: { behind: number }[] };
    expect(lag.partitions.map((p) => p.behind)).toEqual([0, 0, 0]);
    const run = await reconcile('--json');
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout) as ReportJson;
    const found = report.checks.flatMap((c) => c.mismatches);
    expect(found.map((m) => `${m.kind} ${m.orderId}`).sort()).toEqual(skipped.map((o) => `skipped ${o}`));
    expect(found.every((m) => m.tenantId === c.tenant && m.sides.some((x) => x.source === 'ledger'))).toBe(true);
    expect(report.checks.flatMap((c) => c.unseen)).toEqual([]);
    // The duplicate is in the ledger, the poison in the dead letters, the unknown type noted: none is a mismatch.
    const topic = report.checks.find((x) => x.check === 'skipped')!;
    expect(topic.compared).toBe(8);
    expect(topic.notes).toContain('1 record(s) of an unknown event type: ignored by design');
    for (const o of skipped) expect(await c.s.row(c.tenant, o)).toBeUndefined();
  });

  it('a human summary names each mismatch by tenant/order and kind', async () => {
    const run = await reconcile();
    expect(run.code).toBe(1);
    for (const o of skipped)
      expect(run.stdout).toMatch(new RegExp(`skipped ${c.tenant}/${o} at \\d+:\\d+: orders topic`));
    expect(run.stdout).toContain('3 mismatch(es)');
  });

  it('--repair alone is a dry run: it plans the redelivery and changes nothing', async () => {
    const run = await reconcile('--repair');
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('dry run: 3 repair(s) planned');
    const auditLine = JSON.parse(run.stderr.trim().split('\n').at(-2)!) as { audit: string; dryRun: boolean };
    expect(auditLine).toMatchObject({ audit: 'reconcile repair', dryRun: true });
    for (const o of skipped) expect(await c.s.row(c.tenant, o)).toBeUndefined();
  });

  it('--repair --yes redelivers them; they ship, and the next pass agrees', async () => {
    const run = await reconcile('--repair', '--yes', '--reason', 'skipped stretch found by reconcile', '--by', 'it');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('"audit":"reconcile repair"');
    expect(run.stderr).toContain('"operator":"it"');
    for (const o of skipped) await shipped(o);
    const again = await reconcile();
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('everything agrees');
    const twice = await reconcile('--repair', '--yes', '--reason', 'again', '--by', 'it');
    expect(twice.code).toBe(0);
    expect(twice.stderr).toContain('"actions":[]');
  });
});
