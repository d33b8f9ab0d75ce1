/**
 * The worker's continuous reconciliation (src/roles/worker/continuous-reconcile.ts) finding records skipped in life, as
 * `reconcile-skipped.int.test.ts` makes them (test/support/reconcile.ts skipStretch: with the bridge stopped, three
 * orders are published and the consumer group's offsets moved past them with Kafka's admin API). The
 * worker's own passes set fulfilment_reconcile_mismatches{kind="skipped"} to 3 and log each record; after
 * `fulfilment reconcile --repair --yes` a later pass reads 0.
 *
 * The worker's passes after its first read only what came since the last clean one: the orders topic from where that
 * pass stopped on each partition. Here the three records lie uncommitted, in no pass's reach, while clean passes move
 * their windows' ends past the records' time; only then are the offsets moved. A pass that resumed where the last one
 * stopped must find them (one that started at the last window's end would never read them).
 *
 * Settings changed: RECONCILE_INTERVAL=2s (default 5m) and RECONCILE_SETTLE=5s (default 1m; the window's end is that
 * far behind now) — at the defaults the first pass to see the records would come minutes later. RECONCILE_WINDOW keeps
 * its default (1h): the scenario's topics are younger than that.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { Logger } from '../../src/base/log.js';
import { caughtUp, counter, events, waitFor } from '../support/harness.js';
import { reconcileCase, skipStretch, type ReconcileCase } from '../support/reconcile.js';

const RECONCILE = { RECONCILE_INTERVAL: '2s', RECONCILE_SETTLE: '5s' };

/** A logger whose JSON lines are kept, to read what the worker logged. */
function keptLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as never);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

describe('continuous reconciliation: records skipped past the committed offsets', () => {
  let c: ReconcileCase;
  let worker: App;
  const kept = keptLogger();
  const skipped = ['skip-a', 'skip-b', 'skip-c'];
  const gauge = (kind: string) => counter(worker, 'fulfilment_reconcile_mismatches', { kind });
  const lastPass = () => counter(worker, 'fulfilment_reconcile_last_complete_pass_timestamp_seconds');
  const passLines = () =>
    kept.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('reconcile pass complete'));
  const shipped = (order: string) =>
    waitFor(`${order} to ship`, async () => (await c.s.row(c.tenant, order))?.status === 'shipped');

  beforeAll(async () => {
    c = await reconcileCase('reconcile-continuous');
    worker = await c.s.startInstance({ roles: { worker: true, bridge: false }, logger: kept.logger }, RECONCILE);
    const bridge = await c.s.startInstance({ roles: { worker: false, bridge: true } });
    await c.s.produce([{ partition: 0, value: events.placed(c.tenant, 'before') }]);
    await shipped('before');
    await waitFor('the bridge caught up', () =>
      caughtUp(c.s.admin, c.s.config.CONSUMER_GROUP, c.s.config.ORDERS_TOPIC),
    );
    await skipStretch(c, bridge, skipped, async () => {
      // Two clean passes whose windows end (RECONCILE_SETTLE behind their start) after the records were published.
      const published = Date.now();
      await waitFor('two clean passes whose windows end past the three records', () => {
        const clean = passLines().filter((l) => Date.parse(l.until as string) > published && l.mismatches === 0);
        return clean.length >= 2;
      });
    });
  }, 120_000);

  afterAll(async () => {
    await c?.s.close();
  });

  it("the worker's passes count the three as skipped and log each record", async () => {
    await waitFor('a pass to count 3 skipped records', async () => (await gauge('skipped')) === 3, 90_000);
    const found = passLines().find((l) => l.mismatches === 3);
    expect(found, 'the pass that found them resumed where a clean one stopped').toMatchObject({ resumed: true });
    for (const kind of ['run-missing', 'shipment-missing', 'status-unpublished'])
      expect(await gauge(kind), kind).toBe(0);
    expect(await counter(worker, 'fulfilment_reconcile_interval_seconds')).toBe(2);
    const logged = kept.lines.filter((l) => l.kind === 'skipped' && l.tenantId === c.tenant);
    expect(logged.every((l) => l.level === 40)).toBe(true);
    expect(new Set(logged.map((l) => l.orderId))).toEqual(new Set(skipped));
    for (const order of skipped) {
      const line = logged.find((l) => l.orderId === order)!;
      expect(line.msg).toMatch(
        new RegExp(`skipped ${c.tenant}/${order} at \\d+:\\d+: orders topic: .*; ledger: absent`),
      );
      expect(line.at).toMatch(/^\d+:\d+$/);
    }
  });

  it('after `reconcile --repair --yes` a later pass reads 0', async () => {
    const run = await c.reconcile('--repair', '--yes', '--reason', 'skipped stretch found by reconcile', '--by', 'it');
    expect(run.stdout).toContain('3 mismatch(es)');
    const repaired = Date.now() / 1000;
    for (const order of skipped) await shipped(order);
    await waitFor(
      'a pass after the repair to read 0',
      async () => (await lastPass()) > repaired && (await gauge('skipped')) === 0,
      90_000,
    );
  });
});
