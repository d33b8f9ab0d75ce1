/**
 * PostgreSQL least privilege on the real local stack. The service's runtime role (DATABASE_URL) cannot switch row-level
 * security off, cannot see or write another tenant's rows by any route it has, and owns nothing; the service refuses
 * to start as a superuser, a BYPASSRLS role, the tables' owner or a member of the owner's role, exiting non-zero at
 * once with the reason; provisioning (the real CLI, as DATABASE_MIGRATION_URL) builds a fresh database, the worker
 * waits for it, and a second run changes nothing.
 *
 * The refused roles are made for this file through the stack's own superuser (its Unix socket) and dropped after.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/base/config.js';
import { createKafka } from '../../src/adapters/kafka/client.js';
import { provisionPostgres } from '../../src/roles/provision/schema-and-grants.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { createDb, inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import { CONSUMER_NAME } from '../../src/vocabulary/order.js';
import { logger, uniqueSuffix } from '../support/harness.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { planFromEnv, superuserClient } from '../../tools/stack/index.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const SERVICE = fileURLToPath(new URL('../../src/service.ts', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/fulfilment.mjs', import.meta.url));
/** A child starts node, tsx and the Temporal SDK from cold: generous, for a loaded machine. */
const CHILD_MS = 180_000;

const config = loadConfig();
const suffix = uniqueSuffix('pgroles');
const tag = suffix.replace(/[^a-z0-9]/gi, '_').toLowerCase();
const tenantA = `pgr-a-${suffix}`.slice(0, 64);
const tenantB = `pgr-b-${suffix}`.slice(0, 64);
const statusTopic = `status.pgr.${suffix}`;
const PASSWORD = 'test-only-password';
const roles = { superuser: `pgr_super_${tag}`, bypass: `pgr_bypass_${tag}`, member: `pgr_member_${tag}` };
const freshDb = `fulfilment_pgr_${tag}`;

let db: Db;
let runtime: pg.Client;
let admin: pg.Client;

/** `url` as `user`, optionally in another database. */
function urlAs(url: string, user: string, password: string, database?: string): string {
  const u = new URL(url);
  u.username = user;
  u.password = password;
  if (database) u.pathname = `/${database}`;
  return u.toString();
}

/** The PostgreSQL error `promise` rejects with (fails when it resolves). */
async function refusal(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, 'expected PostgreSQL to refuse').toBeInstanceOf(Error);
  return err as { code?: string; message: string };
}

/** Base environment of a child: the suite's, with only what a test sets for PostgreSQL. */
function childEnv(extra: Record<string, string>): Record<string, string> {
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
  delete env.DATABASE_MIGRATION_URL;
  return {
    ...env,
    FULFILMENT_ROLES: 'worker',
    TEMPORAL_TASK_QUEUE: `pgroles-${suffix}`,
    LEDGER_PRUNE_INTERVAL: '0',
    STATUS_OUTBOX_PRUNE_INTERVAL: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    ...extra,
  };
}

/** Runs `node --import tsx <args>` to its end; its exit code and output. */
function runChild(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  await provisionPostgres(config);
  db = createDb(runtimeConnection(config), 2);
  runtime = new pg.Client(runtimeConnection(config));
  await runtime.connect();
  admin = await superuserClient(planFromEnv());
  await admin.query(`CREATE ROLE ${roles.superuser} LOGIN SUPERUSER PASSWORD '${PASSWORD}'`);
  await admin.query(`CREATE ROLE ${roles.bypass} LOGIN BYPASSRLS PASSWORD '${PASSWORD}'`);
  await admin.query(
    `CREATE ROLE ${roles.member} LOGIN PASSWORD '${PASSWORD}' IN ROLE ${new URL(config.DATABASE_MIGRATION_URL!).username}`,
  );
  // One row of each tenant in each table, written as the service writes them: inside the tenant's own transaction.
  for (const t of [tenantA, tenantB]) {
    await inTenantTransaction(db, t, async (tx) => {
      await tx.query(
        "INSERT INTO fulfilments (tenant_id, order_id, order_version, status, last_event_id) VALUES ($1, 'o-1', 1, 'pending', 'e-1')",
        [t],
      );
      await tx.query(
        "INSERT INTO processed_events (consumer, event_id, tenant_id, processed_at) VALUES ($1, 'e-old', $2, now() - interval '40 days')",
        [CONSUMER_NAME, t],
      );
      await tx.query(
        "INSERT INTO status_outbox (topic, tenant_id, order_id, event_id, event_type, payload, correlation_id) VALUES ($1, $2, 'o-1', gen_random_uuid(), 'fulfilment.Shipped', '{}', 'c-1')",
        [statusTopic, t],
      );
    });
  }
}, 60_000);

afterAll(async () => {
  await runtime?.end();
  await db?.end();
  if (admin) {
    await admin.query(`DROP DATABASE IF EXISTS ${freshDb} WITH (FORCE)`).catch(() => undefined);
    for (const r of Object.values(roles)) await admin.query(`DROP ROLE IF EXISTS ${r}`).catch(() => undefined);
    await admin.end();
  }
});

describe('the runtime role cannot get past row-level security', () => {
  it.each(['fulfilments', 'processed_events', 'status_outbox'])(
    '%s: NO FORCE and DISABLE ROW LEVEL SECURITY are refused (not the owner)',
    async (table) => {
      for (const sql of [
        `ALTER TABLE ${table} NO FORCE ROW LEVEL SECURITY`,
        `ALTER TABLE ${table} DISABLE ROW LEVEL SECURITY`,
      ]) {
        const err = await refusal(runtime.query(sql));
        expect(err.code, sql).toBe('42501');
        expect(err.message).toContain(`must be owner of table ${table}`);
      }
      const rls = await runtime.query<{ relrowsecurity: boolean; relforcerowsecurity: boolean }>(
        'SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = to_regclass($1)',
        [table],
      );
      expect(rls.rows[0]).toEqual({ relrowsecurity: true, relforcerowsecurity: true });
    },
  );

  it('nor drop a policy, the table, or delete and truncate rows', async () => {
    expect((await refusal(runtime.query('DROP POLICY tenant_scope ON fulfilments'))).code).toBe('42501');
    expect((await refusal(runtime.query('DROP TABLE fulfilments'))).code).toBe('42501');
    expect((await refusal(runtime.query('TRUNCATE processed_events'))).code).toBe('42501');
    expect(await refusal(inTenantTransaction(db, tenantA, (tx) => tx.query('DELETE FROM fulfilments')))).toMatchObject({
      code: '42501',
    });
  });

  it("another tenant's rows are invisible: not listed, not found by key, not counted", async () => {
    await inTenantTransaction(db, tenantA, async (tx) => {
      expect(
        (await tx.query('SELECT tenant_id FROM fulfilments WHERE tenant_id IN ($1, $2)', [tenantA, tenantB])).rows,
      ).toEqual([{ tenant_id: tenantA }]);
      expect(
        (await tx.query('SELECT tenant_id FROM processed_events WHERE tenant_id IN ($1, $2)', [tenantA, tenantB])).rows,
      ).toEqual([{ tenant_id: tenantA }]);
      expect(
        (await tx.query("SELECT 1 FROM fulfilments WHERE tenant_id = $1 AND order_id = 'o-1'", [tenantB])).rowCount,
      ).toBe(0);
    });
    // Without app.tenant_id nothing at all.
    expect((await runtime.query('SELECT count(*)::int AS n FROM fulfilments')).rows[0]).toEqual({ n: 0 });
  });

  it("another tenant's rows are unwritable: updates reach nothing, inserts under its id are refused", async () => {
    await inTenantTransaction(db, tenantA, async (tx) => {
      expect(
        (
          await tx.query("UPDATE fulfilments SET status = 'failed', failure_reason = 'x' WHERE tenant_id = $1", [
            tenantB,
          ])
        ).rowCount,
      ).toBe(0);
    });
    const insert = await refusal(
      inTenantTransaction(db, tenantA, (tx) =>
        tx.query(
          "INSERT INTO fulfilments (tenant_id, order_id, order_version, status, last_event_id) VALUES ($1, 'o-2', 1, 'pending', 'e')",
          [tenantB],
        ),
      ),
    );
    expect(insert.code).toBe('42501');
    expect(insert.message).toContain('row-level security');
    const claim = await refusal(
      inTenantTransaction(db, tenantA, (tx) =>
        tx.query("INSERT INTO processed_events (consumer, event_id, tenant_id) VALUES ('fulfilment', 'e-x', $1)", [
          tenantB,
        ]),
      ),
    );
    expect(claim.code).toBe('42501');
    // Moving its own row into the other tenant is refused as well.
    expect(
      (
        await refusal(
          inTenantTransaction(db, tenantA, (tx) =>
            tx.query('UPDATE fulfilments SET tenant_id = $1 WHERE tenant_id = $2', [tenantB, tenantA]),
          ),
        )
      ).code,
    ).toBe('42501');
    const b = await inTenantTransaction(db, tenantB, (tx) => tx.query('SELECT status FROM fulfilments'));
    expect(b.rows).toEqual([{ status: 'pending' }]);
  });

  it('SET row_security = off exposes nothing: the query is refused instead', async () => {
    const err = await refusal(
      inTenantTransaction(db, tenantA, async (tx) => {
        await tx.query('SET LOCAL row_security = off');
        return tx.query('SELECT tenant_id FROM fulfilments');
      }),
    );
    expect(err.code).toBe('42501');
    expect(err.message).toContain('row-level security');
  });

  it("the retention door stays shut: setting app.ledger_retention itself shows no other tenant's old rows", async () => {
    const seen = await inTenantTransaction(db, tenantA, async (tx) => {
      await tx.query("SELECT set_config('app.ledger_retention', 'prune', true)");
      return (
        await tx.query<{ tenant_id: string }>("SELECT tenant_id FROM processed_events WHERE event_id = 'e-old'")
      ).rows.map((r) => r.tenant_id);
    });
    expect(seen).toEqual([tenantA]);
  });

  it("the status outbox: events are neither updated nor deleted; the relay's door opens only to the session that leads", async () => {
    expect(
      await refusal(inTenantTransaction(db, tenantA, (tx) => tx.query('UPDATE status_outbox SET sent_at = now()'))),
    ).toMatchObject({ code: '42501' });
    expect(
      await refusal(inTenantTransaction(db, tenantA, (tx) => tx.query('DELETE FROM status_outbox'))),
    ).toMatchObject({ code: '42501' });
    // Setting the functions' own switch by hand opens nothing: their policies are the owner's.
    const seen = await inTenantTransaction(db, tenantA, async (tx) => {
      await tx.query("SELECT set_config('app.status_outbox', 'relay', true)");
      return (
        await tx.query<{ tenant_id: string }>('SELECT tenant_id FROM status_outbox WHERE topic = $1', [statusTopic])
      ).rows.map((r) => r.tenant_id);
    });
    expect(seen).toEqual([tenantA]);
    expect((await refusal(runtime.query('SELECT * FROM status_outbox_unsent($1, 10)', [statusTopic]))).code).toBe(
      '55P03',
    );
    expect(
      (await refusal(runtime.query('SELECT status_outbox_mark_sent($1, ARRAY[1]::bigint[])', [statusTopic]))).code,
    ).toBe('55P03');
    const lead = new pg.Client(runtimeConnection(config));
    await lead.connect();
    try {
      expect((await lead.query('SELECT status_relay_try_lead($1) AS ok', [statusTopic])).rows[0]).toEqual({ ok: true });
      expect((await runtime.query('SELECT status_relay_try_lead($1) AS ok', [statusTopic])).rows[0]).toEqual({
        ok: false,
      });
      const rows = await lead.query<{ tenant_id: string }>('SELECT tenant_id FROM status_outbox_unsent($1, 10)', [
        statusTopic,
      ]);
      expect(rows.rows.map((r) => r.tenant_id).sort()).toEqual([tenantA, tenantB].sort());
    } finally {
      await lead.end();
    }
  });

  it("is neither superuser nor BYPASSRLS, cannot create roles or databases, owns nothing; the prune function is the owner's, search_path pinned", async () => {
    const role = await runtime.query(
      'SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user',
    );
    expect(role.rows[0]).toEqual({ rolsuper: false, rolbypassrls: false, rolcreaterole: false, rolcreatedb: false });
    const owned = await runtime.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM pg_class WHERE relowner = r.oid) + (SELECT count(*) FROM pg_proc WHERE proowner = r.oid)
            + (SELECT count(*) FROM pg_namespace WHERE nspowner = r.oid) + (SELECT count(*) FROM pg_database WHERE datdba = r.oid) AS n
         FROM pg_roles r WHERE r.rolname = current_user`,
    );
    expect(Number(owned.rows[0]!.n)).toBe(0);
    const fn = await runtime.query(
      `SELECT p.prosecdef, p.proconfig, pg_get_userbyid(p.proowner) = t.tableowner AS owners_match
         FROM pg_proc p, pg_tables t WHERE p.proname = 'prune_processed_events' AND t.tablename = 'processed_events'`,
    );
    expect(fn.rows[0]).toEqual({ prosecdef: true, proconfig: ['search_path=pg_catalog, pg_temp'], owners_match: true });
    expect((await refusal(runtime.query('CREATE ROLE pgr_nope'))).code).toBe('42501');
  });
});

describe('start-up refuses a role row-level security does not bind, at once, exiting non-zero', () => {
  const owner = () => new URL(config.DATABASE_MIGRATION_URL!);
  it.each([
    [
      'a superuser',
      () => urlAs(config.DATABASE_URL, roles.superuser, PASSWORD),
      'a superuser, which row-level security does not bind',
    ],
    [
      'a BYPASSRLS role',
      () => urlAs(config.DATABASE_URL, roles.bypass, PASSWORD),
      'a role with BYPASSRLS, which row-level security does not bind',
    ],
    [
      "the tables' owner",
      () => urlAs(config.DATABASE_URL, decodeURIComponent(owner().username), decodeURIComponent(owner().password)),
      'which owns or is a member of the owner of fulfilments',
    ],
    [
      "a member of the owner's role",
      () => urlAs(config.DATABASE_URL, roles.member, PASSWORD),
      `of which ${roles.member} is a member`,
    ],
  ])(
    'as %s',
    async (_what, url, reason) => {
      const started = Date.now();
      const r = await runChild([SERVICE], childEnv({ DATABASE_URL: url() }));
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('refusing to run: DATABASE_URL connects as');
      expect(r.stderr).toContain(reason);
      expect(r.stderr).toContain('fulfilment provision');
      // The reason alone, no stack trace; and no retry loop: no "waiting for PostgreSQL" line.
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.stdout).not.toContain('waiting for PostgreSQL');
      expect(Date.now() - started).toBeLessThan(CHILD_MS);
    },
    CHILD_MS,
  );
});

describe('provisioning', () => {
  const freshEnv = () =>
    childEnv({
      DATABASE_URL: urlAs(
        config.DATABASE_URL,
        decodeURIComponent(new URL(config.DATABASE_URL).username),
        decodeURIComponent(new URL(config.DATABASE_URL).password),
        freshDb,
      ),
      DATABASE_MIGRATION_URL: urlAs(
        config.DATABASE_MIGRATION_URL!,
        decodeURIComponent(new URL(config.DATABASE_MIGRATION_URL!).username),
        decodeURIComponent(new URL(config.DATABASE_MIGRATION_URL!).password),
        freshDb,
      ),
      ORDERS_TOPIC: `orders.pgr.${suffix}`,
      DLQ_TOPIC: `dlq.pgr.${suffix}`,
      STATUS_TOPIC: `status.pgr.${suffix}`,
      ORDERS_TOPIC_PARTITIONS: '2',
      STATUS_TOPIC_PARTITIONS: '2',
    });
  let worker: ServiceProcess | undefined;

  afterAll(async () => {
    await worker?.stop();
    const kafkaAdmin = createKafka(config, logger, { clientId: `pgroles-${suffix}` }).admin();
    await kafkaAdmin.connect();
    await kafkaAdmin
      .deleteTopics({ topics: [freshEnv().ORDERS_TOPIC!, freshEnv().DLQ_TOPIC!, freshEnv().STATUS_TOPIC!] })
      .catch(() => undefined);
    await kafkaAdmin.disconnect();
  });

  it(
    'a worker on an unprovisioned database waits, naming the schema; provisioning builds it and the worker starts; a second run changes nothing',
    async () => {
      await admin.query(`CREATE DATABASE ${freshDb} OWNER ${new URL(config.DATABASE_MIGRATION_URL!).username}`);
      const env = freshEnv();
      worker = startServiceProcess(env);
      const waiting = await worker.said('waiting for the PostgreSQL schema', CHILD_MS);
      expect(String(waiting.err)).toContain('fulfilment provision');

      const first = await runChild([BIN, 'provision', '--json'], env);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      const one = JSON.parse(first.stdout) as {
        changed: boolean;
        kafka: { created: { topic: string; numPartitions: number }[] };
        postgres: { applied: string[]; grants: { granted: string[] } };
      };
      expect(one.changed).toBe(true);
      expect(one.kafka.created).toEqual([
        { topic: env.ORDERS_TOPIC, numPartitions: 2 },
        { topic: env.DLQ_TOPIC, numPartitions: 3 },
        { topic: env.STATUS_TOPIC, numPartitions: 2 },
      ]);
      expect(one.postgres.applied).toEqual([
        '001_fulfilments.sql',
        '002_tenant_scoped_ledger.sql',
        '003_order_retries.sql',
        '004_ledger_retention.sql',
        '005_owner_and_runtime_roles.sql',
        '006_orders_needing_attention.sql',
        '007_status_outbox.sql',
        '008_shipment_waits.sql',
        '009_wake_up_leases.sql',
        '010_wake_up_lease_bound.sql',
        '011_pause_release_lease.sql',
      ]);
      expect(one.postgres.grants.granted).toEqual(
        expect.arrayContaining([
          'SELECT ON fulfilments',
          'INSERT ON fulfilments',
          'UPDATE ON fulfilments',
          'SELECT ON processed_events',
          'INSERT ON processed_events',
          'SELECT ON status_outbox',
          'INSERT ON status_outbox',
          'SELECT ON schema_migrations',
          'EXECUTE ON FUNCTION status_outbox_unsent(text, integer)',
        ]),
      );
      await worker.said('service ready', CHILD_MS);

      const second = await runChild([BIN, 'provision'], env);
      expect(second.code).toBe(0);
      expect(second.stdout).toContain('postgres: schema up to date; fulfilment already has exactly its grants');
      expect(second.stdout).toContain('already as configured');
      expect(second.stdout).toContain('search attributes already registered');
      expect(second.stdout.trim().split('\n').at(-1)).toBe('provisioned: nothing to change');
    },
    CHILD_MS * 3,
  );

  it(
    'a privilege beyond what the service needs is revoked by the next run (--only postgres)',
    async () => {
      const env = freshEnv();
      const owner = new pg.Client({ connectionString: env.DATABASE_MIGRATION_URL });
      await owner.connect();
      try {
        await owner.query(`GRANT DELETE, TRUNCATE ON fulfilments TO ${new URL(config.DATABASE_URL).username}`);
      } finally {
        await owner.end();
      }
      const r = await runChild([BIN, 'provision', '--only', 'postgres'], env);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('revoked from fulfilment DELETE ON fulfilments, TRUNCATE ON fulfilments');
      expect(r.stdout).not.toContain('kafka:');
      const again = await runChild([BIN, 'provision', '--only', 'postgres'], env);
      expect(again.stdout.trim().split('\n').at(-1)).toBe('provisioned: nothing to change');
    },
    CHILD_MS * 2,
  );

  it(
    '--only with an unknown step is bad input (exit 2), naming the steps',
    async () => {
      const r = await runChild([BIN, 'provision', '--only', 'kafka,mysql'], freshEnv());
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        "option '--only <steps>' argument 'kafka,mysql' is invalid. expected a comma-separated list of kafka, temporal, postgres.",
      );
    },
    CHILD_MS,
  );
});
