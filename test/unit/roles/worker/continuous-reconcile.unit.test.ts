/**
 * The continuous reconciliation without a stack: its settings (defaults, each bad value named with what was expected,
 * the window that must cover the interval), the window a pass reads, and what a complete pass does to the metrics
 * and the log (every kind and check set, 0 where none; one warn line per mismatch naming the order and each side).
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/base/config.js';
import { createMetrics, metricValue } from '../../../../src/base/metrics.js';
import { emptyResult } from '../../../../src/reconcile/mismatch.js';
import type { PassReport } from '../../../../src/reconcile/pass.js';
import {
  carryForward,
  NOTHING_CARRIED,
  passWindow,
  recordPass,
  reconcileIntervalMs,
} from '../../../../src/roles/worker/continuous-reconcile.js';
import { configFailure } from '../../../support/config-failure.js';

describe('continuous reconciliation settings', () => {
  it('is on by default: every 5 minutes over the last hour, judged a minute behind now', () => {
    const c = loadConfig({});
    expect([c.RECONCILE_INTERVAL, c.RECONCILE_WINDOW, c.RECONCILE_SETTLE]).toEqual(['5m', '1h', '1m']);
    expect(reconcileIntervalMs(c)).toBe(300_000);
    const w = passWindow(c, Date.parse('2026-12-07T12:00:00Z'));
    expect([w.since.toISOString(), w.until.toISOString(), w.settleMs]).toEqual([
      '2026-12-07T11:00:00.000Z',
      '2026-12-07T11:59:00.000Z',
      60_000,
    ]);
  });

  it('RECONCILE_INTERVAL=0 turns it off; seconds are allowed', () => {
    expect(reconcileIntervalMs(loadConfig({ RECONCILE_INTERVAL: '0' }))).toBe(0);
    expect(reconcileIntervalMs(loadConfig({ RECONCILE_INTERVAL: '30s' }))).toBe(30_000);
    expect(passWindow(loadConfig({ RECONCILE_SETTLE: '0' }), 5_000_000).until.getTime()).toBe(5_000_000);
  });

  it('names each bad value and what was expected', () => {
    const msg = configFailure({ RECONCILE_INTERVAL: 'often', RECONCILE_WINDOW: '0', RECONCILE_SETTLE: '500ms' });
    expect(msg).toContain(
      'RECONCILE_INTERVAL="often" is invalid: expected a duration of at least 1s such as 30s, 5m or 1h, or 0 (no continuous reconciliation)',
    );
    expect(msg).toContain('RECONCILE_WINDOW="0" is invalid: expected a duration of at least 1s such as 30s, 5m or 1h');
    expect(msg).toContain('RECONCILE_SETTLE="500ms" is invalid');
  });

  it('refuses a window that, less the settle time, is shorter than the interval', () => {
    const msg = configFailure({ RECONCILE_INTERVAL: '15m', RECONCILE_WINDOW: '15m', RECONCILE_SETTLE: '1m' });
    expect(msg).toContain(
      'RECONCILE_WINDOW=15m less RECONCILE_SETTLE=1m is shorter than RECONCILE_INTERVAL=15m: records would fall between passes',
    );
    expect(() => loadConfig({ RECONCILE_INTERVAL: '0', RECONCILE_WINDOW: '1m', RECONCILE_SETTLE: '1m' })).not.toThrow();
  });
});

describe('a complete pass as metrics and log lines', () => {
  const report = (): PassReport => {
    const skipped = emptyResult('skipped');
    const sides = [
      { source: 'orders topic', state: 'OrderPlaced e-7' },
      { source: 'ledger', state: 'absent' },
    ];
    skipped.mismatches.push({ kind: 'skipped', tenantId: 't-1', orderId: 'o-7', at: '0:12', sides });
    const shipments = emptyResult('shipments');
    shipments.unseen.push({ check: 'shipments', what: 'tenant t-1: warehouse unreachable; nothing compared' });
    return {
      since: new Date(0),
      until: new Date(1000),
      tenants: ['t-1'],
      tenantsFrom: 'window',
      results: [skipped, emptyResult('runs'), shipments, emptyResult('status')],
      resumeAt: new Map(),
    };
  };

  it('sets every kind and check, 0 where none, the time of the pass, and logs each mismatch at warn', async () => {
    const metrics = createMetrics();
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _e, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    metrics.reconcile.mismatches.set({ kind: 'run-missing' }, 4);
    recordPass(report(), metrics.reconcile, pino(sink), 1_700_000_000_000);
    const value = (name: string, labels: Record<string, string> = {}) =>
      metricValue(metrics.registry, `fulfilment_reconcile_${name}`, labels);
    expect(await value('mismatches', { kind: 'skipped' })).toBe(1);
    expect(await value('mismatches', { kind: 'run-missing' })).toBe(0);
    expect(await value('unseen', { check: 'shipments' })).toBe(1);
    expect(await value('unseen', { check: 'status' })).toBe(0);
    expect(await value('last_complete_pass_timestamp_seconds')).toBe(1_700_000_000);
    const json = await metrics.registry.getSingleMetric('fulfilment_reconcile_mismatches')!.get();
    expect(json.values.map((v) => v.labels.kind).sort()).toEqual(
      [
        'lines-differ',
        'run-missing',
        'run-open-for-closed',
        'run-without-workers',
        'shipment-missing',
        'shipment-unexpected',
        'skipped',
        'status-missing-on-topic',
        'status-unpublished',
      ].sort(),
    );
    const mismatch = lines.find((l) => l.kind === 'skipped')!;
    expect(mismatch).toMatchObject({ level: 40, tenantId: 't-1', orderId: 'o-7', at: '0:12' });
    expect(mismatch.msg).toBe(
      'reconcile mismatch: skipped t-1/o-7 at 0:12: orders topic: OrderPlaced e-7; ledger: absent',
    );
    expect(lines.find((l) => l.check === 'shipments')).toMatchObject({ level: 40 });
  });
});

describe('each pass after the first covers what came since the last clean one', () => {
  const config = loadConfig({});
  const MIN = 60_000;
  const t0 = Date.parse('2026-12-07T12:00:00Z');
  const clean = (until: Date, tenants: string[], resumeAt: [number, bigint][]): PassReport => ({
    since: new Date(0),
    until,
    tenants,
    tenantsFrom: 'window',
    results: [emptyResult('skipped'), emptyResult('runs'), emptyResult('shipments'), emptyResult('status')],
    resumeAt: new Map(resumeAt),
  });

  it('the first reads the whole window and no resume point; the next starts where it ended, the topic where it read to', () => {
    const first = passWindow(config, t0);
    expect(first).toEqual({ since: new Date(t0 - 60 * MIN), until: new Date(t0 - MIN), settleMs: MIN });
    const carried = carryForward(
      clean(
        first.until,
        ['a', 'b'],
        [
          [0, 17n],
          [1, 4n],
        ],
      ),
      NOTHING_CARRIED,
      t0,
    );
    const next = passWindow(config, t0 + 5 * MIN, carried);
    expect(next.since).toEqual(first.until);
    expect(next.until).toEqual(new Date(t0 + 4 * MIN));
    expect(next.resume).toEqual({
      floor: new Date(t0 - 55 * MIN),
      offsets: new Map([
        [0, 17n],
        [1, 4n],
      ]),
    });
    expect(next.alsoTenants).toEqual(['a', 'b']);
  });

  it('a pass that found a mismatch or could not see something hands on nothing but its tenants', () => {
    const first = passWindow(config, t0);
    const carried = carryForward(clean(first.until, ['a'], [[0, 17n]]), NOTHING_CARRIED, t0);
    const second = passWindow(config, t0 + 5 * MIN, carried);
    const found = clean(second.until, ['a', 'c'], [[0, 40n]]);
    found.results[0]!.mismatches.push({ kind: 'skipped', tenantId: 'a', orderId: 'o-1', at: '0:20', sides: [] });
    const after = carryForward(found, carried, t0 + 5 * MIN);
    expect(after).toEqual({
      ...carried,
      tenants: new Map([
        ['a', t0 + 5 * MIN],
        ['c', t0 + 5 * MIN],
      ]),
    });
    const third = passWindow(config, t0 + 10 * MIN, after);
    expect(third.since).toEqual(second.since);
    expect(third.resume?.offsets).toEqual(new Map([[0, 17n]]));
    const unseen = clean(third.until, ['a'], [[0, 50n]]);
    unseen.results[2]!.unseen.push({ check: 'shipments', what: 'warehouse unreachable' });
    expect(carryForward(unseen, after, t0 + 10 * MIN).since).toEqual(second.since);
    // Repaired: the next clean pass moves on.
    expect(carryForward(clean(third.until, ['a'], [[0, 50n]]), after, t0 + 10 * MIN).since).toEqual(third.until);
  });

  it('never reaches back past RECONCILE_WINDOW; forgets tenants not seen within it; reaches back the linger', () => {
    const carried = carryForward(clean(new Date(t0), ['old'], [[0, 1n]]), NOTHING_CARRIED, t0);
    const late = passWindow(config, t0 + 90 * MIN, carried);
    expect(late.since).toEqual(new Date(t0 + 30 * MIN));
    expect(late.resume?.floor).toEqual(new Date(t0 + 30 * MIN));
    expect(late.alsoTenants).toEqual([]);
    const pruned = carryForward(clean(late.until, ['new'], [[0, 2n]]), carried, t0 + 90 * MIN, t0 + 30 * MIN);
    expect([...pruned.tenants.keys()]).toEqual(['new']);
    const lingering = passWindow(loadConfig({ ORDER_LINGER_SECONDS: '120' }), t0 + 5 * MIN, carried);
    expect(lingering.since).toEqual(new Date(t0 - 2 * MIN));
  });
});
