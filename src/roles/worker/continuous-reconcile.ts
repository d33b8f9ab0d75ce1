/**
 * The continuous reconciliation: every RECONCILE_INTERVAL this worker runs one pass of `fulfilment reconcile`
 * (src/reconcile/pass.ts, every check) and turns it into metrics (src/base/reconcile-metrics.ts) and one warn line per
 * mismatch. Its first pass after start covers RECONCILE_WINDOW behind now up to RECONCILE_SETTLE behind now; each
 * next one only what came since (passWindow, carryForward): the time after the last pass's end, and the orders topic
 * from where that pass stopped reading it on each partition — whatever the records' times, so a partition that lagged
 * or an offset moved past records is read from there — with every pending order and every tenant seen within the
 * window. A pass that found anything (a mismatch, something it could not see) passes nothing on: the next covers the
 * same and more, so what it found stays in the gauges until it is repaired or leaves RECONCILE_WINDOW. The first pass
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
import type { Config } from '../../base/config.js';
import { durationMs } from '../../base/config.js';
import type { Db } from '../../adapters/store/db.js';
import type { Kafka } from '../../adapters/kafka/client.js';
import type { Logger } from '../../base/log.js';
import { CHECKS, MISMATCH_KINDS } from '../../reconcile/mismatch.js';
import { reconcilePass, type PassOptions, type PassReport } from '../../reconcile/pass.js';
import { mismatchLine } from '../../reconcile/report.js';
import type { ReconcileMetrics } from '../../base/reconcile-metrics.js';

export interface ContinuousReconcileOptions {
  config: Config;
  kafka: Kafka;
  db: Db;
  client: Client;
  metrics: ReconcileMetrics;
  logger: Logger;
}

/** What a clean pass hands to the next: where it ended, and the tenants seen (with when). */
export interface Carried {
  /** The end of the last clean pass's window; undefined: no clean pass since start. */
  since?: Date;
  /** Where the last clean pass stopped reading the orders topic, per partition. */
  resumeAt: ReadonlyMap<number, bigint>;
  /** Every tenant a pass named, with the time of the last pass that named it. */
  tenants: ReadonlyMap<string, number>;
}

export const NOTHING_CARRIED: Carried = { resumeAt: new Map(), tenants: new Map() };

/**
 * The window of a pass that starts at `now`: up to RECONCILE_SETTLE behind it, from the end of the last clean pass
 * (less ORDER_LINGER_SECONDS: a closed order's run may stay open that long before it is judged) or, with none,
 * RECONCILE_WINDOW behind it — never further back than that.
 */
export function passWindow(config: Config, now: number, carried: Carried = NOTHING_CARRIED): PassOptions {
  const settleMs = durationMs(config.RECONCILE_SETTLE);
  const floor = now - durationMs(config.RECONCILE_WINDOW);
  const until = new Date(now - settleMs);
  if (carried.since === undefined) return { since: new Date(floor), until, settleMs };
  const since = new Date(Math.max(floor, carried.since.getTime() - config.ORDER_LINGER_SECONDS * 1000));
  const alsoTenants = [...carried.tenants].filter(([, at]) => at >= floor).map(([t]) => t);
  return { since, until, settleMs, resume: { floor: new Date(floor), offsets: carried.resumeAt }, alsoTenants };
}

/**
 * What the pass at `now` hands on: its end and where it read to if it found nothing, else what it was given. Tenants
 * last named before `forgetBefore` (RECONCILE_WINDOW behind the pass) are dropped, so the map does not grow for ever.
 */
export function carryForward(report: PassReport, carried: Carried, now: number, forgetBefore = -Infinity): Carried {
  const tenants = new Map([...carried.tenants].filter(([, at]) => at >= forgetBefore));
  for (const t of report.tenants) tenants.set(t, now);
  const clean = report.results.every((r) => r.mismatches.length === 0 && r.unseen.length === 0);
  if (!clean) return { ...carried, tenants };
  return { since: report.until, resumeAt: report.resumeAt, tenants };
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
  let carried = NOTHING_CARRIED;

  async function once(): Promise<void> {
    const started = Date.now();
    const window = passWindow(config, started, carried);
    const { since, until } = window;
    try {
      const report = await reconcilePass(
        { config, kafka: opts.kafka, db: opts.db, client: opts.client, signal: stopping.signal },
        window,
      );
      if (stopping.signal.aborted) return;
      recordPass(report, metrics, logger);
      carried = carryForward(report, carried, started, started - durationMs(config.RECONCILE_WINDOW));
      const n = report.results.reduce((sum, r) => sum + r.mismatches.length, 0);
      logger.info(
        {
          since: since.toISOString(),
          until: until.toISOString(),
          resumed: window.resume !== undefined,
          tenants: report.tenants.length,
          compared: Object.fromEntries(report.results.map((r) => [r.check, r.compared])),
          mismatches: n,
        },
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
