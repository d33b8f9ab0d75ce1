/** PostgreSQL: the runtime role's and the owner's URLs and the CA, checked together; the dedupe ledger's retention. */
import { z } from 'zod';
import { duration, nonEmpty, pemCertificateFile, positiveInt, url, type FieldsOf } from './fields.js';
import type { kafkaSchema } from './kafka-settings.js';

/** The local stack's runtime role (dev-only password). */
export const LOCAL_DATABASE_URL = 'postgres://fulfilment:fulfilment@127.0.0.1:55432/fulfilment';
/** The local stack's owner role, which applies the migrations (dev-only password). */
export const LOCAL_DATABASE_MIGRATION_URL = 'postgres://fulfilment_owner:fulfilment_owner@127.0.0.1:55432/fulfilment';

/**
 * The store's own floor for the dedupe ledger's retention, in days: prune_processed_events (migration
 * 004_ledger_retention.sql) refuses anything shorter. Keep the two in step.
 */
export const LEDGER_RETENTION_FLOOR_DAYS = 21;

export const postgresSchema = {
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
  /** Days the dedupe ledger (processed_events) keeps a row; pruned by the ledger-retention schedule. Default 30. */
  LEDGER_RETENTION_DAYS: positiveInt.default(30),
  /** Days after Kafka retention within which an event may still come back (DLQ redrives, redeliveries). Default 14. */
  REDRIVE_WINDOW_DAYS: z.coerce
    .number({ invalid_type_error: 'a whole number of days ≥ 0' })
    .int('a whole number of days ≥ 0')
    .min(0, 'a whole number of days ≥ 0')
    .default(14),
  /** How often the ledger-retention schedule prunes (`30m`, `1h`, `1d`, at least 1m); `0`: this worker leaves the schedule alone. */
  LEDGER_PRUNE_INTERVAL: duration.default('1h'),
  /** Rows deleted per call of prune_processed_events (one short transaction each), 1–10000. */
  LEDGER_PRUNE_BATCH: z.coerce
    .number({ invalid_type_error: 'a whole number 1–10000' })
    .int('a whole number 1–10000')
    .min(1, 'a whole number 1–10000')
    .max(10_000, 'a whole number 1–10000')
    .default(1000),
  /** Id of the Temporal Schedule that prunes the ledger: one per deployment (namespace and task queue). */
  LEDGER_PRUNE_SCHEDULE_ID: nonEmpty.default('fulfilment-ledger-retention'),
};

/** What this concern's variables parse to, and the Kafka retention the ledger's is checked against. */
type Config = FieldsOf<typeof postgresSchema> & Pick<FieldsOf<typeof kafkaSchema>, 'KAFKA_RETENTION_DAYS'>;

/** The user name a PostgreSQL URL connects as ('' when it names none). */
export function databaseUser(databaseUrl: string): string {
  try {
    return decodeURIComponent(new URL(databaseUrl).username);
  } catch {
    return '';
  }
}

/** The two PostgreSQL URLs and the CA file, checked together. */
export function databaseProblems(c: Partial<Config>): string[] {
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
        problems.push(
          `${name} has sslmode=${mode}, which contradicts DATABASE_SSL_CA_FILE (verify the server against that CA): expected sslmode verify-full, require or none`,
        );
      }
      if (params.has('sslrootcert')) {
        problems.push(
          `${name} names a CA itself (sslrootcert) and DATABASE_SSL_CA_FILE names one too: expected only one of them`,
        );
      }
    }
  }
  return problems;
}

export function ledgerRetentionProblems(c: Partial<Config>): string[] {
  const problems: string[] = [];
  if (
    c.LEDGER_RETENTION_DAYS === undefined ||
    c.KAFKA_RETENTION_DAYS === undefined ||
    c.REDRIVE_WINDOW_DAYS === undefined
  )
    return problems;
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
