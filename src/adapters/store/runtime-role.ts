/**
 * What the service checks about its own PostgreSQL role before it works, and the schema version its code needs.
 * Row-level security keeps one tenant's transaction away from another tenant's rows only for a role it binds: not a
 * superuser, not a BYPASSRLS role, and not the tables' owner (who could switch it off with ALTER TABLE … NO FORCE
 * / DISABLE ROW LEVEL SECURITY) nor a member of the owner's role. Such a role is refused at start-up, for good.
 */
import type pg from 'pg';
import { databaseUser } from '../../base/config.js';
import { PermanentStartupError } from '../../base/startup.js';
import { pendingMigrations } from './migrate.js';
import { sqlState } from './sql-errors.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** The tables the service works on (resolved through the session's search_path, as its queries are). */
export const SERVICE_TABLES = ['fulfilments', 'processed_events', 'status_outbox', 'schema_migrations'] as const;

const WHAT_TO_DO =
  'Point DATABASE_URL at the runtime role (LOGIN, NOSUPERUSER, NOBYPASSRLS, owning nothing) and let `fulfilment provision` ' +
  '(as DATABASE_MIGRATION_URL, the owner) grant it what it needs; see docs/security.md "PostgreSQL roles".';

/** Refuses (PermanentStartupError) a role row-level security does not bind; resolves with the role's name otherwise. */
export async function checkRuntimeRole(db: Queryable): Promise<string> {
  const role = (
    await db.query<{ name: string; super: boolean; bypass: boolean }>(
      'SELECT rolname AS name, rolsuper AS super, rolbypassrls AS bypass FROM pg_roles WHERE rolname = current_user',
    )
  ).rows[0];
  if (!role) throw new Error('PostgreSQL: current_user is not in pg_roles');
  const who = `DATABASE_URL connects as ${JSON.stringify(role.name)}`;
  if (role.super) {
    throw new PermanentStartupError(
      `refusing to run: ${who}, a superuser, which row-level security does not bind (every tenant's rows are open to it). ${WHAT_TO_DO}`,
    );
  }
  if (role.bypass) {
    throw new PermanentStartupError(
      `refusing to run: ${who}, a role with BYPASSRLS, which row-level security does not bind (every tenant's rows are open to it). ${WHAT_TO_DO}`,
    );
  }
  const owned = (
    await db.query<{ name: string; owner: string }>(
      // In the order of SERVICE_TABLES, then the schema: the message reads the same whatever plan the join takes.
      `SELECT name, owner FROM (
         SELECT t.name, pg_get_userbyid(c.relowner) AS owner, t.n
           FROM unnest($1::text[]) WITH ORDINALITY AS t(name, n) JOIN pg_class c ON c.oid = to_regclass(t.name)
          WHERE pg_has_role(current_user, c.relowner, 'MEMBER')
         UNION ALL
         SELECT 'schema ' || ns.nspname, pg_get_userbyid(ns.nspowner), NULL
           FROM pg_namespace ns
          WHERE ns.oid = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass('fulfilments'))
            AND pg_has_role(current_user, ns.nspowner, 'MEMBER')
       ) owned ORDER BY n NULLS LAST`,
      [[...SERVICE_TABLES]],
    )
  ).rows;
  if (owned.length > 0) {
    const list = owned
      .map((o) => `${o.name} (owner ${o.owner}${o.owner === role.name ? '' : `, of which ${role.name} is a member`})`)
      .join(', ');
    throw new PermanentStartupError(
      `refusing to run: ${who}, which owns or is a member of the owner of ${list}: an owner can drop row-level security ` +
        `(ALTER TABLE … NO FORCE / DISABLE ROW LEVEL SECURITY) or the tables themselves. ${WHAT_TO_DO}`,
    );
  }
  return role.name;
}

/** Thrown while the schema is behind the code: provisioning has not applied every migration yet (waiting helps). */
export class SchemaBehindError extends Error {
  override name = 'SchemaBehindError';
}

/** Resolves once every migration this code ships with is applied; a SchemaBehindError naming the missing ones else. */
export async function checkSchema(db: Queryable): Promise<void> {
  let pending: string[];
  try {
    pending = await pendingMigrations(db);
  } catch (err) {
    // 42P01 undefined_table: nothing provisioned yet; 42501 insufficient_privilege: not granted yet.
    const code = sqlState(err);
    if (code === '42P01' || code === '42501') {
      throw new SchemaBehindError(
        `the schema is not provisioned (${(err as Error).message}): run \`fulfilment provision\` (or \`--only postgres\`) as DATABASE_MIGRATION_URL`,
        { cause: err },
      );
    }
    throw err;
  }
  if (pending.length > 0) {
    throw new SchemaBehindError(
      `the schema lacks migrations ${pending.join(', ')} that this code needs: run \`fulfilment provision\` (or \`--only postgres\`) as DATABASE_MIGRATION_URL`,
    );
  }
}

/** TLS failures of the server's certificate (Node's codes): a wrong CA or host name, which waiting cannot cure. */
const UNTRUSTED_CERTIFICATE = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * A PostgreSQL failure at start-up that waiting cannot cure, as a PermanentStartupError saying what to check: the
 * login refused (wrong password, no such role, not allowed to log in) or the server's certificate not trusted.
 * Undefined for anything else (PostgreSQL down, restarting: keep waiting).
 */
export function permanentDatabaseFailure(
  err: unknown,
  config: { DATABASE_URL: string; DATABASE_SSL_CA_FILE?: string },
): PermanentStartupError | undefined {
  const code = sqlState(err) ?? (err as { code?: unknown } | null)?.code;
  const user = databaseUser(config.DATABASE_URL);
  if (code === '28P01' || code === '28000') {
    return new PermanentStartupError(
      `PostgreSQL refused the login of DATABASE_URL${user ? ` (role ${JSON.stringify(user)})` : ''}: ${(err as Error).message}. Check the role and its password.`,
      { cause: err },
    );
  }
  if (typeof code === 'string' && UNTRUSTED_CERTIFICATE.has(code)) {
    const against = config.DATABASE_SSL_CA_FILE
      ? `the CA in DATABASE_SSL_CA_FILE=${config.DATABASE_SSL_CA_FILE}`
      : 'the system CAs (DATABASE_SSL_CA_FILE is unset)';
    return new PermanentStartupError(
      `PostgreSQL's server certificate is not trusted: ${(err as Error).message} (${code}), verified against ${against} and the host name in DATABASE_URL. ` +
        'Set DATABASE_SSL_CA_FILE to the CA that signed the server certificate, and connect by a name the certificate holds.',
      { cause: err },
    );
  }
  return undefined;
}
