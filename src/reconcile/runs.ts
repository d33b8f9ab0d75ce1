/**
 * `run-missing`, `run-open-for-closed` and `run-without-workers`: the store against Temporal. Pure: runs-sources.ts reads the store's rows
 * and the open runs (temporal-runs.ts), this compares them.
 *
 * - Every `pending` order has an open run — `run-missing` otherwise. A recorded wait for the warehouse
 *   (`waiting_since`) does not stand in for one: the resumer wakes a waiting order by signalling its run, and sets
 *   aside one whose run is gone (src/roles/worker/wake-orders.ts), so a pending order without a run is shipped by
 *   nobody.
 * - No run is open for an order the store has closed (shipped, cancelled, failed, recall-failed) longer than the run
 *   may rightly stay: ORDER_LINGER_SECONDS after the order took its status (runs linger for late events), plus a
 *   slack for the run's last task; a tombstone (a cancellation before its placement) keeps its run open for its
 *   placement CANCEL_GRACE_SECONDS — `run-open-for-closed`.
 * - Every open run is pinned to a version some worker polls for (pinned-runs.ts reads which are not) — otherwise
 *   `run-without-workers`: the run only ever runs on its own version, so its order waits for nobody.
 *
 * Rule a reader must not break: a pending order is compared only once it is older than the slack (its run may be
 * starting), a run only once it is older than the slack (its version may be rolling out), and the caller confirms every mismatch against the order's own run and row before reporting it.
 */
import type { FulfilmentRow } from '../vocabulary/order.js';
import { emptyResult, orderKey, type CheckResult, type Mismatch } from './mismatch.js';
import type { OpenRun } from './temporal-runs.js';

/** What the runs check reads of a row. */
export type RunRow = Pick<
  FulfilmentRow,
  'tenant_id' | 'order_id' | 'status' | 'placed_at' | 'updated_at' | 'created_at' | 'waiting_since'
>;

export interface RunsInputs {
  rows: readonly RunRow[];
  openRuns: ReadonlyMap<string, OpenRun>;
  now: number;
  lingerSeconds: number;
  cancelGraceSeconds: number;
  /** Time a run may take to open after its order's row, or to close after its order settled, ms. */
  slackMs: number;
  /** `tenant/order` → the version its open run is pinned to, for versions no worker polls for; default none. */
  pinnedWithoutWorkers?: ReadonlyMap<string, string>;
  /** The versions with live workers, named in a `run-without-workers` mismatch. */
  versionsWithWorkers?: readonly string[];
}

/** Compares the store's orders with the open runs. */
export function compareRuns(input: RunsInputs): CheckResult {
  const result = emptyResult('runs');
  for (const row of input.rows) {
    result.compared += 1;
    const run = input.openRuns.get(orderKey(row.tenant_id, row.order_id));
    const found = runMismatch(row, run, input);
    if (found) result.mismatches.push(found);
  }
  return result;
}

function runMismatch(row: RunRow, run: OpenRun | undefined, input: RunsInputs): Mismatch | undefined {
  const store = { source: 'store', state: describeRow(row) };
  if (row.status === 'pending') {
    if (run) return withoutWorkers(row, run, input);
    if (input.now - row.updated_at.getTime() < input.slackMs) return undefined;
    return {
      kind: 'run-missing',
      tenantId: row.tenant_id,
      orderId: row.order_id,
      sides: [store, { source: 'temporal', state: 'no open run' }],
    };
  }
  if (!run) return undefined;
  const tombstone = row.status === 'cancelled' && row.placed_at === null;
  const mayStayMs = (tombstone ? input.cancelGraceSeconds : input.lingerSeconds) * 1000 + input.slackMs;
  if (input.now - row.updated_at.getTime() <= mayStayMs) return withoutWorkers(row, run, input);
  return {
    kind: 'run-open-for-closed',
    tenantId: row.tenant_id,
    orderId: row.order_id,
    sides: [store, { source: 'temporal', state: `run ${run.runId} open since ${run.startedAt.toISOString()}` }],
  };
}

/** `run-without-workers` when the order's open run, older than the slack, is pinned to a version nobody polls for. */
function withoutWorkers(row: RunRow, run: OpenRun, input: RunsInputs): Mismatch | undefined {
  const buildId = input.pinnedWithoutWorkers?.get(orderKey(row.tenant_id, row.order_id));
  if (buildId === undefined || input.now - run.startedAt.getTime() < input.slackMs) return undefined;
  const polled = input.versionsWithWorkers?.length ? input.versionsWithWorkers.join(', ') : 'none';
  return {
    kind: 'run-without-workers',
    tenantId: row.tenant_id,
    orderId: row.order_id,
    buildId,
    sides: [
      { source: 'store', state: describeRow(row) },
      { source: 'temporal', state: `run ${run.runId} pinned to version ${buildId}, which no worker polls for` },
      { source: 'workers', state: `versions with workers: ${polled}` },
    ],
  };
}

/** A row in a few words: its status, since when, and its wait if any. */
export function describeRow(row: RunRow): string {
  const what = row.status === 'cancelled' && row.placed_at === null ? 'cancelled before placement' : row.status;
  const wait = row.waiting_since ? `, waiting since ${row.waiting_since.toISOString()}` : '';
  return `${what} since ${row.updated_at.toISOString()}${wait}`;
}
