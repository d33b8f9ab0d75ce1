/**
 * The one place that reads the environment. Every variable is validated here, so a bad value fails at
 * start-up with a message naming the variable and what was expected, never later at first use.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { parseKeyList, PayloadKeys } from './codec/keys.js';

const port = z.coerce.number({ invalid_type_error: 'a port number 0–65535' }).int('a port number 0–65535').min(0, 'a port number 0–65535').max(65535, 'a port number 0–65535');
const positiveInt = z.coerce.number({ invalid_type_error: 'a whole number ≥ 1' }).int('a whole number ≥ 1').min(1, 'a whole number ≥ 1');
const atLeastTwo = z.coerce.number({ invalid_type_error: 'a whole number ≥ 2' }).int('a whole number ≥ 2').min(2, 'a whole number ≥ 2');
const nonEmpty = z.string().trim().min(1);
/** A switch: true, false, 1 or 0, read as a boolean. */
const booleanFlag = z.enum(['true', 'false', '1', '0'], { message: 'true, false, 1 or 0' }).transform((v) => v === 'true' || v === '1');

const url = (protocols: string[]) =>
  nonEmpty.refine((v) => {
    try {
      return protocols.includes(new URL(v).protocol);
    } catch {
      return false;
    }
  }, `a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`);

/** A readable PEM file holding at least one certificate. */
const pemCertificateFile = nonEmpty.superRefine((path, ctx) => {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: `a readable PEM file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` });
    return;
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'a PEM file holding a certificate (-----BEGIN CERTIFICATE-----)' });
});

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
export const SECRET_VARIABLES: ReadonlySet<string> = new Set(['KAFKA_SASL_PASSWORD', 'PAYLOAD_ENCRYPTION_KEYS', 'CODEC_SERVER_TOKEN', 'OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']);
/** Variables whose values are URLs that may carry a password: repeated with the password masked. */
const URL_WITH_PASSWORD: ReadonlySet<string> = new Set(['DATABASE_URL', 'DATABASE_MIGRATION_URL']);

/** A variable's value as an error message may repeat it. */
function shown(name: string, raw: string | undefined): string {
  if (SECRET_VARIABLES.has(name)) return '(hidden)';
  if (raw !== undefined && URL_WITH_PASSWORD.has(name)) return JSON.stringify(raw.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*:)[^@/?#]*@/i, '$1***@'));
  return JSON.stringify(raw);
}

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

/** The local stack's runtime role (dev-only password). */
export const LOCAL_DATABASE_URL = 'postgres://fulfilment:fulfilment@127.0.0.1:55432/fulfilment';
/** The local stack's owner role, which applies the migrations (dev-only password). */
export const LOCAL_DATABASE_MIGRATION_URL = 'postgres://fulfilment_owner:fulfilment_owner@127.0.0.1:55432/fulfilment';

/**
 * The store's own floor for the dedupe ledger's retention, in days: prune_processed_events (migration
 * 004_ledger_retention.sql) refuses anything shorter. Keep the two in step.
 */
export const LEDGER_RETENTION_FLOOR_DAYS = 21;

/** OTEL_TRACES_EXPORTER values this service has an exporter for. */
export const OTEL_TRACES_EXPORTERS = ['otlp', 'console', 'none'] as const;
/** OTEL_TRACES_SAMPLER values (the standard's names). */
export const OTEL_TRACES_SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
/** OTLP encodings the exporters speak; `grpc` is refused with a message saying so. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
const otlpProtocol = z
  .string()
  .trim()
  .refine((v) => v !== 'grpc', 'http/protobuf or http/json (this service exports over OTLP/HTTP; point it at the receiver\'s HTTP port, 4318 by default, not grpc)')
  .pipe(z.enum(OTLP_PROTOCOLS, { message: orList(OTLP_PROTOCOLS) }));

/**
 * A `key=value` comma list as the OpenTelemetry variables write it (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS):
 * keys trimmed, values percent-decoded; an empty list is refused.
 */
const otlpKeyValues = nonEmpty.transform((v, ctx) => {
  const out: Record<string, string> = {};
  for (const item of v.split(',')) {
    const at = item.indexOf('=');
    const key = at > 0 ? item.slice(0, at).trim() : '';
    if (key === '') {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'a comma list of key=value pairs, e.g. key1=value1,key2=value2' });
      return z.NEVER;
    }
    try {
      out[key] = decodeURIComponent(item.slice(at + 1).trim());
    } catch {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `a comma list of key=value pairs whose values are percent-encoded, but the value of ${key} is not` });
      return z.NEVER;
    }
  }
  return out;
});

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
  /** Partitions provisioning gives the orders topic (creating it, or growing it when it has fewer). */
  ORDERS_TOPIC_PARTITIONS: positiveInt.default(6),
  /**
   * Replication factor `fulfilment provision` gives the topics it creates; unset: the broker's own
   * default.replication.factor (3 on managed clusters, 1 on the local stack). Never changes an existing topic.
   */
  KAFKA_REPLICATION_FACTOR: z.coerce.number({ invalid_type_error: 'a whole number of replicas ≥ 1' }).int('a whole number of replicas ≥ 1').min(1, 'a whole number of replicas ≥ 1').optional(),
  /** Dead-letter topic for records that can never be processed. */
  DLQ_TOPIC: nonEmpty.default('orders.fulfilment.dlq'),
  /** Kafka consumer group of the bridge. */
  CONSUMER_GROUP: nonEmpty.default('fulfilment'),
  /** Temporal frontend, host:port (also from the Temporal profile, see TEMPORAL_PROFILE; this variable wins). */
  TEMPORAL_ADDRESS: hostPort.default('127.0.0.1:7233'),
  /** Temporal namespace (also from the Temporal profile; this variable wins). */
  TEMPORAL_NAMESPACE: nonEmpty.default('default'),
  /** Temporal Cloud API key, sent as `authorization: Bearer <key>`; turns TLS on unless TEMPORAL_TLS=false. */
  TEMPORAL_API_KEY: nonEmpty.optional(),
  /** `true`/`1` connects to Temporal over TLS (system roots unless a CA is given), `false`/`0` never. Unset: TLS when any TLS setting or an API key is given. */
  TEMPORAL_TLS: z.enum(['true', 'false', '1', '0'], { message: 'true, false, 1 or 0' }).optional(),
  /** PEM file of the CA(s) that issued the Temporal server's certificate (unset: the system's roots). */
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: nonEmpty.optional(),
  /** The same as PEM text instead of a file. */
  TEMPORAL_TLS_SERVER_CA_CERT_DATA: nonEmpty.optional(),
  /** Name the Temporal server's certificate is checked against (and sent as SNI), when it differs from TEMPORAL_ADDRESS's host. */
  TEMPORAL_TLS_SERVER_NAME: nonEmpty.optional(),
  /** PEM file of this client's certificate for mTLS; needs TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA). */
  TEMPORAL_TLS_CLIENT_CERT_PATH: nonEmpty.optional(),
  /** The same as PEM text instead of a file. */
  TEMPORAL_TLS_CLIENT_CERT_DATA: nonEmpty.optional(),
  /** PEM file of the private key of the mTLS client certificate. */
  TEMPORAL_TLS_CLIENT_KEY_PATH: nonEmpty.optional(),
  /** The same as PEM text instead of a file. */
  TEMPORAL_TLS_CLIENT_KEY_DATA: nonEmpty.optional(),
  /** Profile of the Temporal client configuration file to use (unset: `default`, when the file has one). */
  TEMPORAL_PROFILE: nonEmpty.optional(),
  /** Temporal client configuration file (TOML, `[profile.<name>]` tables). Unset: `$XDG_CONFIG_HOME/temporalio/temporal.toml` or `~/.config/temporalio/temporal.toml` when it exists. */
  TEMPORAL_CONFIG_FILE: nonEmpty.optional(),
  /** Task queue the worker polls and the bridge starts workflows on. */
  TEMPORAL_TASK_QUEUE: nonEmpty.default('order-fulfilment'),
  /** Base URL of the Temporal Web UI, used to print links to workflows. */
  TEMPORAL_UI_URL: url(['http:', 'https:']).default('http://127.0.0.1:8233'),
  /**
   * PostgreSQL connection string of the runtime role the service runs as: it owns nothing, is not a superuser, has no
   * BYPASSRLS and only the grants provisioning gives it (start-up refuses any other). The default is the local stack's
   * dev-only role and password.
   */
  DATABASE_URL: url(['postgres:', 'postgresql:']).default(LOCAL_DATABASE_URL),
  /**
   * PostgreSQL connection string of the owner role: used only by provisioning (`fulfilment provision`), which applies
   * the migrations as this role and grants the runtime role of DATABASE_URL what it needs. Defaults to the local
   * stack's dev-only owner only while DATABASE_URL is unset too (see loadConfig).
   */
  DATABASE_MIGRATION_URL: url(['postgres:', 'postgresql:']).default(LOCAL_DATABASE_MIGRATION_URL),
  /**
   * PEM file of the CA that signed PostgreSQL's server certificate: connections (both URLs) then use TLS and verify the
   * server's certificate and host name against it. Unset: TLS only as the URL's sslmode says.
   */
  DATABASE_SSL_CA_FILE: pemCertificateFile.optional(),
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
  /**
   * How long (seconds) an order's run stays open after it settled, to record late events in the run (a late
   * cancellation as refused, a newer version, an operator's retry of a failed order). Default 0: the run closes in the
   * task that settled it. A later event for a shipped or cancelled order is then refused by Temporal's id reuse policy
   * and counted stale (the order is final: nothing an event could change); one for a failed order, whose run ends
   * failed, starts a new run that records it. Each second of linger costs every order a timer and a workflow task.
   */
  ORDER_LINGER_SECONDS: z.coerce.number({ invalid_type_error: 'a whole number of seconds ≥ 0' }).int().min(0).default(0),
  /**
   * Continue an order's workflow as new once its history has this many events (unset: only when Temporal suggests
   * it, at about 10,000 events). Keeps histories short for long-lived orders; state and pending events carry over.
   */
  ORDER_CONTINUE_AS_NEW_AFTER_EVENTS: z.coerce.number({ invalid_type_error: 'a whole number of events ≥ 10' }).int('a whole number of events ≥ 10').min(10, 'a whole number of events ≥ 10').optional(),
  /**
   * Concurrent lanes per partition in the bridge; events of one order always share a lane. As many as
   * BRIDGE_MAX_DELIVERIES, so one partition with many orders keeps as many calls in flight as six.
   */
  BRIDGE_LANES: positiveInt.default(32),
  /** Signal-with-start calls one bridge has in flight at once, over all its partitions (lanes × partitions are capped by it). */
  BRIDGE_MAX_DELIVERIES: positiveInt.default(32),
  /**
   * Most events of one order, queued together in its lane, that the bridge hands over in one signal (orderEvents,
   * at most 256 KiB of them): a burst on one order costs a workflow task per signal, not per event. 1 hands every
   * event over alone (the orderEvent signal, which workers of every version know).
   */
  BRIDGE_COALESCE_MAX_EVENTS: positiveInt.default(100),
  /**
   * Where one process runs both roles: the bridge starts an order's run with eager workflow start on the worker's
   * own connection (workflow.start with the events in its input; Temporal hands the first task straight to this
   * worker), and signals runs that exist. Ignored by a bridge-only process.
   */
  BRIDGE_EAGER_START: booleanFlag.default('true'),
  /** Kafka consumer session timeout, milliseconds: how long a crashed bridge holds its partitions. */
  BRIDGE_SESSION_TIMEOUT_MS: z.coerce.number({ invalid_type_error: 'milliseconds, 6000–300000' }).int().min(6000, 'milliseconds, 6000–300000').max(300_000, 'milliseconds, 6000–300000').default(30_000),
  /** Port of the Prometheus /metrics endpoint; 0 disables it. */
  METRICS_PORT: port.default(9464),
  /** Interface the /metrics endpoint listens on (0.0.0.0 in containers). */
  METRICS_HOST: nonEmpty.default('127.0.0.1'),
  /** Port of `fulfilment lag-exporter`'s /metrics, /livez and /readyz (it listens on METRICS_HOST). */
  LAG_EXPORTER_PORT: port.default(9465),
  /** How often `fulfilment lag-exporter` reads the committed and end offsets, milliseconds (≥ 1000). */
  LAG_EXPORTER_INTERVAL_MS: z.coerce.number({ invalid_type_error: 'milliseconds ≥ 1000' }).int('milliseconds ≥ 1000').min(1000, 'milliseconds ≥ 1000').default(15_000),
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
  BRIDGE_MAX_BYTES_PER_PARTITION: positiveInt.default(131_072),
  /** Most bytes one fetch of the bridge returns over all its partitions (kafkajs maxBytes); bounds its memory. */
  BRIDGE_MAX_BYTES: positiveInt.default(524_288),
  /** How long (ms) a stopping worker lets running activities finish before cancelling them. Default 10 s. */
  WORKER_SHUTDOWN_GRACE_MS: z.coerce.number({ invalid_type_error: 'milliseconds ≥ 0' }).int('milliseconds ≥ 0').min(0, 'milliseconds ≥ 0').default(10_000),
  /** Workflow tasks the worker runs at once (Temporal's maxConcurrentWorkflowTaskExecutions), at least 2. */
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: atLeastTwo.default(40),
  /** Activities (the shipment, compensation, dead letters, fallbacks of store effects) the worker runs at once. */
  WORKER_MAX_CONCURRENT_ACTIVITIES: positiveInt.default(100),
  /** Local activities (the store effects of an order) the worker runs at once. */
  WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: positiveInt.default(100),
  /** Order workflows kept in the worker's sticky cache (each replayed from its history when evicted); 0 turns it off. */
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number({ invalid_type_error: 'a whole number ≥ 0' }).int('a whole number ≥ 0').min(0, 'a whole number ≥ 0').default(1000),
  /** Concurrent workflow-task polls, at least 2, at most WORKER_MAX_CONCURRENT_WORKFLOW_TASKS. */
  WORKER_WORKFLOW_TASK_POLLERS: atLeastTwo.default(10),
  /** Concurrent activity-task polls, at most WORKER_MAX_CONCURRENT_ACTIVITIES. */
  WORKER_ACTIVITY_TASK_POLLERS: positiveInt.default(10),
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
  /**
   * Keys that encrypt Temporal payloads and dead-letter values (AES-256-GCM): `keyId:base64` entries of 32-byte keys,
   * comma-separated (e.g. `k2:<openssl rand -base64 32>,k1:...`). Unset (and no _FILE): nothing is encrypted.
   */
  PAYLOAD_ENCRYPTION_KEYS: z
    .string()
    .optional()
    // Parsed from the environment into Config.payloadEncryption (loadConfig); the configuration never holds the text.
    .transform((v) => (v === undefined ? undefined : '(hidden: see payloadEncryption)')),
  /** File holding the same list (a mounted secret), entries separated by commas or new lines. */
  PAYLOAD_ENCRYPTION_KEYS_FILE: readableFile().optional(),
  /** The key new payloads are encrypted with (rotation: add the new key, point this at it). Default: the first key. */
  PAYLOAD_ENCRYPTION_KEY_ID: nonEmpty.optional(),
  /** Port `fulfilment codec-server` listens on (0: any free port). */
  CODEC_SERVER_PORT: port.default(8888),
  /** Interface `fulfilment codec-server` listens on (0.0.0.0 in containers). */
  CODEC_SERVER_HOST: nonEmpty.default('127.0.0.1'),
  /** Bearer token every /encode and /decode request to the codec server must carry; or CODEC_SERVER_TOKEN_FILE. */
  CODEC_SERVER_TOKEN: z.string().trim().min(16, 'a token of at least 16 characters (e.g. openssl rand -hex 32)').optional(),
  /** File holding the codec server's token (a mounted secret); one trailing newline is ignored. */
  CODEC_SERVER_TOKEN_FILE: readableFile()
    .refine((path) => readFileSync(path, 'utf8').trim().length >= 16, 'a file holding a token of at least 16 characters')
    .optional(),
  /**
   * Comma-separated origins (scheme://host[:port]) whose pages may call the codec server (CORS): the Temporal Web
   * UI's. Default: the origin of TEMPORAL_UI_URL.
   */
  CODEC_SERVER_CORS_ORIGINS: nonEmpty
    .transform((v) => v.split(',').map((o) => o.trim()).filter((o) => o !== ''))
    .pipe(z.array(z.string().refine(isOrigin, 'origins such as https://temporal-ui.example.com or http://127.0.0.1:8233 (scheme, host and port only, no path)')).min(1))
    .optional(),
  /** pino log level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // ---- Tracing: OpenTelemetry's standard variables (src/tracing/). Off unless OTEL_TRACES_EXPORTER or an OTLP
  // endpoint is set; OTEL_SDK_DISABLED=true keeps it off whatever else is set.
  /** `true` turns tracing off whatever else is set (the OpenTelemetry SDK's own switch). */
  OTEL_SDK_DISABLED: z.enum(['true', 'false'], { message: 'true or false' }).optional(),
  /** `otlp` (export over OTLP/HTTP), `console` (print finished spans to stdout) or `none`. Unset: `otlp` when an endpoint is set, else off. */
  OTEL_TRACES_EXPORTER: z.enum(OTEL_TRACES_EXPORTERS, { message: orList(OTEL_TRACES_EXPORTERS) }).optional(),
  /** Base URL of the OTLP/HTTP receiver; spans go to `<endpoint>/v1/traces`. Setting it turns tracing on. */
  OTEL_EXPORTER_OTLP_ENDPOINT: url(['http:', 'https:']).optional(),
  /** Full URL spans are posted to (used as given, over OTEL_EXPORTER_OTLP_ENDPOINT). Setting it turns tracing on. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url(['http:', 'https:']).optional(),
  /** OTLP encoding: `http/protobuf` (the standard's default) or `http/json`. */
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.default('http/protobuf'),
  /** The same for traces only, over OTEL_EXPORTER_OTLP_PROTOCOL. */
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional(),
  /** Headers sent with every export, `key=value` comma list (values percent-decoded), e.g. a collector's API key. */
  OTEL_EXPORTER_OTLP_HEADERS: otlpKeyValues.optional(),
  /** The same for traces only, added over OTEL_EXPORTER_OTLP_HEADERS. */
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: otlpKeyValues.optional(),
  /** Milliseconds one export may take. */
  OTEL_EXPORTER_OTLP_TIMEOUT: positiveInt.default(10_000),
  /** The same for traces only, over OTEL_EXPORTER_OTLP_TIMEOUT. */
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: positiveInt.optional(),
  /** `service.name` of every span. */
  OTEL_SERVICE_NAME: nonEmpty.default('fulfilment'),
  /** More resource attributes, `key=value` comma list (values percent-decoded), e.g. `deployment.environment.name=prod`. */
  OTEL_RESOURCE_ATTRIBUTES: otlpKeyValues.optional(),
  /** Which traces are recorded: always_on, always_off, traceidratio, or parentbased_* of those (follow the caller's decision). */
  OTEL_TRACES_SAMPLER: z.enum(OTEL_TRACES_SAMPLERS, { message: orList(OTEL_TRACES_SAMPLERS) }).default('parentbased_always_on'),
  /** The ratio of the *traceidratio samplers, 0–1 (default 1). */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number({ invalid_type_error: 'a ratio from 0 to 1' }).min(0, 'a ratio from 0 to 1').max(1, 'a ratio from 0 to 1').optional(),
  /** Milliseconds between two exports of the batch span processor. */
  OTEL_BSP_SCHEDULE_DELAY: positiveInt.default(5000),
  /** Most finished spans held for export; past it new spans are dropped (never blocking the service). */
  OTEL_BSP_MAX_QUEUE_SIZE: positiveInt.default(2048),
  /** Most spans in one export; at most OTEL_BSP_MAX_QUEUE_SIZE. */
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: positiveInt.default(512),
  /** Milliseconds one batch export may take before it is given up. */
  OTEL_BSP_EXPORT_TIMEOUT: positiveInt.default(30_000),
};

export type Config = Omit<{ [K in keyof typeof configSchema]: z.output<(typeof configSchema)[K]> }, 'DATABASE_MIGRATION_URL'> & {
  /** Undefined when DATABASE_URL is set and DATABASE_MIGRATION_URL is not: provisioning's PostgreSQL step then refuses. */
  DATABASE_MIGRATION_URL: string | undefined;
  /** How to reach Temporal: TEMPORAL_* variables over the envconfig profile; src/temporal.ts turns it into connection options. */
  temporal: TemporalSettings;
  /** The payload encryption keys (PAYLOAD_ENCRYPTION_KEYS or _FILE, PAYLOAD_ENCRYPTION_KEY_ID); undefined: encryption off. */
  payloadEncryption: PayloadKeys | undefined;
};

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
    // TEMPORAL_ADDRESS may also come from a Temporal configuration profile: checked once that is read, below.
    if (required.has(name) && name !== 'TEMPORAL_ADDRESS' && (raw === undefined || raw.trim() === '')) {
      problems.push(`${name} is not set: required when NODE_ENV=production (there are no local defaults in production)`);
      continue;
    }
    // The local owner is the default only beside the local runtime role: a configured DATABASE_URL with the local
    // stack's owner would migrate some other database than the one the service uses.
    if (name === 'DATABASE_MIGRATION_URL' && (raw ?? '') === '' && (env.DATABASE_URL ?? '') !== '') {
      out[name] = undefined;
      continue;
    }
    const result = (schema as z.ZodTypeAny).safeParse(raw === '' ? undefined : raw);
    if (result.success) out[name] = result.data;
    else {
      const expected = result.error.issues.map((i) => i.message).join('; ');
      problems.push(`${name}=${shown(name, raw)} is invalid: expected ${expected}`);
    }
  }
  problems.push(...crossFieldProblems(out as Partial<Config>, new Set(Object.keys(configSchema).filter((n) => !(n in out)))));
  const temporal = temporalSettings(env, out as Partial<Config>, problems);
  if (temporal && required.has('TEMPORAL_ADDRESS') && temporal.addressFrom === 'the local default') {
    problems.push('TEMPORAL_ADDRESS is not set: required when NODE_ENV=production (there are no local defaults in production), unless a Temporal configuration profile (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE) gives the address');
  }
  if (temporal) {
    out.TEMPORAL_ADDRESS = temporal.address;
    out.TEMPORAL_NAMESPACE = temporal.namespace;
    out.temporal = temporal;
  }
  out.payloadEncryption = payloadKeys(env, out as Partial<Config>, problems);
  if (problems.length > 0) throw new ConfigError(`Bad configuration:\n  ${problems.join('\n  ')}`);
  return out as Config;
}

/** An origin as browsers send it: scheme, host and port, nothing else. */
function isOrigin(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === value.replace(/\/$/, '');
  } catch {
    return false;
  }
}

/**
 * The payload encryption keys from PAYLOAD_ENCRYPTION_KEYS or PAYLOAD_ENCRYPTION_KEYS_FILE (one of them) and the
 * current key id; undefined when neither is set. Problems name the variable, the entry and the key id, never a key.
 */
function payloadKeys(env: NodeJS.ProcessEnv, c: Partial<Config>, problems: string[]): PayloadKeys | undefined {
  const inline = (env.PAYLOAD_ENCRYPTION_KEYS ?? '') !== '';
  const file = c.PAYLOAD_ENCRYPTION_KEYS_FILE;
  if (inline && (file !== undefined || (env.PAYLOAD_ENCRYPTION_KEYS_FILE ?? '') !== '')) {
    problems.push('PAYLOAD_ENCRYPTION_KEYS and PAYLOAD_ENCRYPTION_KEYS_FILE are both set: expected one of them');
    return undefined;
  }
  if (!inline && file === undefined) {
    if (c.PAYLOAD_ENCRYPTION_KEY_ID !== undefined) problems.push('PAYLOAD_ENCRYPTION_KEY_ID is set, but there are no keys: set PAYLOAD_ENCRYPTION_KEYS (or PAYLOAD_ENCRYPTION_KEYS_FILE) too');
    return undefined;
  }
  const source = inline ? 'PAYLOAD_ENCRYPTION_KEYS' : 'PAYLOAD_ENCRYPTION_KEYS_FILE';
  const { keys, problems: bad } = parseKeyList(inline ? env.PAYLOAD_ENCRYPTION_KEYS! : readFileSync(file!, 'utf8'));
  const where = inline ? 'PAYLOAD_ENCRYPTION_KEYS=(hidden)' : `PAYLOAD_ENCRYPTION_KEYS_FILE=${JSON.stringify(file)}`;
  if (bad.length > 0) {
    problems.push(`${where} is invalid: expected comma-separated keyId:base64-key entries; ${bad.join('; ')}`);
    return undefined;
  }
  const current = c.PAYLOAD_ENCRYPTION_KEY_ID ?? [...keys.keys()][0]!;
  if (!keys.has(current)) {
    problems.push(`PAYLOAD_ENCRYPTION_KEY_ID=${JSON.stringify(current)} is invalid: expected one of the key ids in ${source} (${[...keys.keys()].join(', ')})`);
    return undefined;
  }
  return new PayloadKeys(keys, current, source);
}

/** Rules over several variables, checked when each of the variables involved is valid on its own. */
function crossFieldProblems(c: Partial<Config>, invalid: ReadonlySet<string>): string[] {
  const codecToken = c.CODEC_SERVER_TOKEN !== undefined || invalid.has('CODEC_SERVER_TOKEN');
  const codecTokenFile = c.CODEC_SERVER_TOKEN_FILE !== undefined || invalid.has('CODEC_SERVER_TOKEN_FILE');
  const codec = codecToken && codecTokenFile ? ['CODEC_SERVER_TOKEN and CODEC_SERVER_TOKEN_FILE are both set: expected one of them'] : [];
  return [...databaseProblems(c), ...ledgerRetentionProblems(c), ...kafkaSecurityProblems(c, invalid), ...tracingProblems(c), ...workerTuningProblems(c), ...codec];
}

/** The Temporal worker refuses more pollers than task slots; said here, naming both variables. */
function workerTuningProblems(c: Partial<Config>): string[] {
  const pairs = [
    ['WORKER_WORKFLOW_TASK_POLLERS', 'WORKER_MAX_CONCURRENT_WORKFLOW_TASKS'],
    ['WORKER_ACTIVITY_TASK_POLLERS', 'WORKER_MAX_CONCURRENT_ACTIVITIES'],
  ] as const;
  return pairs.flatMap(([pollers, slots]) =>
    c[pollers] !== undefined && c[slots] !== undefined && c[pollers] > c[slots]
      ? [`${pollers}=${c[pollers]} is more than ${slots}=${c[slots]}: expected at most ${c[slots]} pollers (a poll needs a free task slot)`]
      : [],
  );
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

/** The batch span processor cannot send more spans at once than it holds. */
function tracingProblems(c: Partial<Config>): string[] {
  const problems: string[] = [];
  if (c.OTEL_BSP_MAX_EXPORT_BATCH_SIZE !== undefined && c.OTEL_BSP_MAX_QUEUE_SIZE !== undefined && c.OTEL_BSP_MAX_EXPORT_BATCH_SIZE > c.OTEL_BSP_MAX_QUEUE_SIZE) {
    problems.push(`OTEL_BSP_MAX_EXPORT_BATCH_SIZE=${c.OTEL_BSP_MAX_EXPORT_BATCH_SIZE} is larger than OTEL_BSP_MAX_QUEUE_SIZE=${c.OTEL_BSP_MAX_QUEUE_SIZE}: expected at most the queue size`);
  }
  if (c.OTEL_TRACES_SAMPLER_ARG !== undefined && c.OTEL_TRACES_SAMPLER !== undefined && !c.OTEL_TRACES_SAMPLER.endsWith('traceidratio')) {
    problems.push(`OTEL_TRACES_SAMPLER_ARG is set, but OTEL_TRACES_SAMPLER=${c.OTEL_TRACES_SAMPLER} takes no ratio: expected traceidratio or parentbased_traceidratio, or unset it`);
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

// ---- Temporal: the SDK's environment configuration (@temporalio/envconfig) --------------------------------------

/** TLS towards Temporal, in the SDK's TLSConfig shape: every certificate already read and checked. */
export interface TemporalTls {
  serverNameOverride?: string;
  serverRootCACertificate?: Buffer;
  clientCertPair?: { crt: Buffer; key: Buffer };
}

export interface TemporalSettings {
  address: string;
  namespace: string;
  /** Where the address came from: TEMPORAL_ADDRESS, the profile (e.g. `profile "prod" of /etc/temporal.toml`) or the local default. */
  addressFrom: string;
  apiKey?: string;
  /** undefined: plaintext; false: TLS explicitly off; otherwise TLS with these settings ({} = system roots). */
  tls?: TemporalTls | false;
  /** gRPC metadata sent with every call (profile `grpc_meta`, TEMPORAL_GRPC_META_<NAME>). */
  metadata?: Record<string, string>;
  /** The profile in use, when a configuration file was read. */
  profile?: { name: string; file: string };
}

/** Variables envconfig reads besides TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE. */
const ENVCONFIG_ONLY = /^TEMPORAL_(API_KEY|TLS.*|PROFILE|CONFIG_FILE|CODEC_.*|GRPC_META_.*)$/;
/** A Temporal variable read through @temporalio/envconfig (TLS, API key, profile), not through configSchema. */
export const isTemporalEnvconfigVariable = (name: string): boolean => ENVCONFIG_ONLY.test(name);

/** The file envconfig reads when TEMPORAL_CONFIG_FILE is unset (Linux/Unix rules, as in envconfig). */
function defaultTemporalConfigFile(env: NodeJS.ProcessEnv): string | undefined {
  const xdg = env.XDG_CONFIG_HOME;
  const dir = xdg ? (isAbsolute(xdg) ? xdg : undefined) : env.HOME ? join(env.HOME, '.config') : undefined;
  return dir === undefined ? undefined : join(dir, 'temporalio', 'temporal.toml');
}

function readProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'a directory, not a file' : (err as Error).message;
}

type TlsField = 'server_ca_cert' | 'client_cert' | 'client_key';
const TLS_ENV: Record<TlsField, string> = {
  server_ca_cert: 'TEMPORAL_TLS_SERVER_CA_CERT',
  client_cert: 'TEMPORAL_TLS_CLIENT_CERT',
  client_key: 'TEMPORAL_TLS_CLIENT_KEY',
};

/**
 * The Temporal connection settings: the envconfig profile (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE) with the
 * TEMPORAL_* variables over it, exactly as the SDK's loadClientConfigProfile merges them, then checked: every
 * certificate and key file is read and parsed now, so a bad one fails start-up naming the variable (or profile key)
 * that pointed at it. envconfig (and the Temporal modules under it) is loaded only when there is something for it
 * to read — a configuration file or one of its variables — so the CLI's quick paths stay free of Temporal modules.
 */
function temporalSettings(rawEnv: NodeJS.ProcessEnv, c: Partial<Config>, problems: string[]): TemporalSettings | undefined {
  // Empty means unset, as for every other variable; TEMPORAL_GRPC_META_X= keeps envconfig's meaning (drop header X).
  const env = Object.fromEntries(
    Object.entries(rawEnv).filter((e): e is [string, string] => typeof e[1] === 'string' && (e[1] !== '' || e[0].startsWith('TEMPORAL_GRPC_META_'))),
  );
  const explicitFile = env.TEMPORAL_CONFIG_FILE;
  if (explicitFile !== undefined && !existsSync(explicitFile)) {
    problems.push(`TEMPORAL_CONFIG_FILE=${JSON.stringify(explicitFile)} is invalid: expected a Temporal client configuration file (TOML), but there is no such file`);
    return undefined;
  }
  const file = explicitFile ?? defaultTemporalConfigFile(env);
  const fileExists = file !== undefined && existsSync(file);
  const fileName = explicitFile !== undefined ? `${explicitFile} (TEMPORAL_CONFIG_FILE)` : (file ?? '');
  if (env.TEMPORAL_PROFILE !== undefined && !fileExists) {
    problems.push(`TEMPORAL_PROFILE=${JSON.stringify(env.TEMPORAL_PROFILE)} is invalid: there is no Temporal configuration file to take it from (set TEMPORAL_CONFIG_FILE${file ? `, or create ${file}` : ''})`);
    return undefined;
  }
  const useEnvconfig = fileExists || Object.keys(env).some((k) => ENVCONFIG_ONLY.test(k));
  if (!useEnvconfig) {
    if (c.TEMPORAL_ADDRESS === undefined || c.TEMPORAL_NAMESPACE === undefined) return undefined;
    return { address: c.TEMPORAL_ADDRESS, namespace: c.TEMPORAL_NAMESPACE, addressFrom: env.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : 'the local default' };
  }

  const envconfig = createRequire(import.meta.url)('@temporalio/envconfig') as typeof import('@temporalio/envconfig');
  const profileName = env.TEMPORAL_PROFILE ?? 'default';
  let fromFile: import('@temporalio/envconfig').ClientConfigProfile;
  let merged: import('@temporalio/envconfig').ClientConfigProfile;
  try {
    // Strict: a misspelt key in a security setting must not pass silently.
    fromFile = fileExists ? envconfig.loadClientConfigProfile({ overrideEnvVars: env, disableEnv: true, configFileStrict: true }) : {};
    merged = envconfig.loadClientConfigProfile({ overrideEnvVars: env, disableFile: !fileExists, configFileStrict: true });
  } catch (err) {
    const message = (err as Error).message;
    if (/^Profile '.*' not found/.test(message)) {
      const names = Object.keys(envconfig.loadClientConfig({ overrideEnvVars: env, configFileStrict: false }).profiles);
      problems.push(`TEMPORAL_PROFILE=${JSON.stringify(profileName)} is invalid: ${fileName} has no [profile.${profileName}] (it has ${names.length ? names.map((n) => `"${n}"`).join(', ') : 'none'})`);
    } else {
      problems.push(`${explicitFile !== undefined ? 'TEMPORAL_CONFIG_FILE' : 'The Temporal configuration file'} ${JSON.stringify(file)} is invalid: ${message}`);
    }
    return undefined;
  }
  const inFile = (key: string) => `${key} of [profile.${profileName}] in ${fileName}`;
  const before = problems.length;

  let address = c.TEMPORAL_ADDRESS;
  let addressFrom = env.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : 'the local default';
  if (env.TEMPORAL_ADDRESS === undefined && fromFile.address !== undefined) {
    const parsed = hostPort.safeParse(fromFile.address);
    if (parsed.success) [address, addressFrom] = [parsed.data, inFile('address')];
    else problems.push(`${inFile('address')} is invalid: expected host:port, got ${JSON.stringify(fromFile.address)}`);
  }
  let namespace = c.TEMPORAL_NAMESPACE;
  if (env.TEMPORAL_NAMESPACE === undefined && fromFile.namespace !== undefined) {
    if (fromFile.namespace.trim() !== '') namespace = fromFile.namespace.trim();
    else problems.push(`${inFile('namespace')} is invalid: expected a namespace name`);
  }
  if (env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION !== undefined) {
    problems.push('TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is not supported: the Temporal TypeScript SDK always verifies the server; set TEMPORAL_TLS_SERVER_NAME to the name in its certificate instead');
  }

  let tls: TemporalTls | false | undefined;
  const t = merged.tls;
  if (t?.disabled === true) tls = false;
  else if (t !== undefined) {
    /** Reads one certificate or key source; the origin named is the variable when it came from one, else the profile key. */
    const read = (field: TlsField, source: import('@temporalio/envconfig').ConfigDataSource | undefined, check: (pem: Buffer) => void): Buffer | undefined => {
      if (source === undefined) return undefined;
      const isPath = 'path' in source;
      const origin = env[`${TLS_ENV[field]}_${isPath ? 'PATH' : 'DATA'}`] !== undefined ? `${TLS_ENV[field]}_${isPath ? 'PATH' : 'DATA'}` : inFile(`tls.${field}_${isPath ? 'path' : 'data'}`);
      let pem: Buffer;
      try {
        pem = isPath ? readFileSync(source.path) : Buffer.from(source.data);
      } catch (err) {
        problems.push(`${origin}=${JSON.stringify(isPath ? source.path : '…')} is invalid: cannot read it (${readProblem(err)})`);
        return undefined;
      }
      try {
        check(pem);
      } catch (err) {
        const what = field === 'client_key' ? 'a PEM private key' : 'a PEM certificate';
        problems.push(`${origin}${isPath ? `=${JSON.stringify(source.path)}` : ''} is invalid: expected ${what} (${(err as Error).message})`);
        return undefined;
      }
      return pem;
    };
    const ca = read('server_ca_cert', t.serverCACert, (pem) => new X509Certificate(pem));
    const crt = read('client_cert', t.clientCert, (pem) => new X509Certificate(pem));
    const key = read('client_key', t.clientKey, (pem) => createPrivateKey(pem));
    if ((t.clientCert === undefined) !== (t.clientKey === undefined)) {
      problems.push(
        t.clientCert === undefined
          ? 'TEMPORAL_TLS_CLIENT_KEY_PATH (or its profile key) is set without a client certificate: set TEMPORAL_TLS_CLIENT_CERT_PATH too'
          : 'TEMPORAL_TLS_CLIENT_CERT_PATH (or its profile key) is set without its private key: set TEMPORAL_TLS_CLIENT_KEY_PATH too',
      );
    } else if (crt && key && !new X509Certificate(crt).checkPrivateKey(createPrivateKey(key))) {
      problems.push('TEMPORAL_TLS_CLIENT_KEY_PATH does not belong to TEMPORAL_TLS_CLIENT_CERT_PATH: the private key does not match the certificate');
    }
    tls = {
      ...(t.serverName ? { serverNameOverride: t.serverName } : {}),
      ...(ca ? { serverRootCACertificate: ca } : {}),
      ...(crt && key ? { clientCertPair: { crt, key } } : {}),
    };
  } else if (merged.apiKey !== undefined) tls = {}; // as the SDK does: an API key means TLS unless it is turned off

  if (problems.length > before || address === undefined || namespace === undefined) return undefined;
  return {
    address,
    namespace,
    addressFrom,
    ...(merged.apiKey !== undefined ? { apiKey: merged.apiKey } : {}),
    ...(tls !== undefined ? { tls } : {}),
    ...(merged.grpcMeta && Object.keys(merged.grpcMeta).length > 0 ? { metadata: merged.grpcMeta } : {}),
    // The profile named in messages: one that exists in the file (an absent default profile is no profile).
    ...(fileExists && (env.TEMPORAL_PROFILE !== undefined || Object.keys(fromFile).length > 0) ? { profile: { name: profileName, file: file! } } : {}),
  };
}

/** The user name a PostgreSQL URL connects as ('' when it names none). */
export function databaseUser(databaseUrl: string): string {
  try {
    return decodeURIComponent(new URL(databaseUrl).username);
  } catch {
    return '';
  }
}

/** The two PostgreSQL URLs and the CA file, checked together. */
function databaseProblems(c: Partial<Config>): string[] {
  const problems: string[] = [];
  if (c.DATABASE_URL !== undefined && c.DATABASE_MIGRATION_URL !== undefined) {
    const runtime = databaseUser(c.DATABASE_URL);
    const owner = databaseUser(c.DATABASE_MIGRATION_URL);
    if (runtime !== '' && runtime === owner) {
      problems.push(
        `DATABASE_URL and DATABASE_MIGRATION_URL both connect as ${JSON.stringify(runtime)}: the service must run as a runtime role that owns ` +
          'nothing, so expected DATABASE_MIGRATION_URL to name the owner role that applies the migrations and DATABASE_URL another role',
      );
    }
  }
  if (c.DATABASE_SSL_CA_FILE !== undefined) {
    for (const name of ['DATABASE_URL', 'DATABASE_MIGRATION_URL'] as const) {
      const value = c[name];
      if (value === undefined) continue;
      const params = new URL(value).searchParams;
      const mode = params.get('sslmode');
      if (mode === 'disable' || mode === 'no-verify') {
        problems.push(`${name} has sslmode=${mode}, which contradicts DATABASE_SSL_CA_FILE (verify the server against that CA): expected sslmode verify-full, require or none`);
      }
      if (params.has('sslrootcert')) {
        problems.push(`${name} names a CA itself (sslrootcert) and DATABASE_SSL_CA_FILE names one too: expected only one of them`);
      }
    }
  }
  return problems;
}
