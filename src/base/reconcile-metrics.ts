/**
 * The continuous reconciliation's metrics (src/roles/worker/continuous-reconcile.ts sets them), registered by
 * createMetrics (src/base/metrics.ts) in the process's registry. Names and labels are part of the external contract, as
 * there: add, never rename. The alerts FulfilmentReconcileMismatch and FulfilmentReconcileStale read them.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface ReconcileMetrics {
  /** Mismatches by kind (src/reconcile/mismatch.ts MISMATCH_KINDS) the last complete pass found: 0 for a kind it found none of. */
  mismatches: Gauge<'kind'>;
  /** What each check of the last complete pass could not see (parts of its window), by check: 0 when it saw everything. */
  unseen: Gauge<'check'>;
  /** When this worker last completed a pass (Unix seconds); 0 before its first. */
  lastCompletePass: Gauge<string>;
  /** Passes that failed before they completed (a source unreachable): their figures are not taken. */
  passesFailed: Counter<string>;
  /** This worker's RECONCILE_INTERVAL in seconds, 0 when it runs no passes: what the staleness alert measures against. */
  interval: Gauge<string>;
}

export function createReconcileMetrics(registers: Registry[]): ReconcileMetrics {
  return {
    mismatches: new Gauge({
      name: 'fulfilment_reconcile_mismatches',
      help: "Mismatches by kind found by this worker's last complete reconciliation pass (its window: RECONCILE_WINDOW behind now, less RECONCILE_SETTLE); 0 for a kind it found none of.",
      labelNames: ['kind'],
      registers,
    }),
    unseen: new Gauge({
      name: 'fulfilment_reconcile_unseen',
      help: "Parts of the window each check of this worker's last complete reconciliation pass could not see (a record past retention, a tenant's shipments unlisted), by check.",
      labelNames: ['check'],
      registers,
    }),
    lastCompletePass: new Gauge({
      name: 'fulfilment_reconcile_last_complete_pass_timestamp_seconds',
      help: 'When this worker last completed a reconciliation pass, Unix seconds; 0 before its first.',
      registers,
    }),
    passesFailed: new Counter({
      name: 'fulfilment_reconcile_passes_failed_total',
      help: "This worker's reconciliation passes that failed before they completed (a source could not be read); the gauges keep the last complete pass's figures.",
      registers,
    }),
    interval: new Gauge({
      name: 'fulfilment_reconcile_interval_seconds',
      help: "This worker's RECONCILE_INTERVAL in seconds (0: it runs no reconciliation passes).",
      registers,
    }),
  };
}
