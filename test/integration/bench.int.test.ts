/**
 * `npm run bench` runs end to end on a tiny size: every phase produces its figures, the orders it hands the worker
 * ship, and the table and JSON come out. It asserts no time or rate (a bench is not a test): only that each figure
 * was measured.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Phase {
  figures: Record<string, number>;
  cpu: Record<string, number>;
}

describe('npm run bench', () => {
  it('measures every phase on 20 orders (the memory phase on 200 records, the reconcile phase at 5/s for 5 s, the fairness phase with a 60-order burst) and prints the table', async () => {
    const out = join(dir, 'bench.json');
    // The bench's children run dist/ (npm test built it, as npm run bench does).
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        'bench/main.ts',
        '--orders',
        '20',
        '--reps',
        '1',
        '--memory',
        '200',
        '--burst',
        '60',
        '--cache',
        '10',
        '--outage',
        '5',
        '--rates',
        '5',
        '--rate-seconds',
        '5',
        '--quiet-wait',
        '0',
        '--reconcile-orders',
        '20',
        '--reconcile-rate',
        '5',
        '--reconcile-seconds',
        '5',
        '--fair-burst',
        '60',
        '--fair-quiet-seconds',
        '5',
        '--json',
        out,
      ],
      {
        env: process.env,
        maxBuffer: 16 * 1024 * 1024,
        // Every phase in turn: about 3 minutes on an idle machine, several times that on a loaded one.
        timeout: 1_200_000,
      },
    );
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      runs: { reps: Record<string, Phase>[]; memory: Phase }[];
    };
    const rep = report.runs[0]!.reps[0]!;
    // The open loop at one rate (5/s for 5 s): the knee's 80 % runs only when that rate was kept up with.
    const open = Object.keys(rep).filter((k) => k.startsWith('open-'));
    expect(
      Object.keys(rep)
        .filter((k) => !k.startsWith('open-'))
        .sort(),
    ).toEqual([
      'bare',
      'burst',
      'cache',
      'drain1',
      'drain6',
      'dup',
      'eager',
      'fair-beside',
      'fair-beside-burst',
      'fair-burst-alone',
      'fair-quiet-alone',
      'late',
      'life',
      'linger',
      'outage',
      'plain',
      'raw',
      'reconcile-off',
      'reconcile-on',
      'reconcile-pass',
    ]);
    expect(open).toEqual(expect.arrayContaining(['open-idle', 'open-5']));
    expect(rep['open-5']!.figures).toMatchObject({
      rate: 5,
      orders: 25,
      knee: expect.any(Number),
      keptUp: expect.any(Number),
    });
    expect(rep['open-5']!.cpu.service).toBeGreaterThan(0);
    expect(stdout).toMatch(/Open loop: the service as production runs it/);
    expect(rep.raw!.figures.calls).toBe(20);
    expect(rep.drain6!.figures.records).toBe(20);
    expect(rep.dup!.figures.records).toBe(22);
    expect(rep.drain6!.figures.historyEvents).toBeGreaterThan(0);
    // The whole life: every run closed, at the default linger, a 1 s linger, and started eagerly.
    for (const phase of ['life', 'linger', 'eager'])
      expect(rep[phase]!.figures, phase).toMatchObject({
        orders: 20,
        closedPerSecond: expect.any(Number),
        historyEvents: expect.any(Number),
      });
    // Late events: every cancellation met a closed run and was recorded through the store; no run was reopened.
    expect(rep.late!.figures).toMatchObject({ lateEvents: 20, lateEventsPerSecond: expect.any(Number) });
    expect(rep.late!.figures.historyEventsAfter).toBe(rep.eager!.figures.historyEvents);
    expect(stdout).toMatch(/a late event \(its run closed, recorded through the store\)[^\n]*\s+\d/);
    expect(rep.burst!.figures).toMatchObject({
      events: 60,
      burstEventsPerSecond: expect.any(Number),
      othersOnBurstPartitionSeconds: expect.any(Number),
      othersElsewhereSeconds: expect.any(Number),
    });
    expect(rep.cache!.figures).toMatchObject({ runs: 10, workerRssPerRun: expect.any(Number) });
    // The warehouse outage: every order that arrived during it counted, settled after, its requests measured.
    expect(rep.outage!.figures).toMatchObject({
      outageSeconds: expect.any(Number),
      ordersDuringOutage: expect.any(Number),
      failedByOutage: expect.any(Number),
      requestsWhileDown: expect.any(Number),
      recoverySeconds: expect.any(Number),
      recoveryPeakPerSecond: expect.any(Number),
    });
    expect(rep.outage!.figures.ordersDuringOutage).toBeGreaterThan(0);
    expect(stdout).toMatch(/warehouse down \(first rep\): orders the outage held as failed[^\n]*\d+ of \d+/);
    expect(rep.drain6!.figures.bridgePeakRss).toBeGreaterThan(0);
    for (const phase of ['drain6', 'drain1', 'dup'])
      expect(Object.keys(rep[phase]!.cpu)).toEqual(
        expect.arrayContaining(['temporal', 'kafka', 'postgres', 'worker', 'bridge']),
      );
    expect(report.runs[0]!.memory.figures.records).toBe(200);
    // Reconciliation's cost: one pass compared the 20 shipped orders; the live rate ran with it off and on.
    expect(rep['reconcile-pass']!.figures).toMatchObject({
      orders: 20,
      msPer1000: expect.any(Number),
      cpuMsPer1000: expect.any(Number),
    });
    expect(rep['reconcile-pass']!.figures['compared.runs']).toBeGreaterThanOrEqual(20);
    for (const phase of ['reconcile-off', 'reconcile-on'])
      expect(rep[phase]!.figures, phase).toMatchObject({ rate: 5, orders: 25, p50: expect.any(Number) });
    expect(rep['reconcile-on']!.figures.intervalSeconds).toBeGreaterThan(0);
    expect(stdout).toMatch(/live at 5\/s: p50 produce→shipped ms\s+\d+\s+\d+\s+\d/);
    // Tenants' shares: the quiet tenant alone and beside a 60-order burst, each order's time split in three stages.
    const stages = Object.fromEntries(
      ['handOver', 'record', 'ship'].flatMap((s) => [`${s}P50`, `${s}P99`]).map((k) => [k, expect.any(Number)]),
    );
    expect(rep['fair-quiet-alone']!.figures).toMatchObject({ rate: 5, orders: 25, p99: expect.any(Number), ...stages });
    // Beside the burst for as long as the burst took alone (at least the 5 s).
    expect(rep['fair-beside']!.figures).toMatchObject({ rate: 5, p99: expect.any(Number), ...stages });
    expect(rep['fair-beside']!.figures.orders).toBeGreaterThanOrEqual(25);
    for (const phase of ['fair-burst-alone', 'fair-beside-burst'])
      expect(rep[phase]!.figures, phase).toMatchObject({ orders: 60, drainSeconds: expect.any(Number) });
    expect(stdout).toMatch(/bridge drain, 6 partitions ÷ raw loop\s+\d/);
    expect(stdout).toMatch(/history events per shipped order, whole life \(closed\)\s+\d+/);
    expect(stdout).toMatch(/retry storm on one order[^\n]*\s+\d/);
  }, 1_260_000);
});
