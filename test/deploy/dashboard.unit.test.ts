/**
 * deploy/grafana/fulfilment-dashboard.json and deploy/prometheus/rules.yml use only metrics that exist: every metric
 * name in their PromQL is one the service (createMetrics, with prom-client's default metrics under its prefix) or
 * the lag exporter (createLagMetrics) registers; a histogram's series are its _bucket, _sum and _count; a series
 * rules.yml records is known to the rules after it. The bridge's per-tenant gauges (ANNOUNCED) are used before the
 * service registers them: allowed while it does not, and once it does, they must be the gauges with the labels the
 * rules and the dashboard were written against. No stack.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createLagMetrics } from '../../src/roles/lag/exporter.js';
import { createMetrics } from '../../src/base/metrics.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** PromQL functions, aggregations and keywords: identifiers that are not metric names. */
const PROMQL_WORDS = new Set(
  `sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio
   by without on ignoring group_left group_right bool and or unless offset
   rate irate increase delta idelta deriv changes resets predict_linear histogram_quantile label_values label_replace
   label_join abs absent absent_over_time ceil floor round clamp clamp_max clamp_min exp ln log2 log10 sqrt time
   timestamp vector scalar sort sort_desc avg_over_time min_over_time max_over_time sum_over_time count_over_time
   last_over_time quantile_over_time stddev_over_time present_over_time day_of_month day_of_week hour minute month
   year days_in_month inf nan`.split(/\s+/),
);

/** Metric names in a PromQL expression (Grafana variables and label matchers, strings and ranges left out). */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""') // strings
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges and subqueries
    .replace(/\$\{?\w+\}?/g, ' ') // Grafana variables
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' '); // label lists
  const names = new Set<string>();
  for (const m of stripped.matchAll(/(?<![\w.:])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()/g)) {
    const word = m[1]!;
    if (PROMQL_WORDS.has(word.toLowerCase()) || /^\d/.test(word)) continue;
    // `1m`, `5e3` and the like are numbers and durations, caught by the lookbehind and the digit test above.
    names.add(word);
  }
  return [...names];
}

/**
 * Metrics the bridge is to export per tenant (the tenant's oldest record not yet handed over to Temporal, and its
 * hand-overs in flight; docs/operating.md "One tenant starved while others flow"): name → type and labels.
 */
const ANNOUNCED: Record<string, { type: string; labels: string[] }> = {
  fulfilment_tenant_oldest_waiting_seconds: { type: 'gauge', labels: ['tenant'] },
  fulfilment_tenant_deliveries_in_flight: { type: 'gauge', labels: ['tenant'] },
};

/** The service's and the lag exporter's registries, as the processes make them. */
const registries = () => [
  createMetrics({ defaultMetrics: true }).registry,
  createLagMetrics({ defaultMetrics: true }).registry,
];

/** Every series name the service's and the lag exporter's registries expose, and the announced ones. */
async function knownNames(): Promise<Set<string>> {
  const known = new Set<string>(Object.keys(ANNOUNCED));
  for (const registry of registries()) {
    for (const m of await registry.getMetricsAsJSON()) {
      known.add(m.name);
      if (String(m.type) === 'histogram')
        for (const suffix of ['_bucket', '_sum', '_count']) known.add(`${m.name}${suffix}`);
      if (String(m.type) === 'summary') for (const suffix of ['_sum', '_count']) known.add(`${m.name}${suffix}`);
    }
  }
  return known;
}

interface Panel {
  title?: string;
  type?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

const dashboard = JSON.parse(readFileSync(join(root, 'deploy/grafana/fulfilment-dashboard.json'), 'utf8')) as {
  panels: Panel[];
  templating?: { list: { name: string; query?: string | { query?: string } }[] };
};
const rules = parse(readFileSync(join(root, 'deploy/prometheus/rules.yml'), 'utf8')) as {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
};

const panels = (ps: Panel[]): Panel[] => ps.flatMap((p) => [p, ...panels(p.panels ?? [])]);
const dashboardQueries = [
  ...panels(dashboard.panels).flatMap((p) =>
    (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr ?? '' })),
  ),
  ...(dashboard.templating?.list ?? []).flatMap((v) => {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    return q && /label_values|query_result/.test(q)
      ? [{ where: `variable $${v.name}`, expr: q.replace(/^label_values\((.*),\s*\w+\)$/, '$1') }]
      : [];
  }),
];

describe('metric names in the dashboard and the alert rules', () => {
  it('finds metric names in PromQL, and only those', () => {
    expect(
      metricNames('histogram_quantile(0.95, sum by (le) (rate(fulfilment_x_bucket{type=~"$t"}[$__rate_interval])))'),
    ).toEqual(['fulfilment_x_bucket']);
    expect(metricNames('(sum(increase(a_total{outcome="dead-lettered"}[10m])) or vector(0)) + b > 0')).toEqual([
      'a_total',
      'b',
    ]);
    expect(metricNames('time() - max(last_ts) > 120 or absent(last_ts)')).toEqual(['last_ts']);
    expect(metricNames('max by (group, topic) (age) > 300')).toEqual(['age']);
  });

  it('has panels with queries, every query naming at least one metric', () => {
    expect(dashboardQueries.length).toBeGreaterThan(10);
    for (const q of dashboardQueries) expect(metricNames(q.expr), `${q.where}: ${q.expr}`).not.toEqual([]);
  });

  it('uses only metrics the service or the lag exporter exports (dashboard)', async () => {
    const known = await knownNames();
    const unknown = dashboardQueries.flatMap((q) =>
      metricNames(q.expr)
        .filter((n) => !known.has(n))
        .map((n) => `${q.where}: ${n}`),
    );
    expect(unknown).toEqual([]);
  });

  it('uses only metrics the service or the lag exporter exports (alert rules), and alerts on the exporter age', async () => {
    const all = rules.groups.flatMap((g) => g.rules);
    const known = new Set([...(await knownNames()), ...all.flatMap((r) => (r.record ? [r.record] : []))]);
    const unknown = all.flatMap((r) =>
      metricNames(r.expr)
        .filter((n) => !known.has(n))
        .map((n) => `${r.alert ?? r.record}: ${n}`),
    );
    expect(unknown).toEqual([]);
    expect(all.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        'FulfilmentConsumerBehind',
        'FulfilmentConsumerStalled',
        'FulfilmentDeadLetters',
        'FulfilmentCircuitOpen',
        'FulfilmentOrdersHeldFailed',
      ]),
    );
    expect(all.find((r) => r.alert === 'FulfilmentConsumerBehind')?.expr).toContain(
      'fulfilment_consumer_lag_oldest_age_seconds',
    );
  });

  it('expects the announced per-tenant metrics as the service registers them, once it does', async () => {
    for (const [name, want] of Object.entries(ANNOUNCED)) {
      const metric = registries()
        .map((r) => r.getSingleMetric(name))
        .find((m) => m !== undefined);
      if (!metric) continue;
      const { type } = (await metric.get()) as { type: unknown };
      const labels = (metric as unknown as { labelNames?: string[] }).labelNames ?? [];
      expect({ type: String(type), labels }, name).toEqual(want);
    }
  });
});
