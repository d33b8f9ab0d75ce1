/**
 * The lag exporter (`fulfilment lag-exporter`): polls src/roles/lag/consumer-lag.ts every LAG_EXPORTER_INTERVAL_MS and serves
 * the result as Prometheus metrics on LAG_EXPORTER_PORT (/metrics, with /livez and /readyz as the service has). It is
 * its own process and needs only Kafka: when every bridge is stopped it keeps reporting, and the oldest record's age
 * keeps growing — computed at scrape time from the record's timestamp, not frozen at the last poll.
 *
 * Ready once a poll has succeeded, and while the last success is at most three intervals old.
 */
import type { Server } from 'node:http';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { Health } from '../../base/health.js';
import type { Logger } from '../../base/log.js';
import { serveMetrics } from '../../base/observability.js';
import { connectLagReader, oldestAgeSeconds, position, type LagReport } from './consumer-lag.js';
import type { Kafka } from '../../adapters/kafka/client.js';
import { sleep } from '../../base/sleep.js';

export interface LagMetrics {
  registry: Registry;
  /** Sets the series from a report; the age series follow the clock between reports. */
  update(report: LagReport): void;
  polled(result: 'ok' | 'failed'): void;
}

const partitionLabels = ['group', 'topic', 'partition'] as const;

/**
 * The exporter's registry (also what test/deploy/dashboard.unit.test.ts checks the dashboard's names against).
 * Over 80 lines: one declaration per metric, each with its help text — a list, not logic.
 */
export function createLagMetrics(opts: { defaultMetrics?: boolean } = {}): LagMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'fulfilment_process_' });
  const registers = [registry];
  let last: LagReport | undefined;
  const labels = (p: LagReport['partitions'][number]) => ({
    group: p.group,
    topic: p.topic,
    partition: String(p.partition),
  });
  const fromReport = (
    gauge: Gauge<(typeof partitionLabels)[number]>,
    value: (p: LagReport['partitions'][number]) => number | undefined,
  ) => {
    gauge.reset();
    for (const p of last?.partitions ?? []) {
      const v = value(p);
      if (v !== undefined) gauge.set(labels(p), v);
    }
  };
  new Gauge({
    name: 'fulfilment_consumer_lag_records',
    help: "Records between a consumer group's committed offset (or the log start, when it has none) and the partition's end offset, read from the brokers by the lag exporter.",
    labelNames: partitionLabels,
    registers,
    collect() {
      fromReport(this, (p) => Number(p.behind));
    },
  });
  new Gauge({
    name: 'fulfilment_consumer_lag_oldest_age_seconds',
    help: 'Age of the oldest record the group has not committed: now minus the timestamp of the record at the committed offset; 0 when nothing is behind. Measured from outside the consumer, so it grows while every bridge is stopped. Alert on this.',
    labelNames: partitionLabels,
    registers,
    collect() {
      const now = Date.now();
      // A partition behind whose oldest record could not be read has no age series rather than a false 0.
      fromReport(this, (p) =>
        p.behind > 0n && p.oldestTimestampMs === undefined ? undefined : oldestAgeSeconds(p, now),
      );
    },
  });
  new Gauge({
    name: 'fulfilment_consumer_committed_offset',
    help: "The offset a consumer group would consume next: its committed offset, or the log start when it has none. Its rate is the group's throughput.",
    labelNames: partitionLabels,
    registers,
    collect() {
      fromReport(this, (p) => Number(position(p)));
    },
  });
  new Gauge({
    name: 'fulfilment_topic_end_offset',
    help: "The partition's end offset (high watermark). Its rate is the rate records are written.",
    labelNames: ['topic', 'partition'],
    registers,
    collect() {
      this.reset();
      for (const p of last?.partitions ?? [])
        this.set({ topic: p.topic, partition: String(p.partition) }, Number(p.end));
    },
  });
  const lastPoll = new Gauge({
    name: 'fulfilment_lag_exporter_last_success_timestamp_seconds',
    help: 'When the lag exporter last read the offsets successfully (Unix time).',
    registers,
  });
  const polls = new Counter({
    name: 'fulfilment_lag_exporter_polls_total',
    help: 'Polls of the lag exporter by result (ok, failed).',
    labelNames: ['result'],
    registers,
  });
  return {
    registry,
    update(report) {
      last = report;
      lastPoll.set(report.at.getTime() / 1000);
    },
    polled: (result) => polls.inc({ result }),
  };
}

export interface LagExporterOptions {
  kafka: Kafka;
  groups: string[];
  topic: string;
  port: number;
  host: string;
  intervalMs: number;
  logger: Logger;
}

export interface LagExporter {
  metrics: LagMetrics;
  /** The port it listens on (the one asked for, or the one given when 0 was asked for). */
  port: number;
  /** Resolves when the poll in flight, or else the next one, has finished. */
  nextPoll(): Promise<void>;
  stop(): Promise<void>;
}

export async function startLagExporter(opts: LagExporterOptions): Promise<LagExporter> {
  const metrics = createLagMetrics({ defaultMetrics: true });
  const health = new Health();
  health.startingUp('waiting for the first poll of the offsets');
  let lastSuccess = 0;
  let lastError: string | undefined;
  health.set('kafka', () => {
    const age = Date.now() - lastSuccess;
    if (age <= 3 * opts.intervalMs + 5_000) return { ok: true };
    return {
      ok: false,
      reason: `the last successful poll of the offsets was ${Math.round(age / 1000)} s ago${lastError ? `: ${lastError}` : ''}`,
    };
  });
  const server: Server = await serveMetrics(metrics.registry, opts.port, opts.host, health);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  const stopping = new AbortController();
  let waiters: (() => void)[] = [];
  let reader: Awaited<ReturnType<typeof connectLagReader>> | undefined;

  const pollOnce = async () => {
    try {
      reader ??= await connectLagReader(opts.kafka, {
        clientId: 'fulfilment-lag-exporter',
        readTimeoutMs: Math.max(10_000, opts.intervalMs),
      });
      const report = await reader.measure(opts.groups, opts.topic, stopping.signal);
      metrics.update(report);
      metrics.polled('ok');
      lastSuccess = Date.now();
      lastError = undefined;
      health.started();
    } catch (err) {
      if (stopping.signal.aborted) return;
      metrics.polled('failed');
      lastError = (err as Error).message ?? String(err);
      opts.logger.warn(
        { err: lastError, groups: opts.groups, topic: opts.topic },
        'lag poll failed; trying again next interval',
      );
      const broken = reader;
      reader = undefined;
      await broken?.close().catch(() => undefined);
    }
  };
  const loop: Promise<void> = (async () => {
    while (!stopping.signal.aborted) {
      await pollOnce();
      const woken = waiters;
      waiters = [];
      for (const w of woken) w();
      if (stopping.signal.aborted) break;
      await sleep(opts.intervalMs, stopping.signal);
    }
  })();
  opts.logger.info(
    { port, groups: opts.groups, topic: opts.topic, intervalMs: opts.intervalMs },
    'lag exporter serving /metrics',
  );
  return {
    metrics,
    port,
    nextPoll: () => new Promise<void>((resolve) => waiters.push(resolve)),
    async stop() {
      health.stopping('stopped');
      stopping.abort();
      await loop;
      for (const w of waiters) w();
      await reader?.close().catch(() => undefined);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
