/**
 * Lag measured from outside the consumer, on the real stack: a group whose bridge committed offsets and then
 * stopped, records produced behind it. `fulfilment lag` and the lag exporter count exactly what is behind and see
 * the oldest record's age grow while no bridge runs; once a bridge drains the backlog both read 0. The in-process
 * metrics are asserted for what they cover: the processing-delay histogram for the applied events, the bridge's
 * age gauge reading 0 after a drain, and growing for a record it fetched and cannot finish.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import type { LagRow } from '../../src/cli/lag/lag.js';
import { startLagExporter, type LagExporter } from '../../src/roles/lag/exporter.js';
import { caughtUp, counter, events, logger, scenario, waitFor, type Scenario } from '../support/harness.js';

interface LagJson {
  at: string;
  topic: string;
  groups: string[];
  partitions: LagRow[];
}

/** One sample of `name` with exactly these labels in a Prometheus text exposition; undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if ((m[2] ?? '').split(',').filter(Boolean).sort().join(',') === want) return Number(m[3]);
  }
  return undefined;
}

describe('lag from outside the consumer', () => {
  let s: Scenario;
  let exporter: LagExporter | undefined;
  const apps: App[] = [];
  /** Times the backlog's records were written "at" (record timestamps), per partition, oldest first. */
  const base = Date.now();
  const stamps = { 0: [base - 120_000, base - 90_000, base - 60_000], 1: [base - 100_000, base - 95_000] } as const;

  const lag = async (table = false): Promise<{ json: LagJson; text: string }> => {
    const out = memoryOutput();
    const code = await runCli(['lag', ...(table ? [] : ['--json'])], { out, config: s.config });
    expect(code, out.stderr).toBe(0);
    return { json: table ? (undefined as unknown as LagJson) : (JSON.parse(out.stdout) as LagJson), text: out.stdout };
  };
  const row = (j: LagJson, partition: number) => j.partitions.find((p) => p.partition === partition)!;
  const scrape = async () => (await fetch(`http://127.0.0.1:${exporter!.port}/metrics`)).text();

  beforeAll(async () => {
    s = await scenario('lag');
  });
  afterAll(async () => {
    await exporter?.stop();
    for (const app of apps.reverse()) await app.stop();
    await s?.close();
  });

  it('counts what is behind exactly and sees the oldest record age while every bridge is stopped', async () => {
    const tenant = s.tenant();
    // A bridge consumes and commits one order per partition, then stops: the group has offsets and no member.
    const first = await s.startInstance();
    apps.push(first);
    await s.produce(
      [0, 1, 2].map((partition) => ({
        partition,
        key: `warm-${partition}`,
        value: events.placed(tenant, `warm-${partition}`),
      })),
    );
    await waitFor('the group to commit every partition', () =>
      caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
    );
    await first.stop();
    apps.pop();

    for (const [partition, times] of Object.entries(stamps)) {
      await s.producer.send({
        topic: s.config.ORDERS_TOPIC,
        acks: -1,
        messages: times.map((t, i) => ({
          partition: Number(partition),
          key: `late-${partition}-${i}`,
          timestamp: String(t),
          value: JSON.stringify(
            events.placed(tenant, `late-${partition}-${i}`, { occurredAt: new Date(t).toISOString() }),
          ),
        })),
      });
    }

    const one = (await lag()).json;
    expect(one.groups).toEqual([s.config.CONSUMER_GROUP]);
    expect(one.partitions.map((p) => [p.partition, p.committed, p.end, p.behind])).toEqual([
      [0, '1', '4', 3],
      [1, '1', '3', 2],
      [2, '1', '1', 0],
    ]);
    // The oldest uncommitted record is the one at the committed offset: its own timestamp, not the newest's.
    expect(row(one, 0).oldestTimestamp).toBe(new Date(stamps[0][0]).toISOString());
    expect(row(one, 1).oldestTimestamp).toBe(new Date(stamps[1][0]).toISOString());
    expect(row(one, 0).oldestAgeSeconds).toBeGreaterThanOrEqual(120);
    expect(row(one, 1).oldestAgeSeconds).toBeGreaterThanOrEqual(100);
    expect(row(one, 2)).toMatchObject({ behind: 0, oldestAgeSeconds: 0, oldestTimestamp: null });

    // Nothing consumes: the age grows from one read to the next, and the counts stay exact.
    const two = await waitFor('a second read to see an older oldest record', async () => {
      const j = (await lag()).json;
      return row(j, 0).oldestAgeSeconds! > row(one, 0).oldestAgeSeconds! ? j : undefined;
    });
    expect(two.partitions.map((p) => p.behind)).toEqual([3, 2, 0]);
    expect(row(two, 1).oldestAgeSeconds).toBeGreaterThan(row(one, 1).oldestAgeSeconds!);
    const grewBy = row(two, 0).oldestAgeSeconds! - row(one, 0).oldestAgeSeconds!;
    expect(grewBy).toBeCloseTo((Date.parse(two.at) - Date.parse(one.at)) / 1000, 0);
    // The table, as an operator sees it: two reads, the age growing.
    const tableOne = (await lag(true)).text;
    const tableOneAge = row((await lag()).json, 0).oldestAgeSeconds!;
    await waitFor(
      'the age to grow by a second',
      async () => row((await lag()).json, 0).oldestAgeSeconds! >= tableOneAge + 1,
    );
    process.stdout.write(
      `fulfilment lag (every bridge stopped), read 1:\n${tableOne}read 2:\n${(await lag(true)).text}`,
    );

    // The exporter serves the same, and its age follows the clock between polls.
    exporter = await startLagExporter({
      kafka: s.kafka,
      groups: [s.config.CONSUMER_GROUP],
      topic: s.config.ORDERS_TOPIC,
      port: 0,
      host: '127.0.0.1',
      intervalMs: 1000,
      logger,
    });
    await waitFor(
      'the exporter to be ready',
      async () => (await fetch(`http://127.0.0.1:${exporter!.port}/readyz`)).ok,
    );
    const labels = (partition: number) => ({
      group: s.config.CONSUMER_GROUP,
      topic: s.config.ORDERS_TOPIC,
      partition: String(partition),
    });
    const m1 = await scrape();
    expect([0, 1, 2].map((p) => sample(m1, 'fulfilment_consumer_lag_records', labels(p)))).toEqual([3, 2, 0]);
    expect([0, 1, 2].map((p) => sample(m1, 'fulfilment_consumer_committed_offset', labels(p)))).toEqual([1, 1, 1]);
    const age1 = sample(m1, 'fulfilment_consumer_lag_oldest_age_seconds', labels(0))!;
    expect(age1).toBeGreaterThanOrEqual(120);
    expect(sample(m1, 'fulfilment_consumer_lag_oldest_age_seconds', labels(2))).toBe(0);
    await waitFor(
      'the exported age to grow',
      async () => sample(await scrape(), 'fulfilment_consumer_lag_oldest_age_seconds', labels(0))! > age1,
    );
  });

  it('reads 0 behind and age 0 once a bridge drains the backlog; the in-process metrics say what they cover', async () => {
    const drain = await s.startInstance();
    apps.push(drain);
    await waitFor('the bridge to drain the backlog', () =>
      caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
    );

    const after = (await lag()).json;
    expect(after.partitions.map((p) => [p.partition, p.committed, p.end, p.behind, p.oldestAgeSeconds])).toEqual([
      [0, '4', '4', 0, 0],
      [1, '3', '3', 0, 0],
      [2, '1', '1', 0, 0],
    ]);
    const labels = (partition: number) => ({
      group: s.config.CONSUMER_GROUP,
      topic: s.config.ORDERS_TOPIC,
      partition: String(partition),
    });
    await waitFor('the exporter to see the drain', async () => {
      const text = await scrape();
      return [0, 1, 2].every(
        (p) =>
          sample(text, 'fulfilment_consumer_lag_records', labels(p)) === 0 &&
          sample(text, 'fulfilment_consumer_lag_oldest_age_seconds', labels(p)) === 0,
      );
    });

    // The five late events were applied 60–300 s after their occurredAt: all in the (60, 300] buckets.
    const delay = (le: string) =>
      counter(drain, 'fulfilment_event_processing_delay_seconds', { le, type: 'orders.OrderPlaced' });
    await waitFor(
      'the worker to apply the five late events',
      async () => (await counter(drain, 'fulfilment_events_processed_total', { outcome: 'applied' })) >= 5,
    );
    const histogram = (await drain.metrics.registry.getSingleMetric('fulfilment_event_processing_delay_seconds')!.get())
      .values;
    const count = histogram.find(
      (v) => (v as { metricName?: string }).metricName === 'fulfilment_event_processing_delay_seconds_count',
    )?.value;
    expect(count).toBe(5);
    expect(await delay('60')).toBe(0);
    expect(await delay('300')).toBe(5);
    // The bridge's own gauge covers only what it fetched and holds: after the drain it reads 0 on every partition.
    // (It has a series only for the partitions it fetched records of: 0 and 1, not 2, which had nothing new.)
    const published = async () =>
      (await drain.metrics.registry.getSingleMetric('fulfilment_oldest_unprocessed_message_age_seconds')!.get()).values;
    await waitFor('the in-process age gauge to publish 0 for the drained partitions', async () => {
      const values = await published();
      return (
        ['0', '1'].every((p) => values.some((v) => v.labels.partition === p)) && values.every((v) => v.value === 0)
      );
    });
    expect((await published()).map((v) => v.labels.partition).sort()).toEqual(['0', '1']);
  });

  it("the bridge's in-process age grows for a record it fetched and cannot finish, as the exporter's does", async () => {
    await Promise.all(apps.splice(0).map((a) => a.stop()));
    // A bridge whose dead-letter topic does not exist cannot finish a malformed record: it stays fetched, uncommitted.
    const stuck = await s.startInstance({}, { DLQ_TOPIC: `dlq.missing.${s.suffix}`, FULFILMENT_ROLES: 'bridge' });
    apps.push(stuck);
    const at = Date.now() - 30_000;
    await s.producer.send({
      topic: s.config.ORDERS_TOPIC,
      acks: -1,
      messages: [{ partition: 2, key: 'poison', timestamp: String(at), value: '{not json' }],
    });
    const labels = { group: s.config.CONSUMER_GROUP, topic: s.config.ORDERS_TOPIC, partition: '2' };
    const inProcess = () => counter(stuck, 'fulfilment_oldest_unprocessed_message_age_seconds', labels);
    const firstAge = await waitFor('the bridge to hold the record', async () => {
      const v = await inProcess();
      return v >= 30 ? v : undefined;
    });
    await waitFor('the in-process age to grow', async () => (await inProcess()) > firstAge);
    const j = (await lag()).json;
    expect(row(j, 2)).toMatchObject({ committed: '1', behind: 1, oldestTimestamp: new Date(at).toISOString() });
    expect(row(j, 2).oldestAgeSeconds).toBeGreaterThanOrEqual(30);
    expect(await counter(stuck, 'fulfilment_malformed_records_total')).toBe(1);
  });
});
