/**
 * Provisioning of the schema, run as the owner role (DATABASE_MIGRATION_URL) and never by the service: applies the
 * checked-in SQL migrations (migrations/NNN_name.sql) in name order, each in its own transaction, then brings the
 * runtime role's privileges (src/adapters/store/grants.ts) in step — both under one advisory lock, so several
 * provisioning runs at once apply each file exactly once and never grant concurrently. Schema changes happen only here.
 */
import { readdir, readFile } from 'node:fs/promises';
import pg from 'pg';
import { packagePath } from '../../base/package-root.js';
import { syncRuntimeGrants, type GrantChanges } from './grants.js';

const MIGRATIONS_DIR = packagePath('migrations');
/** Arbitrary constant naming this project's migration lock. */
const LOCK_KEY = 74_110_203;

type Queryable = Pick<pg.ClientBase, 'query'>;

/** The migration files this code ships with, in the order they apply: the schema version it needs is all of them. */
export async function migrationFiles(dir = MIGRATIONS_DIR): Promise<string[]> {
  return (await readdir(dir)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
}

/** The migrations this code ships with that `db` has not applied (rejects when schema_migrations is missing). */
export async function pendingMigrations(db: Queryable, dir = MIGRATIONS_DIR): Promise<string[]> {
  const done = new Set(
    (await db.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name),
  );
  return (await migrationFiles(dir)).filter((f) => !done.has(f));
}

export interface MigrationResult {
  /** Migration files applied by this run (none when the schema was up to date). */
  applied: string[];
  /** The runtime role's privileges granted or revoked by this run. */
  grants: GrantChanges;
}

/**
 * Applies what is missing, as the role of `connection` (the owner), and grants `runtimeRole` what the service needs.
 * `runtimeRole` is also handed to the migrations as the setting fulfilment.service_role (004 grants to it).
 */
export async function migrate(
  connection: pg.ClientConfig,
  runtimeRole: string,
  dir = MIGRATIONS_DIR,
): Promise<MigrationResult> {
  const client = new pg.Client(connection);
  client.on('error', () => undefined);
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    const role = await client.query<{ owner: string; exists: boolean }>(
      'SELECT current_user AS owner, EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AS exists',
      [runtimeRole],
    );
    const { owner, exists } = role.rows[0]!;
    if (runtimeRole === owner)
      throw new Error(
        `the runtime role ${JSON.stringify(runtimeRole)} (DATABASE_URL) is the role applying the migrations (DATABASE_MIGRATION_URL): expected two roles, the owner and a runtime role that owns nothing`,
      );
    if (!exists)
      throw new Error(
        `the runtime role ${JSON.stringify(runtimeRole)} (the user of DATABASE_URL) does not exist: create it first (CREATE ROLE ${runtimeRole} LOGIN PASSWORD '…' NOSUPERUSER NOBYPASSRLS)`,
      );
    await client.query("SELECT set_config('fulfilment.service_role', $1, false)", [runtimeRole]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const pending = await pendingMigrations(client, dir);
    for (const file of pending) {
      const sql = await readFile(`${dir}/${file}`, 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
        await client.query('COMMIT');
        applied.push(file);
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${file} failed: ${(err as Error).message}`, { cause: err });
      }
    }
    const grants = await syncRuntimeGrants(client, runtimeRole);
    return { applied, grants };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}
