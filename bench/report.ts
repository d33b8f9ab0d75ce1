/**
 * The bench's figures from its phase results: each ratio per repetition (then median and min), with the raw
 * figures behind it (medians), one column per Temporal; and the CPU of every process in every phase. Printed as a
 * plain table (src/cli/table.ts) or as Markdown (`--markdown`, for docs/performance.md).
 */
import { formatTable } from '../src/cli/table.js';
import type { KindRun } from './kind-run.js';
import type { PhaseResult } from './phases.js';
import { median } from './stats.js';
import { RECONCILE_HEADER, RECONCILE_TITLE, reconcileRows } from './reconcile-report.js';

export interface Figure {
  name: string;
  target: string;
  /** Per kind: the cell's text and its numbers. */
  cells: Record<string, { text: string; median?: number; min?: number; values?: number[] }>;
}

const fmt = (x: number, digits?: number) => {
  if (!Number.isFinite(x)) return '–';
  const d = digits ?? (Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2);
  return x.toFixed(d);
};
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;

/** Per rep value of a phase figure; undefined where the phase did not run. */
function per(run: KindRun, phase: string, fig: string): number[] {
  return run.reps.map((r) => r[phase]?.figures[fig]).filter((x): x is number => x !== undefined && Number.isFinite(x));
}

function perRatio(
  run: KindRun,
  a: (r: Record<string, PhaseResult>) => number | undefined,
  b: (r: Record<string, PhaseResult>) => number | undefined,
): number[] {
  return run.reps
    .map((r) => {
      const x = a(r);
      const y = b(r);
      return x !== undefined && y !== undefined && y > 0 ? x / y : undefined;
    })
    .filter((x): x is number => x !== undefined && Number.isFinite(x));
}

const fig = (phase: string, name: string) => (r: Record<string, PhaseResult>) => r[phase]?.figures[name];
/** Temporal server CPU seconds per unit counted by `name` in `phase`. */
const temporalCpuPer = (phase: string, name: string) => (r: Record<string, PhaseResult>) => {
  const p = r[phase];
  const n = p?.figures[name];
  return p && n ? (p.cpu.temporal ?? 0) / n : undefined;
};

/** The both-role (or bridge) child's CPU seconds per unit counted by `name` in `phase`. */
const processCpuPer = (phase: string, name: string) => (r: Record<string, PhaseResult>) => {
  const p = r[phase];
  const n = p?.figures[name];
  return p && n ? (p.cpu.bridge ?? 0) / n : undefined;
};

/** CPU seconds of process `proc` per unit counted by `name` in `phase`. */
const cpuPer = (phase: string, proc: string, name: string) => (r: Record<string, PhaseResult>) => {
  const p = r[phase];
  const n = p?.figures[name];
  return p && n && p.cpu[proc] !== undefined ? p.cpu[proc] / n : undefined;
};

/** The open-loop phase of the knee's rate in one rep. */
const kneePhase = (r: Record<string, PhaseResult>) => {
  const knee = r['open-5']?.figures.knee;
  return knee ? `open-${knee}` : undefined;
};

function stat(
  values: number[],
  unit = '',
  digits?: number,
): { text: string; median?: number; min?: number; values: number[] } {
  if (values.length === 0) return { text: 'not run', values };
  const m = median(values);
  const lo = Math.min(...values);
  return {
    text: values.length > 1 ? `${fmt(m, digits)}${unit} (min ${fmt(lo, digits)})` : `${fmt(m, digits)}${unit}`,
    median: m,
    min: lo,
    values,
  };
}

function ratio(
  run: KindRun,
  a: (r: Record<string, PhaseResult>) => number | undefined,
  b: (r: Record<string, PhaseResult>) => number | undefined,
  behind: (ma: number, mb: number) => string,
) {
  const values = perRatio(run, a, b);
  const s = stat(values, '', 2);
  if (values.length === 0) return s;
  const ma = median(run.reps.map(a).filter((x): x is number => x !== undefined));
  const mbv = median(run.reps.map(b).filter((x): x is number => x !== undefined));
  return { ...s, text: `${s.text}: ${behind(ma, mbv)}` };
}

export function figures(runs: KindRun[]): Figure[] {
  const rows: { name: string; target: string; cell(run: KindRun): Figure['cells'][string] }[] = [
    {
      name: 'bare signalWithStart, no worker polling (starts/s)',
      target: 'the ceiling',
      cell: (run) => stat(per(run, 'bare', 'callsPerSecond'), '/s'),
    },
    {
      name: 'raw signalWithStart loop, worker running (calls/s)',
      target: '—',
      cell: (run) => ({
        ...stat(per(run, 'raw', 'callsPerSecond'), '/s'),
        text: `${stat(per(run, 'raw', 'callsPerSecond'), '/s').text} at ${run.concurrency} in flight`,
      }),
    },
    {
      name: 'orders shipped/s, backlog → shipped rows ÷ bare',
      target: '≥ 0.5 (dev), ≥ 0.4 (server)',
      cell: (run) =>
        ratio(
          run,
          fig('drain6', 'shippedPerSecond'),
          fig('bare', 'callsPerSecond'),
          (a, b) => `${fmt(a)} ÷ ${fmt(b)} /s`,
        ),
    },
    {
      name: 'orders closed/s, backlog → runs closed (whole life) ÷ bare',
      target: '—',
      cell: (run) =>
        ratio(run, fig('life', 'closedPerSecond'), fig('bare', 'callsPerSecond'), (a, b) => `${fmt(a)} ÷ ${fmt(b)} /s`),
    },
    {
      name: 'Temporal CPU per order, whole life (start → shipped → closed) ÷ per bare start',
      target: '≤ 2.5',
      cell: (run) =>
        ratio(
          run,
          temporalCpuPer('life', 'orders'),
          temporalCpuPer('bare', 'calls'),
          (a, b) => `${fmt(a * 1000)} ÷ ${fmt(b * 1000)} ms`,
        ),
    },
    {
      name: 'Temporal CPU per order with a 1 s linger ÷ at the default linger',
      target: "— (the linger's cost)",
      cell: (run) =>
        ratio(
          run,
          temporalCpuPer('linger', 'orders'),
          temporalCpuPer('life', 'orders'),
          (a, b) => `${fmt(a * 1000)} ÷ ${fmt(b * 1000)} ms`,
        ),
    },
    {
      name: 'eager start (bridge and worker in one process): orders closed/s ÷ separate processes',
      target: '—',
      cell: (run) =>
        ratio(
          run,
          fig('eager', 'closedPerSecond'),
          fig('life', 'closedPerSecond'),
          (a, b) => `${fmt(a)} ÷ ${fmt(b)} /s`,
        ),
    },
    {
      name: 'eager start: Temporal CPU per order, whole life ÷ per bare start',
      target: '—',
      cell: (run) =>
        ratio(
          run,
          temporalCpuPer('eager', 'orders'),
          temporalCpuPer('bare', 'calls'),
          (a, b) => `${fmt(a * 1000)} ÷ ${fmt(b * 1000)} ms`,
        ),
    },
    {
      name: "a late event (its run closed, recorded through the store): Temporal CPU ÷ an order's, eager whole life",
      target: 'far below 1',
      cell: (run) =>
        ratio(
          run,
          temporalCpuPer('late', 'lateEvents'),
          temporalCpuPer('eager', 'orders'),
          (a, b) => `${fmt(a * 1000)} ÷ ${fmt(b * 1000)} ms`,
        ),
    },
    {
      name: "a late event: the service process's CPU ÷ an order's (both roles, eager)",
      target: 'far below 1',
      cell: (run) =>
        ratio(
          run,
          processCpuPer('late', 'lateEvents'),
          processCpuPer('eager', 'orders'),
          (a, b) => `${fmt(a * 1000)} ÷ ${fmt(b * 1000)} ms`,
        ),
    },
    {
      name: 'history events of an order after its late cancellation (no run reopened)',
      target: "= eager's",
      cell: (run) => stat(per(run, 'late', 'historyEventsAfter'), '', 0),
    },
    {
      name: 'warehouse down (first rep): orders the outage held as failed, of those that arrived during it at 5/s',
      target: '0',
      cell: (run) => {
        const f = run.reps[0]?.outage?.figures;
        return f
          ? {
              text: `${fmt(f.failedByOutage!, 0)} of ${fmt(f.ordersDuringOutage!, 0)} (outage ${fmt(f.outageSeconds!, 0)} s, ${fmt(f.outageSeconds! / f.retryBudgetSeconds!, 1)} × an order's retry budget)`,
              median: f.failedByOutage,
            }
          : { text: 'not run' };
      },
    },
    {
      name: "warehouse down: shipment requests it received per second (per worker ≤ 1 per breaker half-open period, after the breaker's failures)",
      target: 'bounded, not O(orders)',
      cell: (run) => {
        const f = run.reps[0]?.outage?.figures;
        return f
          ? {
              text: `${fmt(f.requestsPerSecondWhileDown!)} /s (${fmt(f.requestsWhileDown!, 0)} requests)`,
              median: f.requestsPerSecondWhileDown,
            }
          : { text: 'not run' };
      },
    },
    {
      name: 'warehouse back: every order shipped after (s), and the peak requests in one second',
      target: 'by itself, paced',
      cell: (run) => {
        const f = run.reps[0]?.outage?.figures;
        return f
          ? {
              text: `${fmt(f.recoverySeconds!)} s, peak ${fmt(f.recoveryPeakPerSecond!, 0)} /s`,
              median: f.recoverySeconds,
            }
          : { text: 'not run' };
      },
    },
    {
      name: 'Kafka leader SIGKILLed (first rep, STACK_KAFKA=cluster) at 10 orders/s: produce→shipped p50 / p99 before, around (15 s after the kill) and after',
      target: 'stated',
      cell: (run) => {
        const f = run.reps[0]?.failover?.figures;
        return f
          ? {
              text: `${fmt(f.p50Before!, 0)} / ${fmt(f.p99Before!, 0)} → ${fmt(f.p50Around!, 0)} / ${fmt(f.p99Around!, 0)} → ${fmt(f.p50After!, 0)} / ${fmt(f.p99After!, 0)} ms`,
              median: f.p99Around,
            }
          : { text: 'not run (STACK_KAFKA=cluster)' };
      },
    },
    {
      name: 'Kafka leader SIGKILLed: the stall (kill → the first order that arrived after it shipped), the election, the catch-up (every order within 2 × the p99 before)',
      target: 'stated',
      cell: (run) => {
        const f = run.reps[0]?.failover?.figures;
        return f
          ? {
              text: `stall ${fmt(f.stallSeconds!)} s, election ${fmt(f.electionSeconds!)} s, caught up ${fmt(f.catchUpSeconds!)} s after the kill`,
              median: f.catchUpSeconds,
            }
          : { text: 'not run (STACK_KAFKA=cluster)' };
      },
    },
    {
      name: 'open loop (the service as production runs it, orders at a steady rate): the knee — the highest rate whose p99 produce→shipped stays ≤ 500 ms and does not grow through the run',
      target: '≥ 70/s',
      cell: (run) => stat(per(run, 'open-5', 'knee'), '/s', 0),
    },
    {
      name: 'open loop: p99 produce→shipped at 80 % of the knee',
      target: '≤ 300 ms',
      cell: (run) => stat(per(run, 'open-knee80', 'p99'), ' ms', 0),
    },
    {
      name: "open loop: the service process's CPU per order at 35/s (at the knee when that is lower) ÷ a bare start's client CPU",
      target: '≤ 8 ms per order',
      cell: (run) => {
        const at = (r: Record<string, PhaseResult>) => (r['open-35'] ? 'open-35' : kneePhase(r));
        const rates =
          [...new Set(run.reps.map((r) => at(r)).filter((p): p is string => p !== undefined))]
            .join(', ')
            .replaceAll('open-', '') || '–';
        const s = ratio(
          run,
          (r) => {
            const p = at(r);
            return p ? cpuPer(p, 'service', 'orders')(r) : undefined;
          },
          cpuPer('bare', 'bench', 'calls'),
          (a, b) => `${fmt(a * 1000)} ÷ ${fmt(b * 1000)} ms`,
        );
        return { ...s, text: `${s.text} (at ${rates}/s)` };
      },
    },
    {
      name: "open loop: the idle service's CPU (its pollers and timers, no order arriving)",
      target: '—',
      cell: (run) =>
        stat(
          run.reps
            .map((r) => r['open-idle'])
            .filter((p): p is PhaseResult => p !== undefined)
            .map((p) => ((p.cpu.service ?? 0) / p.wallSeconds) * 100),
          ' % of a core',
          1,
        ),
    },
    {
      name: 'open loop: Temporal CPU per order at the knee ÷ per bare start',
      target: '—',
      cell: (run) =>
        ratio(
          run,
          (r) => {
            const k = kneePhase(r);
            return k ? cpuPer(k, 'temporal', 'orders')(r) : undefined;
          },
          temporalCpuPer('bare', 'calls'),
          (a, b) => `${fmt(a * 1000)} ÷ ${fmt(b * 1000)} ms`,
        ),
    },
    {
      name: 'history events per shipped order, whole life (closed)',
      target: '≤ 10',
      cell: (run) => stat(per(run, 'life', 'historyEvents'), '', 0),
    },
    {
      name: 'history events per shipped order with a 1 s linger (closed)',
      target: '—',
      cell: (run) => stat(per(run, 'linger', 'historyEvents'), '', 0),
    },
    {
      name: 'bridge drain, 6 partitions ÷ raw loop',
      target: '≥ 0.95',
      cell: (run) =>
        ratio(
          run,
          fig('drain6', 'recordsPerSecond'),
          fig('raw', 'callsPerSecond'),
          (a, b) => `${fmt(a)} ÷ ${fmt(b)} /s`,
        ),
    },
    {
      name: '1 partition ÷ 6 partitions (delivery)',
      target: '≥ 0.9',
      cell: (run) =>
        ratio(
          run,
          fig('drain1', 'recordsPerSecond'),
          fig('drain6', 'recordsPerSecond'),
          (a, b) => `${fmt(a)} ÷ ${fmt(b)} /s`,
        ),
    },
    {
      name: '10 % duplicate records ÷ none (records/s delivered)',
      target: '≥ 0.95',
      cell: (run) =>
        ratio(
          run,
          fig('dup', 'recordsPerSecond'),
          fig('drain6', 'recordsPerSecond'),
          (a, b) => `${fmt(a)} ÷ ${fmt(b)} /s`,
        ),
    },
    {
      name: 'retry storm on one order: its 6,000 events accounted for (events/s)',
      target: "≥ 5× today's",
      cell: (run) => stat(per(run, 'burst', 'burstEventsPerSecond'), '/s'),
    },
    {
      name: 'orders behind the storm on its partition ÷ on the others (last shipped)',
      target: '≤ 2',
      cell: (run) =>
        ratio(
          run,
          fig('burst', 'othersOnBurstPartitionSeconds'),
          fig('burst', 'othersElsewhereSeconds'),
          (a, b) => `${fmt(a)} ÷ ${fmt(b)} s`,
        ),
    },
    {
      name: 'orders behind the storm on its partition ÷ on the others (median shipped)',
      target: '≤ 2',
      cell: (run) =>
        ratio(
          run,
          fig('burst', 'othersOnBurstPartitionMedianSeconds'),
          fig('burst', 'othersElsewhereMedianSeconds'),
          (a, b) => `${fmt(a)} ÷ ${fmt(b)} s`,
        ),
    },
    {
      name: 'worker RSS per cached run / peak while shipping the backlog',
      target: 'measured, bounded by WORKER_MAX_CACHED_WORKFLOWS',
      cell: (run) => {
        const perRun = per(run, 'cache', 'workerRssPerRun');
        const peak = per(run, 'drain6', 'workerWorkPeakRss');
        const cached = run.reps[0]?.cache?.figures.runs;
        const left = perRun.length
          ? `${fmt(median(perRun) / 1024, 0)} KB per run (${fmt(cached ?? 0, 0)} cached)`
          : 'not run';
        const right = peak.length
          ? `${mb(median(peak))} shipping ${fmt(run.reps[0]?.drain6?.figures.orders ?? 0, 0)} orders`
          : 'not run';
        return { text: `${left} / ${right}`, median: perRun.length ? median(perRun) : undefined, values: perRun };
      },
    },
    {
      name: 'plain transactional consumer (records/s)',
      target: '—',
      cell: (run) => stat(per(run, 'plain', 'recordsPerSecond'), '/s'),
    },
    {
      name: 'orders shipped/s ÷ plain consumer',
      target: '—',
      cell: (run) =>
        ratio(
          run,
          fig('drain6', 'shippedPerSecond'),
          fig('plain', 'recordsPerSecond'),
          (a, b) => `${fmt(a)} ÷ ${fmt(b)} /s`,
        ),
    },
    {
      name: 'bridge peak RSS (VmHWM), drain backlog / memory backlog',
      target: '< 120 MB at 100,000',
      cell: (run) => {
        const drain = per(run, 'drain6', 'bridgePeakRss');
        const m = run.memory;
        const left = drain.length
          ? `${mb(median(drain))} at ${fmt(run.reps[0]?.drain6?.figures.records ?? 0, 0)}`
          : 'not run';
        const right = m
          ? `${mb(m.figures.bridgePeakRss!)} at ${fmt(m.figures.records!, 0)} (${mb(m.figures.bridgeWorkPeakRss!)} while draining, ${mb(m.figures.bridgeRssBefore!)} before consuming; ${fmt(m.figures.recordsPerSecond!)} records/s)`
          : 'no --memory run';
        return { text: `${left} / ${right}`, median: m?.figures.bridgePeakRss, values: drain };
      },
    },
  ];
  return rows.map((r) => ({
    name: r.name,
    target: r.target,
    cells: Object.fromEntries(runs.map((run) => [run.kind, r.cell(run)])),
  }));
}

const PROCESSES = ['temporal', 'kafka', 'postgres', 'worker', 'bridge', 'service', 'warehouse', 'bench'];

/** Per phase (median over reps): wall time, load, and each process's CPU as a share of one core. */
export function cpuRows(run: KindRun): string[][] {
  const phases = [...new Set(run.reps.flatMap((r) => Object.keys(r))), ...(run.memory ? ['memory'] : [])];
  return phases.map((phase) => {
    const results =
      phase === 'memory'
        ? [run.memory!]
        : run.reps.map((r) => r[phase]).filter((p): p is PhaseResult => p !== undefined);
    const wall = median(results.map((p) => p.wallSeconds));
    const load = results.map((p) => p.load1After);
    const cells = PROCESSES.map((proc) => {
      const shares = results.filter((p) => p.cpu[proc] !== undefined).map((p) => (p.cpu[proc]! / p.wallSeconds) * 100);
      return shares.length ? `${fmt(median(shares), 0)} %` : '–';
    });
    return [
      run.kind,
      phase,
      `${fmt(wall, 1)} s`,
      `${fmt(Math.min(...load), 1)}–${fmt(Math.max(...load), 1)}`,
      ...cells,
    ];
  });
}

/** The open loop per rate (median over reps): latency produce→shipped and CPU per order of each process. */
export function openRows(run: KindRun): string[][] {
  const phases = [
    ...new Set(run.reps.flatMap((r) => Object.keys(r)).filter((p) => p.startsWith('open-') && p !== 'open-idle')),
  ];
  const rate = (p: string) =>
    median(run.reps.map((r) => r[p]?.figures.rate).filter((x): x is number => x !== undefined));
  phases.sort((a, b) => rate(a) - rate(b) || a.localeCompare(b));
  return phases.map((phase) => {
    const results = run.reps.map((r) => r[phase]).filter((p): p is PhaseResult => p !== undefined);
    const m = (f: (p: PhaseResult) => number) => median(results.map(f));
    const ms = (f: (p: PhaseResult) => number) => fmt(m(f), 0);
    const perOrder = (proc: string) => fmt(m((p) => (p.cpu[proc] ?? Number.NaN) / p.figures.orders!) * 1000, 1);
    const stack = (p: PhaseResult) =>
      ['service', 'temporal', 'postgres', 'kafka', 'warehouse'].reduce((sum, k) => sum + (p.cpu[k] ?? 0), 0) /
      p.figures.orders!;
    const kept = results.filter((p) => p.figures.keptUp === 1).length;
    // The service's CPU per order beyond what it spends idle (its pollers and timers, open-idle) over the same time.
    const aboveIdle = median(
      run.reps
        .filter((r) => r[phase] && r['open-idle'])
        .map(
          (r) =>
            ((r[phase]!.cpu.service ?? 0) -
              ((r['open-idle']!.cpu.service ?? 0) / r['open-idle']!.wallSeconds) * r[phase]!.wallSeconds) /
            r[phase]!.figures.orders!,
        ),
    );
    return [
      run.kind,
      phase === 'open-knee80' ? `${fmt(rate(phase), 0)}/s (80 % of the knee)` : `${fmt(rate(phase), 0)}/s`,
      fmt(
        m((p) => p.figures.orders!),
        0,
      ),
      `${ms((p) => p.figures.p50!)} / ${ms((p) => p.figures.p90!)} / ${ms((p) => p.figures.p99!)} / ${ms((p) => p.figures.max!)}`,
      `${ms((p) => p.figures.firstThirdP90!)} → ${ms((p) => p.figures.lastThirdP90!)}`,
      `${kept} of ${results.length}`,
      `${perOrder('service')} (${fmt(aboveIdle * 1000, 1)} above idle)`,
      perOrder('temporal'),
      perOrder('postgres'),
      perOrder('kafka'),
      fmt(m(stack) * 1000, 1),
      `${fmt(Math.min(...results.map((p) => p.load1After)), 1)}–${fmt(Math.max(...results.map((p) => p.load1After)), 1)}`,
    ];
  });
}

export function render(runs: KindRun[], opts: { markdown: boolean; machine: string }): string {
  const figs = figures(runs);
  const header = ['figure', ...runs.map((r) => `${r.kind}: ${r.runs}`), 'target'];
  const rows = figs.map((f) => [f.name, ...runs.map((r) => f.cells[r.kind]!.text), f.target]);
  const cpuHeader = ['temporal', 'phase', 'wall', 'load 1 min', ...PROCESSES.map((p) => `${p} CPU`)];
  const cpu = runs.flatMap(cpuRows);
  const openHeader = [
    'temporal',
    'rate',
    'orders',
    'p50 / p90 / p99 / max ms',
    'p90 first → last third',
    'kept up',
    'service ms CPU/order',
    'Temporal',
    'PostgreSQL',
    'Kafka',
    'stack total',
    'load 1 min',
  ];
  const open = runs.flatMap(openRows);
  const reconcile = runs.flatMap(reconcileRows);
  const openTitle =
    'Open loop: the service as production runs it, orders produced at a steady rate, produce → shipped (median over reps); CPU in ms per order:';
  if (opts.markdown) {
    const md = (h: string[], rs: string[][]) =>
      [`| ${h.join(' | ')} |`, `|${h.map(() => '---').join('|')}|`, ...rs.map((r) => `| ${r.join(' | ')} |`)].join(
        '\n',
      );
    const openPart = open.length ? [openTitle, '', md(openHeader, open), ''] : [];
    const reconcilePart = reconcile.length ? [RECONCILE_TITLE, '', md(RECONCILE_HEADER, reconcile), ''] : [];
    return [
      `${opts.machine}`,
      '',
      md(header, rows),
      '',
      ...openPart,
      ...reconcilePart,
      'CPU per process, % of one core (median over reps), and the 1-minute load at the end of each phase:',
      '',
      md(cpuHeader, cpu),
      '',
    ].join('\n');
  }
  const openPart = open.length ? [openTitle, '', ...formatTable(openHeader, open), ''] : [];
  const reconcilePart = reconcile.length ? [RECONCILE_TITLE, '', ...formatTable(RECONCILE_HEADER, reconcile), ''] : [];
  return [
    opts.machine,
    '',
    ...formatTable(header, rows),
    '',
    ...openPart,
    ...reconcilePart,
    'CPU per process, % of one core (median over reps); load: 1-minute load at the end of each phase',
    '',
    ...formatTable(cpuHeader, cpu),
    '',
  ].join('\n');
}
