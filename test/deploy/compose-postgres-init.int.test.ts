/**
 * docker-compose.yml's PostgreSQL init script (deploy/compose/postgres-init.sh), run as the postgres image runs it —
 * by the superuser, on a new cluster whose connections need passwords — against a throw-away cluster of this
 * machine's PostgreSQL (the stack installs it). Proves what compose cannot be run here to show: the owner and the
 * runtime roles exist with the passwords from .env, neither can bypass row-level security, the owner owns the
 * database and can create the schema, the runtime role can only connect; and without a password the script stops,
 * naming it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findPgBinDir, repoRoot } from '../../tools/stack/index.js';
import { waitFor } from '../support/promises.js';

const script = join(repoRoot, 'deploy', 'compose', 'postgres-init.sh');
const SUPERUSER_PASSWORD = 'super-secret-1';
const passwords = { FULFILMENT_OWNER_PASSWORD: 'owner-pw-2', FULFILMENT_DB_PASSWORD: "runtime'pw-3" };

const bin = findPgBinDir();
const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
// A unix socket only (no TCP port), in a folder of its own: nothing else on the machine can collide with it.
const dir = mkdtempSync('/var/tmp/fulfilment-compose-init-');
const socketDir = join(dir, 'socket');
const port = 5432;
let server: ChildProcess | undefined;

const connect = async (user: string, password: string, database = 'fulfilment') => {
  const client = new pg.Client({ host: socketDir, port, user, password, database, connectionTimeoutMillis: 5000 });
  await client.connect();
  return client;
};

/** Runs the init script as the image's entrypoint does: the superuser's name, the database and the passwords in the environment. */
function runInit(env: Record<string, string>) {
  return spawnSync('bash', [script], {
    encoding: 'utf8',
    env: {
      PATH: `${bin}:${process.env.PATH ?? ''}`,
      PGHOST: socketDir,
      PGPORT: String(port),
      PGPASSWORD: SUPERUSER_PASSWORD,
      POSTGRES_USER: 'postgres',
      POSTGRES_DB: 'fulfilment',
      ...env,
    },
  });
}

beforeAll(async () => {
  if (!bin)
    throw new Error('PostgreSQL is not installed (the local stack installs it: npm run stack -- up --only postgres)');
  if (!Number.isInteger(uid) || !Number.isInteger(gid))
    throw new Error('there is no postgres user (the local stack creates it with PostgreSQL)');
  spawnSync('mkdir', ['-p', socketDir]);
  chownSync(dir, uid, gid);
  chownSync(socketDir, uid, gid);
  writeFileSync(join(dir, 'pw'), `${SUPERUSER_PASSWORD}\n`);
  chownSync(join(dir, 'pw'), uid, gid);
  // Password authentication for every connection, as the postgres image sets it up.
  const init = spawnSync(
    join(bin, 'initdb'),
    ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${join(dir, 'pw')}`],
    { uid, gid, encoding: 'utf8' },
  );
  expect(init.status, init.stderr).toBe(0);
  server = spawn(
    join(bin, 'postgres'),
    ['-D', join(dir, 'data'), '-k', socketDir, '-p', String(port), '-c', 'listen_addresses=', '-c', 'fsync=off'],
    { uid, gid, stdio: 'ignore' },
  );
  // A server that exits ends the wait at once, naming its exit code.
  const exited = new Promise<never>((_, reject) =>
    server?.once('exit', (code) => reject(new Error(`the throw-away PostgreSQL exited (${code})`))),
  );
  const admin = await Promise.race([
    waitFor(
      'the throw-away PostgreSQL',
      () => connect('postgres', SUPERUSER_PASSWORD, 'postgres').catch(() => undefined),
      60_000,
    ),
    exited,
  ]);
  await admin.query('CREATE DATABASE fulfilment');
  await admin.end();
}, 120_000);

afterAll(async () => {
  if (server?.pid && server.exitCode === null) {
    const exited = new Promise((r) => server?.once('exit', r));
    server.kill('SIGINT');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('deploy/compose/postgres-init.sh', () => {
  it('stops, naming the password, when .env does not give one', () => {
    const r = runInit({ FULFILMENT_DB_PASSWORD: 'x' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/FULFILMENT_OWNER_PASSWORD: is not set: copy deploy\/compose\/example\.env to \.env/);
  });

  it('creates the owner and the runtime role with their passwords, neither able to bypass row-level security', async () => {
    const r = runInit(passwords);
    expect(r.status, r.stderr).toBe(0);

    const admin = await connect('postgres', SUPERUSER_PASSWORD);
    const roles = await admin.query<{
      rolname: string;
      rolsuper: boolean;
      rolbypassrls: boolean;
      rolcreaterole: boolean;
      rolcreatedb: boolean;
      rolcanlogin: boolean;
    }>(
      "SELECT rolname, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb, rolcanlogin FROM pg_roles WHERE rolname LIKE 'fulfilment%' ORDER BY rolname",
    );
    const owner = await admin.query<{ owner: string }>(
      "SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = 'fulfilment'",
    );
    await admin.end();
    expect(roles.rows).toEqual([
      {
        rolname: 'fulfilment',
        rolsuper: false,
        rolbypassrls: false,
        rolcreaterole: false,
        rolcreatedb: false,
        rolcanlogin: true,
      },
      {
        rolname: 'fulfilment_owner',
        rolsuper: false,
        rolbypassrls: false,
        rolcreaterole: false,
        rolcreatedb: false,
        rolcanlogin: true,
      },
    ]);
    expect(owner.rows[0]?.owner).toBe('fulfilment_owner');

    // The owner, with its password, can create the schema the migrations make.
    const asOwner = await connect('fulfilment_owner', passwords.FULFILMENT_OWNER_PASSWORD);
    await asOwner.query('CREATE TABLE init_probe (id int)');
    await asOwner.end();

    // The runtime role, with its password (a quote in it survives), can connect and nothing more until provisioning grants it.
    const asRuntime = await connect('fulfilment', passwords.FULFILMENT_DB_PASSWORD);
    await expect(asRuntime.query('CREATE TABLE runtime_probe (id int)')).rejects.toThrow(
      /permission denied for schema public/,
    );
    await expect(asRuntime.query('SELECT * FROM init_probe')).rejects.toThrow(/permission denied for table init_probe/);
    await asRuntime.end();

    // A wrong password is refused: the roles have exactly the passwords .env gave them.
    await expect(connect('fulfilment', 'wrong')).rejects.toThrow(
      /password authentication failed for user "fulfilment"/,
    );
  });
});
