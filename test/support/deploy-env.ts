/**
 * Shared by the tests of the deployment artefacts (docker-compose.yml, deploy/kubernetes/): is an environment
 * variable one the service knows, and is its value one src/config.ts accepts.
 */
import { configSchema } from '../../src/config.js';

/**
 * Variables of the production configuration (Kafka TLS/SASL, Temporal TLS and API keys through
 * @temporalio/envconfig, the PostgreSQL owner role, production mode, the shutdown deadline) that the artefacts already
 * use while src/config.ts may not define them yet. Tolerated by name only while they are missing from configSchema;
 * once one is there, its values are checked like any other. Nothing else is tolerated: remove a name here once it is
 * in src/config.ts on main.
 */
export const PLANNED_CONFIG_NAMES = [
  'NODE_ENV',
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
  'KAFKA_REPLICATION_FACTOR',
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_PROFILE',
  'TEMPORAL_CONFIG_FILE',
  'DATABASE_MIGRATION_URL',
  'DATABASE_SSL_CA_FILE',
  'SHUTDOWN_DEADLINE_MS',
] as const;

/** Schemas by variable name, as src/config.ts validates them. */
const schemas: Record<string, { safeParse(value: unknown): { success: boolean } } | undefined> = configSchema;

/** A value naming a file inside the container (a certificate, a key, a module): its existence is the pod's business. */
const namesAFile = (name: string) => /_(FILE|PATH|PROVIDER)$/.test(name);

/**
 * Problems of one environment: names that are not variables of src/config.ts (nor planned ones still missing there),
 * and values it rejects. `values: false` checks names only (a secret's placeholders).
 */
export function envProblems(where: string, env: Record<string, string | undefined>, opts: { values?: boolean } = {}): string[] {
  return Object.entries(env).flatMap(([name, value]) => {
    const schema = schemas[name];
    if (!schema) return (PLANNED_CONFIG_NAMES as readonly string[]).includes(name) ? [] : [`${where}: ${name} is not a variable of src/config.ts`];
    if (value === undefined) return [`${where}: ${name} has no value`];
    if (opts.values === false || namesAFile(name)) return [];
    return schema.safeParse(value).success ? [] : [`${where}: ${name}=${JSON.stringify(value)} is rejected by src/config.ts`];
  });
}

/** SHUTDOWN_DEADLINE_MS as the service reads it from `env` (its default when unset). */
export function shutdownDeadlineMs(env: Record<string, string | undefined>): number {
  const schema = (configSchema as Record<string, { parse(v: unknown): unknown } | undefined>).SHUTDOWN_DEADLINE_MS;
  if (schema) return Number(schema.parse(env.SHUTDOWN_DEADLINE_MS));
  // Until the shutdown deadline lands in src/config.ts: its planned default.
  return env.SHUTDOWN_DEADLINE_MS === undefined ? 30_000 : Number(env.SHUTDOWN_DEADLINE_MS);
}
