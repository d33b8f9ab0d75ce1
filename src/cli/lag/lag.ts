/**
 * `fulfilment lag`: per consumer group and partition, the committed offset, the end offset, the records behind and
 * the age of the oldest record not yet committed, read from the brokers (src/roles/lag/consumer-lag.ts) — a stopped bridge does
 * not stop it. `fulfilment lag-exporter` serves the same as Prometheus metrics until interrupted.
 */
import type { CliContext } from '../context.js';
import { NotFoundError } from '../cli-errors.js';
import { cliKafka } from '../kafka.js';
import { println } from '../output.js';
import { formatTable } from '../table.js';
import { connectLagReader, oldestAgeSeconds, TopicNotFound, type LagReport } from '../../roles/lag/consumer-lag.js';

export interface LagOptions {
  /** Consumer groups (default CONSUMER_GROUP). */
  groups?: string[];
  /** Topic (default ORDERS_TOPIC). */
  topic?: string;
  json?: boolean;
}

/** One partition's lag as `--json` prints it (offsets as strings: they are 64-bit). */
export interface LagRow {
  group: string;
  topic: string;
  partition: number;
  committed: string | null;
  end: string;
  behind: number;
  oldestTimestamp: string | null;
  oldestAgeSeconds: number | null;
}

export function lagRows(report: LagReport, now = Date.now()): LagRow[] {
  return report.partitions.map((p) => ({
    group: p.group,
    topic: p.topic,
    partition: p.partition,
    committed: p.committed === undefined ? null : p.committed.toString(),
    end: p.end.toString(),
    behind: Number(p.behind),
    oldestTimestamp: p.oldestTimestampMs === undefined ? null : new Date(p.oldestTimestampMs).toISOString(),
    oldestAgeSeconds:
      p.behind > 0n && p.oldestTimestampMs === undefined ? null : Math.round(oldestAgeSeconds(p, now) * 1000) / 1000,
  }));
}

/** A duration for people: 0s, 42s, 3m07s, 2h05m, 3d04h. */
export function humanAge(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${String(Math.floor((s % 86_400) / 3600)).padStart(2, '0')}h`;
}

export async function lag(ctx: CliContext, opts: LagOptions): Promise<LagRow[]> {
  const groups = opts.groups?.length ? opts.groups : [ctx.config.CONSUMER_GROUP];
  const topic = opts.topic ?? ctx.config.ORDERS_TOPIC;
  const reader = await connectLagReader(cliKafka(ctx), { clientId: `${ctx.config.KAFKA_CLIENT_ID}-cli-lag` });
  let report: LagReport;
  try {
    report = await reader.measure(groups, topic, ctx.signal);
  } catch (err) {
    if (err instanceof TopicNotFound)
      throw new NotFoundError(`${err.message} (--topic, default ORDERS_TOPIC)`, { cause: err });
    throw err;
  } finally {
    await reader.close();
  }
  const rows = lagRows(report);
  if (opts.json) {
    println(ctx.out, JSON.stringify({ at: report.at.toISOString(), topic, groups, partitions: rows }));
    return rows;
  }
  const table = rows.map((r) => [
    r.group,
    String(r.partition),
    r.committed ?? '-',
    r.end,
    String(r.behind),
    r.oldestAgeSeconds === null ? 'unread' : humanAge(r.oldestAgeSeconds),
    r.oldestTimestamp ?? '-',
  ]);
  for (const line of formatTable(
    ['GROUP', 'PARTITION', 'COMMITTED', 'END', 'BEHIND', 'OLDEST AGE', 'OLDEST RECORD AT'],
    table,
  ))
    println(ctx.out, line);
  for (const group of groups) {
    const mine = rows.filter((r) => r.group === group);
    const behind = mine.reduce((n, r) => n + r.behind, 0);
    const oldest = Math.max(0, ...mine.map((r) => r.oldestAgeSeconds ?? 0));
    println(
      ctx.out,
      `${group} on ${topic}: ${behind} record(s) behind, oldest uncommitted ${humanAge(oldest)} old (at ${report.at.toISOString()})`,
    );
  }
  return rows;
}

export interface LagExporterCommandOptions {
  groups?: string[];
  topic?: string;
}

/** Runs the exporter until SIGINT/SIGTERM (or the context's signal). */
export async function lagExporter(ctx: CliContext, opts: LagExporterCommandOptions): Promise<void> {
  const { startLagExporter } = await import('../../roles/lag/exporter.js');
  const { createLogger } = await import('../../base/log.js');
  const logger = createLogger(ctx.config.LOG_LEVEL);
  const groups = opts.groups?.length ? opts.groups : [ctx.config.CONSUMER_GROUP];
  const exporter = await startLagExporter({
    kafka: cliKafka({ ...ctx, logger }),
    groups,
    topic: opts.topic ?? ctx.config.ORDERS_TOPIC,
    port: ctx.config.LAG_EXPORTER_PORT,
    host: ctx.config.METRICS_HOST,
    intervalMs: ctx.config.LAG_EXPORTER_INTERVAL_MS,
    logger,
  });
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  if (ctx.signal?.aborted) stop.abort();
  ctx.signal?.addEventListener('abort', onSignal, { once: true });
  try {
    await new Promise<void>((resolve) =>
      stop.signal.aborted ? resolve() : stop.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await exporter.stop();
    logger.info('lag exporter stopped');
  }
}
