/**
 * Everything the runtime role (the user of DATABASE_URL) may do, as data, and the step that makes the database say
 * exactly that. Run by provisioning as the owner after the migrations, every time (it changes only what differs), so
 * a new runtime role, or one that collected more than this, is brought in step by the next `fulfilment provision`.
 *
 * What the service does, and so needs: claims in processed_events (INSERT … ON CONFLICT DO NOTHING) and reads there
 * (the redelivery's report); reads, inserts and updates fulfilments (SELECT … FOR UPDATE needs UPDATE); writes status
 * events into status_outbox and reads them there (`fulfilment status tail`), tenant-scoped; reads schema_migrations
 * (the worker waits for the schema its code needs); calls prune_processed_events (ledger retention, the one way to
 * delete ledger rows), orders_needing_attention (counts of held orders over every tenant, for the metrics) and the
 * status relay's functions of migration 007 (the one way to read, mark and prune outbox rows across tenants), and
 * migration 008's orders_waiting_summary, 009's release_waiting_orders and unrelease_waiting_order and 010's
 * mark_waiting_order_run_gone (counts of orders waiting for the warehouse, and the resumers' wake-ups across tenants); reads, inserts and updates shipping_pauses
 * (`fulfilment shipping pause`).
 * Nothing else: no DELETE, TRUNCATE, REFERENCES or TRIGGER, no ownership.
 */
import type pg from 'pg';

type Queryable = Pick<pg.ClientBase, 'query'>;

export const TABLE_PRIVILEGES = ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'] as const;
type TablePrivilege = (typeof TABLE_PRIVILEGES)[number];

/** The runtime role's privileges, table by table, and the functions it may call. */
export const RUNTIME_PRIVILEGES: { tables: Record<string, TablePrivilege[]>; functions: string[] } = {
  tables: {
    fulfilments: ['SELECT', 'INSERT', 'UPDATE'],
    processed_events: ['SELECT', 'INSERT'],
    status_outbox: ['SELECT', 'INSERT'],
    schema_migrations: ['SELECT'],
    shipping_pauses: ['SELECT', 'INSERT', 'UPDATE'],
  },
  functions: [
    'prune_processed_events(interval, integer)',
    'orders_needing_attention()',
    'status_relay_try_lead(text)',
    'status_outbox_unsent(text, integer)',
    'status_outbox_mark_sent(text, bigint[])',
    'status_outbox_lag(text)',
    'prune_status_outbox(interval, integer)',
    'orders_waiting_summary()',
    'release_waiting_orders(integer, text, boolean, text, integer, text)',
    'unrelease_waiting_order(text, text, timestamp with time zone)',
    'mark_waiting_order_run_gone(text, text, timestamp with time zone)',
  ],
};

export interface GrantChanges {
  /** What was granted, e.g. `SELECT ON fulfilments`, `USAGE ON SCHEMA public`. */
  granted: string[];
  /** What was revoked (direct grants beyond RUNTIME_PRIVILEGES). */
  revoked: string[];
}

const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;

/** Grants `role` what RUNTIME_PRIVILEGES lists and revokes any other direct table privilege; returns what changed. */
export async function syncRuntimeGrants(db: Queryable, role: string): Promise<GrantChanges> {
  const changes: GrantChanges = { granted: [], revoked: [] };
  const schema = (
    await db.query<{ schema: string }>(
      "SELECT relnamespace::regnamespace::text AS schema FROM pg_class WHERE oid = to_regclass('fulfilments')",
    )
  ).rows[0]?.schema;
  if (!schema) throw new Error('table fulfilments not found: apply the migrations first');
  const usage = await db.query<{ ok: boolean }>('SELECT has_schema_privilege($1, $2, $3) AS ok', [
    role,
    schema,
    'USAGE',
  ]);
  if (!usage.rows[0]?.ok) {
    await db.query(`GRANT USAGE ON SCHEMA ${schema} TO ${ident(role)}`);
    changes.granted.push(`USAGE ON SCHEMA ${schema}`);
  }
  for (const [table, wanted] of Object.entries(RUNTIME_PRIVILEGES.tables)) {
    const direct = new Set(
      (
        await db.query<{ privilege: string }>(
          `SELECT a.privilege_type AS privilege FROM pg_class c, aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a
            WHERE c.oid = to_regclass($1) AND a.grantee = (SELECT oid FROM pg_roles WHERE rolname = $2)`,
          [table, role],
        )
      ).rows.map((r) => r.privilege),
    );
    const grant = wanted.filter((p) => !direct.has(p));
    const revoke = TABLE_PRIVILEGES.filter((p) => direct.has(p) && !wanted.includes(p));
    if (grant.length) await db.query(`GRANT ${grant.join(', ')} ON TABLE ${ident(table)} TO ${ident(role)}`);
    if (revoke.length) await db.query(`REVOKE ${revoke.join(', ')} ON TABLE ${ident(table)} FROM ${ident(role)}`);
    changes.granted.push(...grant.map((p) => `${p} ON ${table}`));
    changes.revoked.push(...revoke.map((p) => `${p} ON ${table}`));
  }
  for (const fn of RUNTIME_PRIVILEGES.functions) {
    const ok = await db.query<{ ok: boolean }>('SELECT has_function_privilege($1, $2, $3) AS ok', [
      role,
      fn,
      'EXECUTE',
    ]);
    if (!ok.rows[0]?.ok) {
      await db.query(`GRANT EXECUTE ON FUNCTION ${fn} TO ${ident(role)}`);
      changes.granted.push(`EXECUTE ON FUNCTION ${fn}`);
    }
  }
  return changes;
}
