/**
 * The reconciler's words: what a check compares, what disagrees (a mismatch: which order, which kind, where each side
 * stands) and what a check could not see. Every check module (skipped.ts, runs.ts, shipments.ts, status.ts) answers
 * with a CheckResult in these words; report.ts prints them. Imports nothing.
 *
 * Rules a reader must not break:
 * - a check that could not see part of what it was asked to compare says so in `unseen`; it never passes it silently
 *   (`agrees` is false while anything is unseen);
 * - a mismatch always names its order (tenant and order id) and gives every side it compared, each with where it
 *   stands, so a person can act on one line alone.
 */

/** The checks, in the order a pass runs them. */
export const CHECKS = ['skipped', 'runs', 'shipments', 'status'] as const;
export type CheckName = (typeof CHECKS)[number];

/** Every kind of mismatch, by the check that finds it. */
export const MISMATCH_KINDS = {
  skipped: ['skipped'],
  runs: ['run-missing', 'run-open-for-closed', 'run-without-workers'],
  shipments: ['shipment-missing', 'shipment-unexpected', 'lines-differ'],
  status: ['status-unpublished', 'status-missing-on-topic'],
} as const satisfies Record<CheckName, readonly string[]>;
export type MismatchKind = (typeof MISMATCH_KINDS)[CheckName][number];

/** One side of a comparison: the source, and where the order stands there. */
export interface Side {
  /** `orders topic`, `ledger`, `dead letters`, `store`, `temporal`, `workers`, `warehouse`, `outbox`, `status topic`. */
  source: string;
  /** What that source holds, in a few words (`absent`, `pending`, `dispatched shp_…`, `sent 2026-…`). */
  state: string;
}

export interface Mismatch {
  kind: MismatchKind;
  tenantId: string;
  orderId: string;
  /** Where the disagreement is, when it has an address: a record's `partition:offset`, an outbox row's event id. */
  at?: string;
  /** The version (build id) the order's run is pinned to, for `run-without-workers`. */
  buildId?: string;
  sides: Side[];
}

/** Something a check was asked to compare and could not: the report says so instead of passing it. */
export interface Unseen {
  check: CheckName;
  /** What could not be seen and why, for a person. */
  what: string;
}

export interface CheckResult {
  check: CheckName;
  /** Items compared (records, orders, shipments, outbox rows). */
  compared: number;
  mismatches: Mismatch[];
  unseen: Unseen[];
  /** What was compared and needs no action but is worth knowing (e.g. records still in flight). */
  notes: string[];
}

/** A check's result with nothing found yet. */
export function emptyResult(check: CheckName): CheckResult {
  return { check, compared: 0, mismatches: [], unseen: [], notes: [] };
}

/** True when every check agreed and saw everything it was asked to compare. */
export function agrees(results: readonly CheckResult[]): boolean {
  return results.every((r) => r.mismatches.length === 0 && r.unseen.length === 0);
}

/** The key of an order across sources: `tenant/order` (neither id holds a `/`: the edge's ID rules). */
export function orderKey(tenantId: string, orderId: string): string {
  return `${tenantId}/${orderId}`;
}
