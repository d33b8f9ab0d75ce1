/**
 * The reconcile phase's table (bench/reconcile-phase.ts): one pass's cost per 1,000 orders, and the live path with
 * the continuous reconciliation off and on — p50/p99 produce→shipped and the service's CPU per order, ON ÷ OFF.
 * Medians over reps; a row appears only for a run that measured the phase.
 */
import type { PhaseResult } from './phases.js';
import type { KindRun } from './kind-run.js';
import { median } from './stats.js';

export const RECONCILE_TITLE =
  "Reconciliation's cost: one pass over the orders' window (this process's wall and CPU time), then the service at a steady rate with the continuous reconciliation off and on (median over reps):";

export const RECONCILE_HEADER = ['temporal', 'measure', 'off', 'on', 'on ÷ off', 'load 1 min'];

const fmt = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : '–');

export function reconcileRows(run: KindRun): string[][] {
  const of = (phase: string) => run.reps.map((r) => r[phase]).filter((p): p is PhaseResult => p !== undefined);
  const pass = of('reconcile-pass');
  const off = of('reconcile-off');
  const on = of('reconcile-on');
  if (pass.length === 0 || off.length === 0 || on.length === 0) return [];
  const m = (ps: PhaseResult[], f: (p: PhaseResult) => number) => median(ps.map(f));
  const load = (ps: PhaseResult[]) =>
    fmt(
      m(ps, (p) => p.load1After),
      1,
    );
  const cpuPerOrder = (p: PhaseResult) => ((p.cpu.service ?? Number.NaN) / p.figures.orders!) * 1000;
  const live = (name: string, f: (p: PhaseResult) => number, digits: number) => {
    const a = m(off, f);
    const b = m(on, f);
    return [run.kind, name, fmt(a, digits), fmt(b, digits), fmt(b / a, 3), `${load(off)} / ${load(on)}`];
  };
  const compared = Object.keys(pass[0]!.figures)
    .filter((k) => k.startsWith('compared.'))
    .map(
      (k) =>
        `${k.slice('compared.'.length)} ${fmt(
          m(pass, (p) => p.figures[k]!),
          0,
        )}`,
    )
    .join(', ');
  const orders = fmt(
    m(pass, (p) => p.figures.orders!),
    0,
  );
  return [
    [
      run.kind,
      `one pass over ${orders} shipped orders: ms / CPU ms per 1,000 orders`,
      '',
      `${fmt(
        m(pass, (p) => p.figures.msPer1000!),
        0,
      )} / ${fmt(
        m(pass, (p) => p.figures.cpuMsPer1000!),
        0,
      )}`,
      '',
      load(pass),
    ],
    [
      run.kind,
      `  compared (mismatches ${fmt(
        m(pass, (p) => p.figures.mismatches!),
        0,
      )}, unseen ${fmt(
        m(pass, (p) => p.figures.unseen!),
        0,
      )})`,
      '',
      compared,
      '',
      '',
    ],
    live(
      `live at ${fmt(
        m(off, (p) => p.figures.rate!),
        0,
      )}/s: p50 produce→shipped ms`,
      (p) => p.figures.p50!,
      0,
    ),
    live('  p99 produce→shipped ms', (p) => p.figures.p99!, 0),
    live('  service CPU ms per order', cpuPerOrder, 2),
    [
      run.kind,
      `  passes while measured (RECONCILE_INTERVAL ${fmt(
        m(on, (p) => p.figures.intervalSeconds!),
        0,
      )} s on, 0 off)`,
      '0',
      fmt(
        m(on, (p) => p.figures.passes!),
        0,
      ),
      '',
      '',
    ],
  ];
}
