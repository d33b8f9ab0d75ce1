/**
 * PostgreSQL from Debian's package (installed with apt when missing), run as the `postgres` user (initdb refuses
 * root). Data normally lives in <state>/postgres; when the postgres user cannot reach that folder (e.g. a clone
 * inside a private 0700 directory) it lives in /var/tmp/fulfilment-pg-<hash of state dir> and
 * <state>/postgres.location records where. Creates the owner role (DATABASE_MIGRATION_URL, `fulfilment_owner`) and
 * the runtime role (DATABASE_URL, `fulfilment`) with their dev-only passwords, and the database, owned by the owner;
 * then provisions it as `fulfilment provision --only postgres` does (migrations as the owner, the runtime role's grants).
 */
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { provisionPostgres } from '../../../src/roles/provision/schema-and-grants.js';
import type { StackPlan } from '../addresses.js';
import { say, StackError } from '../log.js';
import { serviceLog, stateDir } from '../paths.js';
import { isAlive, procCmdline, runQuick, runWithProgress, which } from '../proc.js';
import type { Service } from '../service.js';

interface PgUser {
  uid: number;
  gid: number;
  home: string;
}

function postgresUser(): PgUser | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (f[0] === 'postgres') return { uid: Number(f[2]), gid: Number(f[3]), home: f[5] || '/var/lib/postgresql' };
    }
  } catch {
    /* no passwd */
  }
  return undefined;
}

/** Newest Debian PostgreSQL bin dir (/usr/lib/postgresql/<major>/bin), if installed. */
export function findPgBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  let majors: number[] = [];
  try {
    majors = readdirSync(base)
      .map(Number)
      .filter(
        (n) =>
          Number.isInteger(n) &&
          existsSync(join(base, String(n), 'bin', 'postgres')) &&
          existsSync(join(base, String(n), 'bin', 'initdb')),
      );
  } catch {
    /* not installed */
  }
  majors.sort((a, b) => b - a);
  if (majors[0] !== undefined) return join(base, String(majors[0]), 'bin');
  const pgConfig = which('pg_config');
  if (pgConfig) {
    const { status, output } = runQuick(pgConfig, ['--bindir']);
    const dir = output.trim();
    if (status === 0 && existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb'))) return dir;
  }
  return undefined;
}

async function ensurePgInstalled(): Promise<string> {
  let bin = findPgBinDir();
  if (bin) return bin;
  if (process.getuid?.() !== 0 || !which('apt-get')) {
    throw new StackError(
      'PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: install them (as root: apt-get install -y postgresql)',
    );
  }
  say('postgres: PostgreSQL is not installed; installing Debian package "postgresql" with apt (first run only)...');
  const logFile = join(stateDir(), 'logs', 'apt-postgresql.log');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await runWithProgress('apt-get update', 'apt-get', ['update'], { logFile, env, everySec: 10 });
  await runWithProgress(
    'apt-get install postgresql',
    'apt-get',
    ['install', '-y', '--no-install-recommends', 'postgresql'],
    { logFile, env, everySec: 10 },
  );
  bin = findPgBinDir();
  if (!bin) throw new StackError(`apt-get installed postgresql but no server binaries were found; see ${logFile}`);
  return bin;
}

/** Can `user` create files in `dir` (checks every parent's search permission too)? */
function accessibleBy(user: PgUser, dir: string): boolean {
  return runQuick('test', ['-w', dir, '-a', '-x', dir], { uid: user.uid, gid: user.gid }).status === 0;
}

interface PgLayout {
  root: string;
  data: string;
  socketDir: string;
}

/** Picks (once) and prepares where the cluster lives; owned by postgres, mode 0700. */
function layout(user: PgUser): PgLayout {
  const locFile = join(stateDir(), 'postgres.location');
  let root = existsSync(locFile) ? readFileSync(locFile, 'utf8').trim() : '';
  if (!root) {
    const preferred = join(stateDir(), 'postgres');
    mkdirSync(preferred, { recursive: true });
    chownSync(preferred, user.uid, user.gid);
    chmodSync(preferred, 0o700);
    if (accessibleBy(user, preferred)) root = preferred;
    else {
      const hash = createHash('sha256').update(stateDir()).digest('hex').slice(0, 12);
      root = join('/var/tmp', `fulfilment-pg-${hash}`);
      rmSync(preferred, { recursive: true, force: true });
      say(
        `postgres: user postgres cannot reach ${stateDir()} (a parent folder is private); keeping the cluster in ${root}`,
      );
    }
    writeFileSync(locFile, `${root}\n`);
  }
  mkdirSync(root, { recursive: true });
  chownSync(root, user.uid, user.gid);
  chmodSync(root, 0o700);
  let socketDir = join(root, 'run');
  // unix socket paths are limited to 107 bytes
  if (`${socketDir}/.s.PGSQL.65535`.length > 100) {
    socketDir = join('/tmp', `fulfilment-pg-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`);
  }
  mkdirSync(socketDir, { recursive: true });
  chownSync(socketDir, user.uid, user.gid);
  chmodSync(socketDir, 0o700);
  return { root, data: join(root, 'data'), socketDir };
}

/** Where the cluster lives (owned by the postgres user), and that user; undefined when there is no postgres user. */
export function clusterHome(): { root: string; uid: number; gid: number } | undefined {
  const user = postgresUser();
  const l = currentLayout();
  return user && l ? { root: l.root, uid: user.uid, gid: user.gid } : undefined;
}

function currentLayout(): PgLayout | undefined {
  const user = postgresUser();
  if (!user) return undefined;
  try {
    return layout(user);
  } catch {
    return undefined;
  }
}

/**
 * postmaster.pid left by a killed server blocks a new start when its pid now belongs to some other process;
 * remove it when its pid is not a live postgres.
 */
function clearStalePostmasterPid(data: string): void {
  const file = join(data, 'postmaster.pid');
  if (!existsSync(file)) return;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  const live = Number.isInteger(pid) && pid > 0 && isAlive(pid) && /postgres|postmaster/.test(procCmdline(pid));
  if (!live) {
    say(`postgres: removing stale ${file} (pid ${pid} is not a running postgres)`);
    rmSync(file, { force: true });
  } else {
    throw new StackError(
      `postgres: ${data} is in use by a postgres (pid ${pid}) that this stack did not start; stop it first (kill -INT ${pid})`,
    );
  }
}

const quoteIdent = (s: string): string => `"${s.replace(/"/g, '""')}"`;
const quoteLiteral = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/**
 * The cluster's superuser through its Unix socket (trust, local only): the stack's own administration, and tests
 * that need a role the service must refuse. Never what the service connects as.
 */
export async function superuserClient(plan: StackPlan, database = 'postgres'): Promise<pg.Client> {
  const l = currentLayout();
  if (!l) throw new StackError('postgres user not found');
  const client = new pg.Client({
    host: l.socketDir,
    port: plan.postgres.port,
    user: 'postgres',
    database,
    connectionTimeoutMillis: 3000,
  });
  await client.connect();
  return client;
}

async function appQuery(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export const postgresService: Service = {
  name: 'postgres',
  address: (plan) => plan.postgres.url,
  external: (plan) => plan.postgres.external,
  ports: (plan) => [{ host: plan.postgres.host, port: plan.postgres.port, label: 'PostgreSQL', env: 'DATABASE_URL' }],
  logs: () => [serviceLog('postgres')],
  readyTimeoutMs: 60_000,
  // SIGINT = "fast" shutdown (SIGTERM would wait for every client to disconnect)
  stopSignal: 'SIGINT',
  stopGraceMs: 30_000,

  async prepare(plan) {
    const bin = await ensurePgInstalled();
    const user = postgresUser();
    if (!user)
      throw new StackError(
        'PostgreSQL is installed but there is no "postgres" user to run it as (apt-get install --reinstall postgresql-common)',
      );
    if (process.getuid?.() !== 0)
      throw new StackError(
        'the stack runs PostgreSQL as the postgres user and needs root for that (run as root, or set DATABASE_URL to an existing database)',
      );
    const l = layout(user);
    const major = bin.split('/').slice(-2, -1)[0] ?? '';
    const initDone = join(l.root, 'initdb.done');
    if (existsSync(join(l.data, 'PG_VERSION')) && existsSync(initDone)) {
      const have = readFileSync(join(l.data, 'PG_VERSION'), 'utf8').trim();
      if (/^\d+$/.test(major) && have !== major) {
        throw new StackError(
          `postgres: ${l.data} was created by PostgreSQL ${have} but ${bin} is ${major}; remove ${l.root} (drops the local database) and run up again`,
        );
      }
    } else {
      if (existsSync(l.data)) {
        say('postgres: data directory is incomplete (interrupted initdb?); creating it again');
        rmSync(l.data, { recursive: true, force: true });
      }
      say(`postgres: initdb ${l.data}`);
      await runWithProgress(
        'initdb',
        join(bin, 'initdb'),
        [
          '-D',
          l.data,
          '-U',
          'postgres',
          '--auth-local=trust',
          '--auth-host=scram-sha-256',
          '-E',
          'UTF8',
          '--no-locale',
        ],
        {
          logFile: serviceLog('postgres'),
          uid: user.uid,
          gid: user.gid,
          cwd: l.root,
          env: { ...process.env, HOME: user.home, LC_ALL: 'C' },
        },
      );
      writeFileSync(initDone, new Date().toISOString());
    }
    clearStalePostmasterPid(l.data);
    return {
      service: 'postgres',
      command: join(bin, 'postgres'),
      args: [
        '-D',
        l.data,
        '-p',
        String(plan.postgres.port),
        '-c',
        `listen_addresses=${plan.postgres.host}`,
        '-c',
        `unix_socket_directories=${l.socketDir}`,
        '-c',
        'max_connections=200',
        '-c',
        'logging_collector=off',
      ],
      cwd: l.root,
      env: { ...process.env, HOME: user.home, LC_ALL: 'C' },
      uid: user.uid,
      gid: user.gid,
    };
  },

  async ready(plan, shared) {
    if (plan.postgres.external || shared) return appQuery(plan.postgres.url);
    try {
      const c = await superuserClient(plan);
      await c.query('select 1');
      await c.end();
      return true;
    } catch {
      return false;
    }
  },

  /**
   * The two roles and the database, then the schema and grants (src/roles/provision/schema-and-grants.ts, as `fulfilment
   * provision`). The owner may create databases (tests make throw-away ones); the runtime role may do nothing but log
   * in. A database from before the split (owned by the runtime role, which had applied the migrations) is handed over
   * to the owner: REASSIGN OWNED moves its tables and function; migration 005 then binds the retention policies to the
   * owner.
   */
  async afterReady(plan, shared) {
    const p = plan.postgres;
    if (!p.ownerUrl || !p.owner)
      throw new StackError(
        'postgres: DATABASE_MIGRATION_URL is needed beside DATABASE_URL (the owner role that applies the migrations)',
      );
    if (!plan.postgres.external && !shared) {
      const c = await superuserClient(plan);
      try {
        const ensureRole = async (name: string, password: string, attributes: string) => {
          const pw = password ? ` PASSWORD ${quoteLiteral(password)}` : '';
          const role = await c.query('select 1 from pg_roles where rolname = $1', [name]);
          await c.query(`${role.rowCount === 0 ? 'CREATE' : 'ALTER'} ROLE ${quoteIdent(name)} ${attributes}${pw}`);
          if (role.rowCount === 0) say(`postgres: created role ${name}`);
        };
        await ensureRole(p.owner, p.ownerPassword, 'LOGIN CREATEDB NOCREATEROLE NOSUPERUSER NOBYPASSRLS');
        await ensureRole(p.user, p.password, 'LOGIN NOCREATEDB NOCREATEROLE NOSUPERUSER NOBYPASSRLS NOREPLICATION');
        const db = await c.query<{ owner: string }>(
          'select pg_get_userbyid(datdba) as owner from pg_database where datname = $1',
          [p.database],
        );
        if (db.rowCount === 0) {
          await c.query(`CREATE DATABASE ${quoteIdent(p.database)} OWNER ${quoteIdent(p.owner)}`);
          say(`postgres: created database ${p.database} (owner ${p.owner})`);
        } else if (db.rows[0]!.owner !== p.owner) {
          const inDb = await superuserClient(plan, p.database);
          try {
            await inDb.query(`REASSIGN OWNED BY ${quoteIdent(db.rows[0]!.owner)} TO ${quoteIdent(p.owner)}`);
          } finally {
            await inDb.end().catch(() => undefined);
          }
          await c.query(`ALTER DATABASE ${quoteIdent(p.database)} OWNER TO ${quoteIdent(p.owner)}`);
          say(`postgres: database ${p.database} and its objects handed from ${db.rows[0]!.owner} to ${p.owner}`);
        }
      } finally {
        await c.end().catch(() => undefined);
      }
    }
    if (!(await appQuery(p.url)))
      throw new StackError(`postgres: cannot connect with DATABASE_URL as ${p.user}@${p.host}:${p.port}/${p.database}`);
    try {
      const r = await provisionPostgres({
        DATABASE_URL: p.url,
        DATABASE_MIGRATION_URL: p.ownerUrl,
        DATABASE_SSL_CA_FILE: undefined,
      });
      if (r.applied.length) say(`postgres: applied ${r.applied.join(', ')}`);
      if (r.grants.granted.length) say(`postgres: granted ${r.runtimeRole} ${r.grants.granted.join(', ')}`);
      if (r.grants.revoked.length) say(`postgres: revoked from ${r.runtimeRole} ${r.grants.revoked.join(', ')}`);
    } catch (e) {
      throw new StackError(
        `postgres: could not provision the schema as ${p.owner} (DATABASE_MIGRATION_URL): ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  },
};
