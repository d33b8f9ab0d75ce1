/**
 * The continuous reconciliation: every RECONCILE_INTERVAL this worker runs one pass of `fulfilment reconcile`
 * (src/reconcile/pass.ts, every check) over a sliding window — from RECONCILE_WINDOW behind now to RECONCILE_SETTLE
 * behind now — and turns it into metrics (src/reconcile-metrics.ts) and one warn line per mismatch. The first pass
 * runs one interval after start — never while the service is still starting, so a start-up that fails (refused
 * credentials, say) makes no connection from here — and each next one an interval after the previous ended, so passes
 * never overlap.
 *
 * Rules a reader must not break:
 * - it only reads, as the pass does, on a pool of its own (one connection): it never takes a connection, a row or a
 *   lock the activities, the relay or readiness need;
 * - the gauges carry the figures of the last complete pass only: a failed pass counts in passesFailed and changes
 *   nothing else, so a mismatch is never cleared by a pass that could not look;
 * - several workers may run it at once: each reads and reports alone, nothing is written, so the figures agree
 *   (the alert rules take the max over workers).
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../config.js';
import { durationMs } from '../config.js';
import type { Db } from '../db.js';
import type { Kafka } from '../kafka/client.js';
import type { Logger } from '../log.js';
import { CHECKS, MISMATCH_KINDS } from '../reconcile/mismatch.js';
import { reconcilePass, type PassReport } from '../reconcile/pass.js';
import { mismatchLine } from '../reconcile/report.js';
import type { ReconcileMetrics } from '../reconcile-metrics.js';

export interface ContinuousReconcileOptions {
  config: Config;
  kafka: Kafka;
  db: Db;
  client: Client;
  metrics: ReconcileMetrics;
  logger: Logger;
}

/** The window of a pass that starts at `now`: RECONCILE_WINDOW to RECONCILE_SETTLE behind it. */
export function passWindow(config: Config, now: number): { since: Date; until: Date; settleMs: number } {
  const settleMs = durationMs(config.RECONCILE_SETTLE);
  return { since: new Date(now - durationMs(config.RECONCILE_WINDOW)), until: new Date(now - settleMs), settleMs };
}

/** Sets the gauges from a complete pass (every kind and check, 0 where it found none) and logs each mismatch. */
export function recordPass(report: PassReport, metrics: ReconcileMetrics, logger: Logger, now = Date.now()): void {
  const found = report.results.flatMap((r) => r.mismatches);
  for (const kind of Object.values(MISMATCH_KINDS).flat())
    metrics.mismatches.set({ kind }, found.filter((m) => m.kind === kind).length);
  for (const check of CHECKS)
    metrics.unseen.set({ check }, report.results.find((r) => r.check === check)?.unseen.length ?? 0);
  metrics.lastCompletePass.set(now / 1000);
  for (const m of found)
    logger.warn(
      { kind: m.kind, tenantId: m.tenantId, orderId: m.orderId, at: m.at, sides: m.sides },
      `reconcile mismatch: ${mismatchLine(m)}`,
    );
  for (const u of report.results.flatMap((r) => r.unseen))
    logger.warn({ check: u.check }, `reconcile could not see: ${u.what}`);
}

export interface ContinuousReconcile {
  /** Ends the passes: the one running is abandoned (its figures not taken); resolves once it has ended. */
  stop(): Promise<void>;
}

/** RECONCILE_INTERVAL in ms; 0: no passes. */
export function reconcileIntervalMs(config: Config): number {
  return durationMs(config.RECONCILE_INTERVAL);
}

/** Starts the passes (RECONCILE_INTERVAL above 0: the caller starts none at 0). */
export function startContinuousReconcile(opts: ContinuousReconcileOptions): ContinuousReconcile {
  const { config, metrics, logger } = opts;
  const intervalMs = reconcileIntervalMs(config);
  metrics.interval.set(intervalMs / 1000);
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  async function once(): Promise<void> {
    const started = Date.now();
    const { since, until, settleMs } = passWindow(config, started);
    try {
      const report = await reconcilePass(
        { config, kafka: opts.kafka, db: opts.db, client: opts.client, signal: stopping.signal },
        { since, until, settleMs },
      );
      if (stopping.signal.aborted) return;
      recordPass(report, metrics, logger);
      const n = report.results.reduce((sum, r) => sum + r.mismatches.length, 0);
      logger.info(
        { since: since.toISOString(), until: until.toISOString(), tenants: report.tenants.length, mismatches: n },
        `reconcile pass complete in ${Date.now() - started} ms: ${n} mismatch(es)`,
      );
    } catch (err) {
      if (stopping.signal.aborted) return;
      metrics.passesFailed.inc();
      logger.warn(
        { err: (err as Error).message },
        'reconcile pass failed; the metrics keep the last complete pass, the next pass runs at the interval',
      );
    }
  }

  function next(delayMs: number): void {
    timer = setTimeout(() => {
      running = once().finally(() => {
        running = undefined;
        if (!stopping.signal.aborted) next(intervalMs);
      });
    }, delayMs);
    timer.unref();
  }
  next(intervalMs);
  return {
    async stop() {
      stopping.abort();
      clearTimeout(timer);
      await running;
    },
  };
}
