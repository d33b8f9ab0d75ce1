/**
 * The one place that reads the environment. Every variable is validated here, so a bad value fails at
 * start-up with a message naming the variable and what was expected, never later at first use.
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
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

/** Why `path` cannot be read as a file, or undefined when it can. */
function unreadable(path: string): string | undefined {
  try {
    if (!statSync(path).isFile()) return `${path} is not a file`;
    accessSync(path, constants.R_OK);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `${path} does not exist`;
    if (code === 'EACCES' || code === 'EPERM') return `${path} is not readable by this process (${code})`;
    return `${path} cannot be read (${code ?? String(err)})`;
  }
}

/**
 * A path to a file this process can read; with `pem`, one holding at least one PEM block whose label matches (and
 * none whose label `refused` matches, which `refused.why` explains).
 */
const readableFile = (pem?: { label: RegExp; what: string; refused?: { label: RegExp; why: string } }) =>
  nonEmpty.superRefine((path, ctx) => {
    const why = unreadable(path);
    if (why) return void ctx.addIssue({ code: z.ZodIssueCode.custom, message: `a readable file, but ${why}` });
    if (!pem) return;
    const text = readFileSync(path, 'utf8');
    const has = (label: RegExp) => new RegExp(`-----BEGIN ${label.source}-----`).test(text);
    if (pem.refused && has(pem.refused.label)) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${pem.what}, but ${path} ${pem.refused.why}` });
    else if (!has(pem.label)) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `a PEM file holding ${pem.what}, but ${path} has no "-----BEGIN ...-----" block of that kind` });
  });
const pemCertificates = readableFile({ label: /CERTIFICATE/, what: 'one or more certificates' });
const pemPrivateKey = readableFile({
  label: /(?:RSA |EC )?PRIVATE KEY/,
  what: 'an unencrypted private key',
  refused: { label: /ENCRYPTED PRIVATE KEY/, why: 'is encrypted and no passphrase is taken (decrypt it: openssl pkey -in <file> -out <new file>)' },
});

/** Kafka's security.protocol values. */
export const KAFKA_SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;
/** The SASL mechanisms the client speaks (Kafka's sasl.mechanism names). */
export const KAFKA_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const;
const orList = (values: readonly string[]) => `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;

/** Variables whose values are secrets: never repeated in an error message. */
export const SECRET_VARIABLES: ReadonlySet<string> = new Set(['KAFKA_SASL_PASSWORD']);

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
  /** Comma-separated Kafka bootstrap brokers, host:port each. */
  KAFKA_BROKERS: nonEmpty
    .default('127.0.0.1:19092')
    .transform((v) => v.split(',').map((b) => b.trim()))
    .pipe(z.array(hostPort).min(1)),
  /** Kafka client id prefix used in broker logs. */
  KAFKA_CLIENT_ID: nonEmpty.default('fulfilment'),
  /** Kafka's security.protocol: TLS (SSL), SASL, both (SASL_SSL), or neither (PLAINTEXT, the local stack's default). */
  KAFKA_SECURITY_PROTOCOL: z
    .string()
    .trim()
    .toUpperCase()
    .pipe(z.enum(KAFKA_SECURITY_PROTOCOLS, { message: orList(KAFKA_SECURITY_PROTOCOLS) }))
    .default('PLAINTEXT'),
  /** PEM file of the CA(s) that sign the brokers' certificates (SSL, SASL_SSL); unset: the system's roots. */
  KAFKA_SSL_CA_FILE: pemCertificates.optional(),
  /** PEM file of the client certificate (chain) for brokers that require one; needs KAFKA_SSL_KEY_FILE. */
  KAFKA_SSL_CERT_FILE: pemCertificates.optional(),
  /** PEM file of the client certificate's private key (unencrypted). */
  KAFKA_SSL_KEY_FILE: pemPrivateKey.optional(),
  /** Name sent as SNI and checked against the brokers' certificates; unset: each broker's host name. */
  KAFKA_SSL_SERVERNAME: nonEmpty.optional(),
  /** SASL mechanism (SASL_PLAINTEXT, SASL_SSL). */
  KAFKA_SASL_MECHANISM: z
    .string()
    .trim()
    .toUpperCase()
    .pipe(z.enum(KAFKA_SASL_MECHANISMS, { message: orList(KAFKA_SASL_MECHANISMS) }))
    .optional(),
  /** SASL user (PLAIN, SCRAM-*). */
  KAFKA_SASL_USERNAME: nonEmpty.optional(),
  /** SASL password (PLAIN, SCRAM-*); or KAFKA_SASL_PASSWORD_FILE. Taken as given, spaces included. */
  KAFKA_SASL_PASSWORD: z.string().min(1).optional(),
  /** File holding the SASL password (a mounted secret); one trailing newline is ignored. */
  KAFKA_SASL_PASSWORD_FILE: readableFile()
    .refine((path) => readFileSync(path, 'utf8').replace(/\r?\n$/, '').length > 0, 'a file holding the password, but it is empty')
    .optional(),
  /** ES module whose default export is the OAUTHBEARER token provider: `async () => ({ value: token })`. */
  KAFKA_SASL_OAUTHBEARER_PROVIDER: readableFile().optional(),
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

/** The variables every Kafka client is built from (src/kafka/client.ts createKafka). */
export const KAFKA_SETTING_NAMES = [
  'KAFKA_BROKERS',
  'KAFKA_CLIENT_ID',
  'KAFKA_SECURITY_PROTOCOL',
  'KAFKA_SSL_CA_FILE',
  'KAFKA_SSL_CERT_FILE',
  'KAFKA_SSL_KEY_FILE',
  'KAFKA_SSL_SERVERNAME',
  'KAFKA_SASL_MECHANISM',
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
  'KAFKA_SASL_PASSWORD_FILE',
  'KAFKA_SASL_OAUTHBEARER_PROVIDER',
] as const satisfies readonly (keyof Config)[];
/** The configuration's Kafka connection settings: what createKafka needs, and nothing else. */
export type KafkaSettings = Pick<Config, (typeof KAFKA_SETTING_NAMES)[number]>;

/** Thrown when the environment holds a value the service cannot run with. */
export class ConfigError extends Error {}

/** Reads and validates the configuration; throws one ConfigError listing every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(configSchema)) {
    const raw = env[name];
    const result = (schema as z.ZodTypeAny).safeParse(raw === '' ? undefined : raw);
    if (result.success) out[name] = result.data;
    else {
      const expected = result.error.issues.map((i) => i.message).join('; ');
      problems.push(`${name}=${SECRET_VARIABLES.has(name) ? '(hidden)' : JSON.stringify(raw)} is invalid: expected ${expected}`);
    }
  }
  problems.push(...crossFieldProblems(out as Partial<Config>, new Set(Object.keys(configSchema).filter((n) => !(n in out)))));
  if (problems.length > 0) throw new ConfigError(`Bad configuration:\n  ${problems.join('\n  ')}`);
  return out as Config;
}

/** Rules over several variables, checked when each of the variables involved is valid on its own. */
function crossFieldProblems(c: Partial<Config>, invalid: ReadonlySet<string>): string[] {
  return [...ledgerRetentionProblems(c), ...kafkaSecurityProblems(c, invalid)];
}

/** The Kafka security variables must describe one coherent connection: nothing set that the protocol ignores. */
function kafkaSecurityProblems(c: Partial<Config>, invalid: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const protocol = c.KAFKA_SECURITY_PROTOCOL;
  if (protocol === undefined || invalid.has('KAFKA_SASL_MECHANISM')) return problems;
  // A variable that is set but invalid was reported already; for these rules it counts as set.
  const isSet = (n: keyof Config) => c[n] !== undefined || invalid.has(n);
  const set = (names: (keyof Config)[]) => names.filter(isSet);
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL';
  const sasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
  const tlsSet = set(['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE', 'KAFKA_SSL_SERVERNAME']);
  if (!tls && tlsSet.length > 0) {
    problems.push(`${tlsSet.join(', ')} set, but KAFKA_SECURITY_PROTOCOL=${protocol} does not use TLS: expected KAFKA_SECURITY_PROTOCOL=SSL or SASL_SSL, or unset them`);
  }
  if (tls && isSet('KAFKA_SSL_CERT_FILE') !== isSet('KAFKA_SSL_KEY_FILE')) {
    problems.push(
      isSet('KAFKA_SSL_CERT_FILE')
        ? 'KAFKA_SSL_CERT_FILE is set without KAFKA_SSL_KEY_FILE: a client certificate needs its private key'
        : 'KAFKA_SSL_KEY_FILE is set without KAFKA_SSL_CERT_FILE: a private key needs the client certificate it belongs to',
    );
  }
  const saslSet = set(['KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_SASL_PASSWORD_FILE', 'KAFKA_SASL_OAUTHBEARER_PROVIDER']);
  if (!sasl) {
    if (saslSet.length > 0) problems.push(`${saslSet.join(', ')} set, but KAFKA_SECURITY_PROTOCOL=${protocol} does not use SASL: expected KAFKA_SECURITY_PROTOCOL=SASL_SSL or SASL_PLAINTEXT, or unset them`);
    return problems;
  }
  const mechanism = c.KAFKA_SASL_MECHANISM;
  if (mechanism === undefined) {
    problems.push(`KAFKA_SECURITY_PROTOCOL=${protocol} needs KAFKA_SASL_MECHANISM: expected ${orList(KAFKA_SASL_MECHANISMS)}`);
    return problems;
  }
  if (mechanism === 'OAUTHBEARER') {
    if (!isSet('KAFKA_SASL_OAUTHBEARER_PROVIDER')) {
      problems.push('KAFKA_SASL_MECHANISM=OAUTHBEARER needs KAFKA_SASL_OAUTHBEARER_PROVIDER: the path of an ES module whose default export returns the token');
    }
    const unused = set(['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_SASL_PASSWORD_FILE']);
    if (unused.length > 0) problems.push(`${unused.join(', ')} set, but KAFKA_SASL_MECHANISM=OAUTHBEARER takes its token from KAFKA_SASL_OAUTHBEARER_PROVIDER: unset them`);
    return problems;
  }
  if (isSet('KAFKA_SASL_OAUTHBEARER_PROVIDER')) {
    problems.push(`KAFKA_SASL_OAUTHBEARER_PROVIDER set, but KAFKA_SASL_MECHANISM=${mechanism} does not use it: expected KAFKA_SASL_MECHANISM=OAUTHBEARER, or unset it`);
  }
  if (!isSet('KAFKA_SASL_USERNAME')) problems.push(`KAFKA_SASL_MECHANISM=${mechanism} needs KAFKA_SASL_USERNAME`);
  if (!isSet('KAFKA_SASL_PASSWORD') && !isSet('KAFKA_SASL_PASSWORD_FILE')) {
    problems.push(`KAFKA_SASL_MECHANISM=${mechanism} needs a password: set KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE`);
  } else if (isSet('KAFKA_SASL_PASSWORD') && isSet('KAFKA_SASL_PASSWORD_FILE')) {
    problems.push('KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE are both set: expected one of them');
  }
  return problems;
}

function ledgerRetentionProblems(c: Partial<Config>): string[] {
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
