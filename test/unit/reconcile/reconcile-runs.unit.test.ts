import { describe, expect, it } from 'vitest';
import { kinds } from '../../support/reconcile.js';
import { compareRuns, type RunRow, type RunsInputs } from '../../../src/reconcile/runs.js';
import type { OpenRun } from '../../../src/reconcile/temporal-runs.js';

const NOW = Date.parse('2026-03-10T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000);

function row(order: string, status: RunRow['status'], updatedSecondsAgo: number, over: Partial<RunRow> = {}): RunRow {
  return {
    tenant_id: 't1',
    order_id: order,
    status,
    placed_at: ago(updatedSecondsAgo),
    updated_at: ago(updatedSecondsAgo),
    created_at: ago(updatedSecondsAgo),
    waiting_since: null,
    ...over,
  };
}

function run(order: string): OpenRun {
  return { key: `t1/${order}`, tenantId: 't1', orderId: order, runId: `r-${order}`, startedAt: ago(600) };
}

function inputs(rows: RunRow[], open: string[], over: Partial<RunsInputs> = {}): RunsInputs {
  return {
    rows,
    openRuns: new Map(open.map((o) => [`t1/${o}`, run(o)])),
    now: NOW,
    lingerSeconds: 0,
    cancelGraceSeconds: 3600,
    slackMs: 60_000,
    ...over,
  };
}

describe('runs: the store against Temporal', () => {
  it('a pending order needs an open run; a recorded wait does not stand in for one', () => {
    const r = compareRuns(
      inputs(
        [
          row('open', 'pending', 300),
          row('none', 'pending', 300),
          row('waits', 'pending', 300, { waiting_since: ago(200) }),
        ],
        ['open'],
      ),
    );
    expect(kinds(r)).toEqual(['run-missing none', 'run-missing waits']);
    expect(r.mismatches[0]!.sides).toEqual([
      { source: 'store', state: `pending since ${ago(300).toISOString()}` },
      { source: 'temporal', state: 'no open run' },
    ]);
  });

  it('a pending order younger than the slack is not judged (its run may be starting)', () => {
    expect(kinds(compareRuns(inputs([row('young', 'pending', 10)], [])))).toEqual([]);
  });

  it('a run open for a closed order past its linger and the slack is reported; within them it is not', () => {
    const rows = [
      row('shipped-long-ago', 'shipped', 300),
      row('just-shipped', 'shipped', 30),
      row('failed', 'failed', 300),
    ];
    expect(kinds(compareRuns(inputs(rows, ['shipped-long-ago', 'just-shipped', 'failed'])))).toEqual([
      'run-open-for-closed shipped-long-ago',
      'run-open-for-closed failed',
    ]);
    expect(kinds(compareRuns(inputs(rows, ['shipped-long-ago'], { lingerSeconds: 600 })))).toEqual([]);
  });

  it("a tombstone's run waits for its placement for the cancel grace", () => {
    const tombstone = row('early-cancel', 'cancelled', 1800, { placed_at: null });
    expect(kinds(compareRuns(inputs([tombstone], ['early-cancel'])))).toEqual([]);
    expect(kinds(compareRuns(inputs([tombstone], ['early-cancel'], { cancelGraceSeconds: 600 })))).toEqual([
      'run-open-for-closed early-cancel',
    ]);
  });

  it('a closed order without a run agrees', () => {
    expect(kinds(compareRuns(inputs([row('done', 'shipped', 300), row('gone', 'cancelled', 300)], [])))).toEqual([]);
  });

  it('an open run pinned to a version no worker polls for is reported, naming the version and those with workers', () => {
    const rows = [
      row('stranded', 'pending', 300),
      row('lingering', 'shipped', 30),
      row('young-run', 'pending', 300),
      row('polled', 'pending', 300),
    ];
    const open = inputs(rows, ['stranded', 'lingering', 'young-run', 'polled'], {
      pinnedWithoutWorkers: new Map([
        ['t1/stranded', 'build-a'],
        ['t1/lingering', 'build-a'],
        ['t1/young-run', 'build-a'],
      ]),
      versionsWithWorkers: ['build-b', 'build-c'],
      lingerSeconds: 600,
    });
    open.openRuns = new Map(
      [...open.openRuns].map(([k, r]) => [k, k === 't1/young-run' ? { ...r, startedAt: ago(10) } : r]),
    );
    const r = compareRuns(open);
    expect(kinds(r)).toEqual(['run-without-workers stranded', 'run-without-workers lingering']);
    expect(r.mismatches[0]).toMatchObject({ buildId: 'build-a' });
    expect(r.mismatches[0]!.sides).toEqual([
      { source: 'store', state: `pending since ${ago(300).toISOString()}` },
      { source: 'temporal', state: 'run r-stranded pinned to version build-a, which no worker polls for' },
      { source: 'workers', state: 'versions with workers: build-b, build-c' },
    ]);
  });

  it('a run open past its closed order is reported as that, even when its version has no workers', () => {
    const r = compareRuns(
      inputs([row('done', 'shipped', 300)], ['done'], { pinnedWithoutWorkers: new Map([['t1/done', 'build-a']]) }),
    );
    expect(kinds(r)).toEqual(['run-open-for-closed done']);
  });
});
