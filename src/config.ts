/**
 * The one place that reads the environment. Every variable is validated here, so a bad value fails at
 * start-up with a message naming the variable and what was expected, never later at first use.
 */
import { z } from 'zod';

const port = z.coerce.number({ invalid_type_error: 'a port number 0–65535' }).int('a port number 0–65535').min(0, 'a port number 0–65535').max(65535, 'a port number 0–65535');
const positiveInt = z.coerce.number({ invalid_type_error: 'a whole number ≥ 1' }).int('a whole number ≥ 1').min(1, 'a whole number ≥ 1');
const nonEmpty = z.string().trim().min(1);

const url = (protocols: string[]) =>
  nonEmpty.refine((v) => {
    try {
      return protocols.includes(new URL(v).protocol);
    } catch {
      return false;
    }
  }, `a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`);

const hostPort = nonEmpty.regex(/^[^\s:,]+:\d{1,5}$/, 'host:port');

const DURATION_UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** Milliseconds of a duration such as `90s`, `30m`, `1h` or `1d` (`0` is 0); NaN when it is none. */
export function durationMs(value: string): number {
  if (value.trim() === '0') return 0;
  const m = /^(\d+)(s|m|h|d)$/.exec(value.trim());
  return m ? Number(m[1]) * DURATION_UNIT_MS[m[2] as keyof typeof DURATION_UNIT_MS] : Number.NaN;
}
const duration = nonEmpty.refine((v) => {
  const ms = durationMs(v);
  return ms === 0 || ms >= 60_000;
}, 'a duration of at least 1m such as 30m, 1h or 1d, or 0');

/**
 * The store's own floor for the dedupe ledger's retention, in days: prune_processed_events (migration
 * 004_ledger_retention.sql) refuses anything shorter. Keep the two in step.
 */
export const LEDGER_RETENTION_FLOOR_DAYS = 21;

/** Environment variable name → schema with its default. Also the list the docker-compose test checks against. */
export const configSchema = {
  /**
   * `production`: no local-stack defaults for the addresses (PRODUCTION_REQUIRED must be set). Anything else
   * (`development`, `test`, ...) keeps them.
   */
  NODE_ENV: nonEmpty.default('development'),
  /** Comma-separated Kafka bootstrap brokers, host:port each. */
  KAFKA_BROKERS: nonEmpty
    .default('127.0.0.1:19092')
    .transform((v) => v.split(',').map((b) => b.trim()))
    .pipe(z.array(hostPort).min(1)),
  /** Kafka client id prefix used in broker logs. */
  KAFKA_CLIENT_ID: nonEmpty.default('fulfilment'),
  /** Input topic carrying order events. */
  ORDERS_TOPIC: nonEmpty.default('orders'),
  /** Partitions the local stack gives the orders topic when it creates it. */
  ORDERS_TOPIC_PARTITIONS: positiveInt.default(6),
  /** Dead-letter topic for records that can never be processed. */
  DLQ_TOPIC: nonEmpty.default('orders.fulfilment.dlq'),
  /** Kafka consumer group of the bridge. */
  CONSUMER_GROUP: nonEmpty.default('fulfilment'),
  /** Temporal frontend, host:port. */
  TEMPORAL_ADDRESS: hostPort.default('127.0.0.1:7233'),
  /** Temporal namespace. */
  TEMPORAL_NAMESPACE: nonEmpty.default('default'),
  /** Task queue the worker polls and the bridge starts workflows on. */
  TEMPORAL_TASK_QUEUE: nonEmpty.default('order-fulfilment'),
  /** Base URL of the Temporal Web UI, used to print links to workflows. */
  TEMPORAL_UI_URL: url(['http:', 'https:']).default('http://127.0.0.1:8233'),
  /** PostgreSQL connection string. */
  DATABASE_URL: url(['postgres:', 'postgresql:']).default(
    'postgres://fulfilment:fulfilment@127.0.0.1:55432/fulfilment',
  ),
  /** Base URL of the warehouse HTTP service that ships orders. */
  WAREHOUSE_URL: url(['http:', 'https:']).default('http://127.0.0.1:18080'),
  /** Port the local warehouse service listens on when this project runs it. */
  WAREHOUSE_PORT: port.default(18080),
  /** Interface the local warehouse service listens on (0.0.0.0 in containers). */
  WAREHOUSE_HOST: nonEmpty.default('127.0.0.1'),
  /** Consecutive transient warehouse failures that open its circuit breaker. */
  WAREHOUSE_BREAKER_FAILURES: positiveInt.default(5),
  /** Milliseconds the warehouse circuit stays open before one probe is let through. */
  WAREHOUSE_BREAKER_HALF_OPEN_MS: positiveInt.default(10_000),
  /** How long (seconds) a cancellation that arrived before its placement waits for it. Default 1 hour. */
  CANCEL_GRACE_SECONDS: positiveInt.default(3600),
  /** How long (seconds) a finished order's workflow stays open to absorb late events. Default 1 day. */
  ORDER_LINGER_SECONDS: z.coerce.number({ invalid_type_error: 'a whole number of seconds ≥ 0' }).int().min(0).default(86400),
  /**
   * Continue an order's workflow as new once its history has this many events (unset: only when Temporal suggests
   * it, at about 10,000 events). Keeps histories short for long-lived orders; state and pending events carry over.
   */
  ORDER_CONTINUE_AS_NEW_AFTER_EVENTS: z.coerce.number({ invalid_type_error: 'a whole number of events ≥ 10' }).int('a whole number of events ≥ 10').min(10, 'a whole number of events ≥ 10').optional(),
  /** Concurrent lanes per partition in the bridge; events of one order always share a lane. */
  BRIDGE_LANES: positiveInt.default(8),
  /** Kafka consumer session timeout, milliseconds: how long a crashed bridge holds its partitions. */
  BRIDGE_SESSION_TIMEOUT_MS: z.coerce.number({ invalid_type_error: 'milliseconds, 6000–300000' }).int().min(6000, 'milliseconds, 6000–300000').max(300_000, 'milliseconds, 6000–300000').default(30_000),
  /** Port of the Prometheus /metrics endpoint; 0 disables it. */
  METRICS_PORT: port.default(9464),
  /** Interface the /metrics endpoint listens on (0.0.0.0 in containers). */
  METRICS_HOST: nonEmpty.default('127.0.0.1'),
  /**
   * Total milliseconds a SIGTERM/SIGINT shutdown may take; past it the process logs what was still stopping and
   * exits non-zero. Keep it above WORKER_SHUTDOWN_GRACE_MS and below the orchestrator's kill grace period.
   */
  SHUTDOWN_DEADLINE_MS: positiveInt.default(30_000),
  /** What this process runs: the Temporal worker, the Kafka bridge, or both (comma-separated). */
  FULFILMENT_ROLES: nonEmpty
    .default('worker,bridge')
    .transform((v) => v.split(',').map((r) => r.trim()))
    .pipe(z.array(z.enum(['worker', 'bridge'], { message: 'worker, bridge or worker,bridge' })).min(1)),
  /**
   * Per partition, most records the bridge may start past the oldest unfinished one: finished records behind a
   * slow one cannot be committed, so this bounds what a crash redelivers and how far lanes run ahead.
   */
  BRIDGE_MAX_IN_FLIGHT: positiveInt.default(500),
  /** Most bytes the bridge fetches per partition at a time (kafkajs maxBytesPerPartition); bounds its memory. */
  BRIDGE_MAX_BYTES_PER_PARTITION: positiveInt.default(1_048_576),
  /** How long (ms) a stopping worker lets running activities finish before cancelling them. Default 10 s. */
  WORKER_SHUTDOWN_GRACE_MS: z.coerce.number({ invalid_type_error: 'milliseconds ≥ 0' }).int('milliseconds ≥ 0').min(0, 'milliseconds ≥ 0').default(10_000),
  /** Days the dedupe ledger (processed_events) keeps a row; pruned by the ledger-retention schedule. Default 30. */
  LEDGER_RETENTION_DAYS: positiveInt.default(30),
  /** Days Kafka keeps the orders topic's records: a record can be redelivered that long. Default 7 (Kafka's default). */
  KAFKA_RETENTION_DAYS: positiveInt.default(7),
  /** Days after Kafka retention within which an event may still come back (DLQ redrive, replays). Default 14. */
  REDRIVE_WINDOW_DAYS: z.coerce.number({ invalid_type_error: 'a whole number of days ≥ 0' }).int('a whole number of days ≥ 0').min(0, 'a whole number of days ≥ 0').default(14),
  /** How often the ledger-retention schedule prunes (`30m`, `1h`, `1d`, at least 1m); `0`: this worker leaves the schedule alone. */
  LEDGER_PRUNE_INTERVAL: duration.default('1h'),
  /** Rows deleted per call of prune_processed_events (one short transaction each), 1–10000. */
  LEDGER_PRUNE_BATCH: z.coerce.number({ invalid_type_error: 'a whole number 1–10000' }).int('a whole number 1–10000').min(1, 'a whole number 1–10000').max(10_000, 'a whole number 1–10000').default(1000),
  /** Id of the Temporal Schedule that prunes the ledger: one per deployment (namespace and task queue). */
  LEDGER_PRUNE_SCHEDULE_ID: nonEmpty.default('fulfilment-ledger-retention'),
  /** pino log level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
};

export type Config = { [K in keyof typeof configSchema]: z.output<(typeof configSchema)[K]> };

/** Thrown when the environment holds a value the service cannot run with. */
export class ConfigError extends Error {}

/**
 * Addresses with a local-stack default that production mode (NODE_ENV=production) requires to be set: a service
 * deployed somewhere real must never fall back to 127.0.0.1 (or ship orders to the fake warehouse).
 */
export const PRODUCTION_REQUIRED = ['KAFKA_BROKERS', 'TEMPORAL_ADDRESS', 'DATABASE_URL', 'WAREHOUSE_URL'] as const satisfies readonly (keyof typeof configSchema)[];

/** True when the environment asks for production mode. */
export const isProduction = (env: NodeJS.ProcessEnv): boolean => env.NODE_ENV?.trim() === 'production';

/** Reads and validates the configuration; throws one ConfigError listing every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  const required = new Set<string>(isProduction(env) ? PRODUCTION_REQUIRED : []);
  for (const [name, schema] of Object.entries(configSchema)) {
    const raw = env[name];
    if (required.has(name) && (raw === undefined || raw.trim() === '')) {
      problems.push(`${name} is not set: required when NODE_ENV=production (there are no local defaults in production)`);
      continue;
    }
    const result = (schema as z.ZodTypeAny).safeParse(raw === '' ? undefined : raw);
    if (result.success) out[name] = result.data;
    else {
      const expected = result.error.issues.map((i) => i.message).join('; ');
      problems.push(`${name}=${JSON.stringify(raw)} is invalid: expected ${expected}`);
    }
  }
  problems.push(...crossFieldProblems(out as Partial<Config>));
  if (problems.length > 0) throw new ConfigError(`Bad configuration:\n  ${problems.join('\n  ')}`);
  return out as Config;
}

/** Rules over several variables, checked when each of the variables involved is valid on its own. */
function crossFieldProblems(c: Partial<Config>): string[] {
  const problems: string[] = [];
  if (c.LEDGER_RETENTION_DAYS === undefined || c.KAFKA_RETENTION_DAYS === undefined || c.REDRIVE_WINDOW_DAYS === undefined) return problems;
  const redelivery = c.KAFKA_RETENTION_DAYS + c.REDRIVE_WINDOW_DAYS;
  if (c.LEDGER_RETENTION_DAYS < redelivery) {
    problems.push(
      `LEDGER_RETENTION_DAYS=${c.LEDGER_RETENTION_DAYS} is too short: the dedupe ledger must outlive every redelivery, so expected at least ` +
        `KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS = ${c.KAFKA_RETENTION_DAYS} + ${c.REDRIVE_WINDOW_DAYS} = ${redelivery} days`,
    );
  } else if (c.LEDGER_RETENTION_DAYS < LEDGER_RETENTION_FLOOR_DAYS) {
    problems.push(
      `LEDGER_RETENTION_DAYS=${c.LEDGER_RETENTION_DAYS} is too short: expected at least ${LEDGER_RETENTION_FLOOR_DAYS} days, the floor prune_processed_events enforces`,
    );
  }
  return problems;
}
