/**
 * The one place that reads the environment. Every variable is validated here, so a bad value fails at start-up with a
 * message naming the variable and what was expected, never later at first use. The variables are declared by concern in
 * src/base/config/ — the service, Kafka, Temporal, PostgreSQL, the worker, its continuous reconciliation, status events
 * out, the bridge, tracing, encryption, the CLI's servers, tenants' weights — each with its own checks over several of
 * its variables; loadConfig reads them all and reports every problem at once.
 */
import { z } from 'zod';
import { bridgeSchema } from './config/bridge-settings.js';
import { cliSchema, codecServerProblems } from './config/cli-settings.js';
import { encryptionSchema, payloadKeys } from './config/encryption-settings.js';
import { shown } from './config/fields.js';
import { kafkaSchema, kafkaSecurityProblems } from './config/kafka-settings.js';
import { databaseProblems, ledgerRetentionProblems, postgresSchema } from './config/postgres-settings.js';
import { processSchema } from './config/process-settings.js';
import { reconcileProblems, reconcileSchema } from './config/reconcile-settings.js';
import { statusSchema } from './config/status-settings.js';
import { tenantsSchema } from './config/tenant-settings.js';
import { temporalSchema, temporalSettings, type TemporalSettings } from './config/temporal-settings.js';
import { tracingProblems, tracingSchema } from './config/tracing-settings.js';
import { workerSchema, workerTuningProblems } from './config/worker-settings.js';
import type { PayloadKeys } from './config/payload-keys.js';

export { durationMs, SECRET_VARIABLES } from './config/fields.js';
export {
  KAFKA_SASL_MECHANISMS,
  KAFKA_SECURITY_PROTOCOLS,
  KAFKA_SETTING_NAMES,
  type KafkaSettings,
} from './config/kafka-settings.js';
export {
  LEDGER_RETENTION_FLOOR_DAYS,
  LOCAL_DATABASE_MIGRATION_URL,
  LOCAL_DATABASE_URL,
  databaseUser,
} from './config/postgres-settings.js';
export { isTemporalEnvconfigVariable, type TemporalSettings, type TemporalTls } from './config/temporal-settings.js';
export { OTEL_TRACES_EXPORTERS, OTEL_TRACES_SAMPLERS, OTLP_PROTOCOLS } from './config/tracing-settings.js';

/** Environment variable name → schema with its default, every concern's. Also the list the docker-compose test checks against. */
export const configSchema = {
  ...processSchema,
  ...kafkaSchema,
  ...temporalSchema,
  ...postgresSchema,
  ...workerSchema,
  ...reconcileSchema,
  ...statusSchema,
  ...bridgeSchema,
  ...encryptionSchema,
  ...cliSchema,
  ...tracingSchema,
  ...tenantsSchema,
};

/** Each concern's checks over several of its variables (src/base/config/*.ts). */
const CROSS_FIELD_CHECKS: ((c: Partial<Config>, invalid: ReadonlySet<string>) => string[])[] = [
  databaseProblems,
  ledgerRetentionProblems,
  kafkaSecurityProblems,
  tracingProblems,
  workerTuningProblems,
  reconcileProblems,
  codecServerProblems,
];

export type Config = Omit<
  { [K in keyof typeof configSchema]: z.output<(typeof configSchema)[K]> },
  'DATABASE_MIGRATION_URL'
> & {
  /** Undefined when DATABASE_URL is set and DATABASE_MIGRATION_URL is not: provisioning's PostgreSQL step then refuses. */
  DATABASE_MIGRATION_URL: string | undefined;
  /** How to reach Temporal: TEMPORAL_* variables over the envconfig profile; src/domain/temporal.ts turns it into connection options. */
  temporal: TemporalSettings;
  /** The payload encryption keys (PAYLOAD_ENCRYPTION_KEYS or _FILE, PAYLOAD_ENCRYPTION_KEY_ID); undefined: encryption off. */
  payloadEncryption: PayloadKeys | undefined;
};

/** Thrown when the environment holds a value the service cannot run with. */
export class ConfigError extends Error {}

/**
 * Addresses with a local-stack default that production mode (NODE_ENV=production) requires to be set: a service
 * deployed somewhere real must never fall back to 127.0.0.1 (or ship orders to the fake warehouse).
 */
export const PRODUCTION_REQUIRED = [
  'KAFKA_BROKERS',
  'TEMPORAL_ADDRESS',
  'DATABASE_URL',
  'WAREHOUSE_URL',
] as const satisfies readonly (keyof typeof configSchema)[];

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
      problems.push(
        `${name} is not set: required when NODE_ENV=production (there are no local defaults in production)`,
      );
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
  const partial = out as Partial<Config>;
  const invalid = new Set(Object.keys(configSchema).filter((n) => !(n in out)));
  // Each concern's own checks over several of its variables, made when each variable involved is valid on its own.
  for (const check of CROSS_FIELD_CHECKS) problems.push(...check(partial, invalid));
  const temporal = temporalSettings(env, out as Partial<Config>, problems);
  if (temporal && required.has('TEMPORAL_ADDRESS') && temporal.addressFrom === 'the local default') {
    problems.push(
      'TEMPORAL_ADDRESS is not set: required when NODE_ENV=production (there are no local defaults in production), unless a Temporal configuration profile (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE) gives the address',
    );
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
