/**
 * How the service reaches PostgreSQL: the runtime role's URL (DATABASE_URL) for everything it does, the owner's
 * (DATABASE_MIGRATION_URL) for provisioning only, and for both the CA of DATABASE_SSL_CA_FILE when it is set.
 */
import type pg from 'pg';
import { ConfigError, type Config } from '../../base/config.js';

/** The configuration a connection needs. */
export type DatabaseSettings = Pick<Config, 'DATABASE_URL' | 'DATABASE_MIGRATION_URL' | 'DATABASE_SSL_CA_FILE'>;

/**
 * pg's client options for `url`. With a CA file, TLS is required and the server's certificate and host name are
 * verified against it (`sslrootcert`, read by pg; sslmode verify-full unless the URL says require or verify-ca,
 * which pg treats the same). Without one, the URL's own sslmode applies unchanged.
 */
export function connectionOptions(url: string, caFile?: string): pg.ClientConfig {
  if (caFile === undefined) return { connectionString: url };
  const u = new URL(url);
  u.searchParams.set('sslrootcert', caFile);
  if (!u.searchParams.has('sslmode')) u.searchParams.set('sslmode', 'verify-full');
  return { connectionString: u.toString() };
}

/** The runtime role's connection (DATABASE_URL). */
export function runtimeConnection(config: DatabaseSettings): pg.ClientConfig {
  return connectionOptions(config.DATABASE_URL, config.DATABASE_SSL_CA_FILE);
}

/** The owner role's connection (DATABASE_MIGRATION_URL), for provisioning only; a ConfigError when it is not set. */
export function migrationConnection(config: DatabaseSettings): pg.ClientConfig {
  if (config.DATABASE_MIGRATION_URL === undefined) {
    throw new ConfigError(
      'DATABASE_MIGRATION_URL is not set: provisioning applies the migrations as the role that owns the tables, so expected ' +
        'DATABASE_MIGRATION_URL=postgres://<owner>:<password>@<host>/<database> beside DATABASE_URL (the runtime role)',
    );
  }
  return connectionOptions(config.DATABASE_MIGRATION_URL, config.DATABASE_SSL_CA_FILE);
}
