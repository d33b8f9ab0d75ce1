/**
 * STACK_TEMPORAL=server: the Temporal server (go.temporal.io/server, built once into the cache) with persistence
 * and visibility on the stack's own PostgreSQL, as a self-hosted production Temporal runs — SQL persistence, many
 * history shards (STACK_TEMPORAL_SHARDS, default 8) — plus the Web UI server on the UI address.
 *
 * - The role `temporal` (dev-only password) owns two databases, `temporal` and `temporal_visibility`, made through
 *   the superuser socket; their schemas are created and upgraded with the server's own schema tool
 *   (`setup-schema -v 0.0`, then `update-schema -d` with the versioned folders of `schema/postgresql/v12/` from the
 *   server's Go module in the module cache), every `up`.
 * - The server's configuration is generated into `<state>/temporal-server/config/development.yaml` (0600): the
 *   frontend on the dev server's address, the other services on the next ports, one process for all of them, or one
 *   process each with STACK_TEMPORAL_PROCESSES=split (`start --service <name>`), started by `run.sh` in the same
 *   process group so `down` stops them together. The shard count is kept in `shards`: a store made with one count
 *   cannot be opened with another.
 * - The `default` namespace (or TEMPORAL_NAMESPACE) and the search attributes are registered as for the dev server
 *   (./temporal.ts).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StackPlan } from '../addresses.js';
import { say, StackError } from '../log.js';
import { stateDir } from '../paths.js';
import { runWithProgress, waitFor, type DaemonSpec, type PidRecord } from '../proc.js';
import {
  goModuleDir,
  TEMPORAL_SERVER_MODULE,
  TEMPORAL_SERVER_TAG,
  temporalServerPath,
  temporalSqlToolPath,
  temporalUiServerPath,
} from '../tools.js';
import { superuserClient } from './postgres.js';
import { TEMPORAL_CLI } from '../temporal-cli.js';
import { uiCodecEndpoint } from '../ui-codec.js';
import {
  dynamicConfigText,
  portsFrom,
  serverStartLine,
  temporalServerConfig,
  uiStartLine,
} from '../temporal-config.js';

/** The Temporal server's own role and databases on the stack's PostgreSQL (dev-only password). */
export const TEMPORAL_DB = {
  user: 'temporal',
  password: 'temporal',
  persistence: 'temporal',
  visibility: 'temporal_visibility',
} as const;

const quoteIdent = (s: string): string => `"${s.replace(/"/g, '""')}"`;
const quoteLiteral = (s: string): string => `'${s.replace(/'/g, "''")}'`;

export const serverDir = (): string => join(stateDir(), 'temporal-server');
const launcher = (): string => join(serverDir(), 'run.sh');

/** Whether the running Temporal server's launcher starts the Web UI server (it is left out when it cannot be built). */
export function serverRunsUi(): boolean {
  return existsSync(launcher()) && readFileSync(launcher(), 'utf8').includes('temporal-ui-server');
}

/**
 * What `status` says runs: the running daemon's kind when there is one (whatever STACK_TEMPORAL says now),
 * else what `up` would start.
 */
export function temporalKindOf(plan: StackPlan, rec?: PidRecord): 'dev' | 'server' {
  return rec ? (rec.command.includes(launcher()) ? 'server' : 'dev') : plan.temporal.kind;
}

export function temporalDescription(plan: StackPlan, rec?: PidRecord): string {
  const t = plan.temporal;
  if (t.external) return 'external';
  const server = temporalKindOf(plan, rec) === 'server';
  if (!server)
    return `dev server (Temporal CLI ${TEMPORAL_CLI.version}: Temporal server ${TEMPORAL_CLI.server}, one process, SQLite)`;
  const shardsFile = join(serverDir(), 'shards');
  const shards = rec && existsSync(shardsFile) ? readFileSync(shardsFile, 'utf8').trim() : String(t.shards);
  const split = rec
    ? existsSync(launcher()) && readFileSync(launcher(), 'utf8').includes('--service history')
    : t.processes === 'split';
  return `Temporal server ${TEMPORAL_SERVER_TAG.replace(/^v/, '')} on PostgreSQL (${TEMPORAL_DB.persistence}, ${TEMPORAL_DB.visibility}), ${shards} history shards, ${split ? 'one process per service' : 'one process'}`;
}

/** A daemon started for the other kind of Temporal than STACK_TEMPORAL asks for is restarted. */
export function kindMismatch(plan: StackPlan, rec: PidRecord): string | undefined {
  const isServer = rec.command.includes(launcher());
  if (plan.temporal.kind === 'server' && !isServer) return 'STACK_TEMPORAL=server, and the dev server runs';
  if (plan.temporal.kind === 'dev' && isServer) return 'STACK_TEMPORAL is dev, and the Temporal server runs';
  if (isServer && existsSync(launcher())) {
    const split = readFileSync(launcher(), 'utf8').includes('--service history');
    if (split !== (plan.temporal.processes === 'split')) return `STACK_TEMPORAL_PROCESSES=${plan.temporal.processes}`;
  }
  return undefined;
}

/** Drops both databases of the Temporal server's store (the server must be stopped) and forgets their shard count. */
export async function dropServerStore(plan: StackPlan): Promise<void> {
  const c = await superuserClient(plan);
  try {
    for (const db of [TEMPORAL_DB.persistence, TEMPORAL_DB.visibility])
      await c.query(`DROP DATABASE IF EXISTS ${quoteIdent(db)} WITH (FORCE)`);
  } finally {
    await c.end().catch(() => undefined);
  }
  rmSync(join(serverDir(), 'shards'), { force: true });
}

/** The role and both databases, made once through the superuser socket. */
async function ensureDatabases(plan: StackPlan): Promise<void> {
  const c = await superuserClient(plan);
  try {
    const role = await c.query('select 1 from pg_roles where rolname = $1', [TEMPORAL_DB.user]);
    await c.query(
      `${role.rowCount === 0 ? 'CREATE' : 'ALTER'} ROLE ${quoteIdent(TEMPORAL_DB.user)} LOGIN NOCREATEDB NOCREATEROLE NOSUPERUSER PASSWORD ${quoteLiteral(TEMPORAL_DB.password)}`,
    );
    if (role.rowCount === 0) say(`temporal: created role ${TEMPORAL_DB.user}`);
    for (const db of [TEMPORAL_DB.persistence, TEMPORAL_DB.visibility]) {
      const have = await c.query('select 1 from pg_database where datname = $1', [db]);
      if (have.rowCount === 0) {
        await c.query(`CREATE DATABASE ${quoteIdent(db)} OWNER ${quoteIdent(TEMPORAL_DB.user)}`);
        say(`temporal: created database ${db} (owner ${TEMPORAL_DB.user})`);
      }
      // New sessions take it: the server's connections are opened after this.
      await c.query(`ALTER DATABASE ${quoteIdent(db)} SET synchronous_commit = ${pgSynchronousCommit()}`);
    }
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function hasVersionTable(plan: StackPlan, db: string): Promise<boolean> {
  const c = await superuserClient(plan, db);
  try {
    const r = await c.query(
      "select 1 from information_schema.tables where table_schema = 'public' and table_name = 'schema_version'",
    );
    return (r.rowCount ?? 0) > 0;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** setup-schema (the version table, first time) and update-schema (to the release's newest) for both databases. */
async function ensureSchemas(plan: StackPlan): Promise<void> {
  const tool = await temporalSqlToolPath();
  const schemaRoot = join(
    await goModuleDir(TEMPORAL_SERVER_MODULE, TEMPORAL_SERVER_TAG),
    'schema',
    'postgresql',
    'v12',
  );
  const logFile = join(serverDir(), 'schema.log');
  const conn = [
    '--plugin',
    'postgres12',
    '--ep',
    plan.postgres.host,
    '--port',
    String(plan.postgres.port),
    '--user',
    TEMPORAL_DB.user,
    '--password',
    TEMPORAL_DB.password,
  ];
  for (const [db, folder] of [
    [TEMPORAL_DB.persistence, 'temporal'],
    [TEMPORAL_DB.visibility, 'visibility'],
  ] as const) {
    const args = [...conn, '--db', db];
    if (!(await hasVersionTable(plan, db))) {
      say(`temporal: setting up the schema of ${db}`);
      await runWithProgress(`temporal-sql-tool setup-schema ${db}`, tool, [...args, 'setup-schema', '-v', '0.0'], {
        logFile,
      });
    }
    await runWithProgress(
      `temporal-sql-tool update-schema ${db}`,
      tool,
      [...args, 'update-schema', '-d', join(schemaRoot, folder, 'versioned')],
      { logFile },
    );
  }
}

/** The server's configuration: the services of one process on the ports from the frontend's, the store on PostgreSQL. */
export function serverConfig(plan: StackPlan): Record<string, unknown> {
  const t = plan.temporal;
  const store = (db: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName: db,
      connectAddr: `${plan.postgres.host}:${plan.postgres.port}`,
      connectProtocol: 'tcp',
      user: TEMPORAL_DB.user,
      password: TEMPORAL_DB.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  return temporalServerConfig({
    host: t.host,
    services: portsFrom(t.port, ['frontend', 'history', 'matching', 'worker'], { http: true }),
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: t.shards,
      datastores: {
        'postgres-default': store(TEMPORAL_DB.persistence, 20),
        'postgres-visibility': store(TEMPORAL_DB.visibility, 10),
      },
    },
    dynamicConfigFile: join(serverDir(), 'config', 'dynamicconfig.yaml'),
  });
}

/**
 * Eager activity dispatch (STACK_TEMPORAL_EAGER_ACTIVITIES, default true): the server's dynamic configuration
 * `system.enableActivityEagerExecution`, off by default up to Temporal 1.31 (the dev server's), on since 1.32. On, an activity a workflow task schedules is
 * handed back with that task's completion to the worker that completed it (the TypeScript worker asks for up to 3),
 * instead of going through a task queue poll. Both stack Temporals take it.
 */
export function eagerActivities(env: NodeJS.ProcessEnv = process.env): boolean {
  return onOrOff(env, 'STACK_TEMPORAL_EAGER_ACTIVITIES');
}

/** A stack setting that is `true` (the default when unset) or `false`; anything else is refused, naming it. */
function onOrOff(env: NodeJS.ProcessEnv, name: string): boolean {
  const v = (env[name] ?? '').trim().toLowerCase() || 'true';
  if (!['true', 'false'].includes(v))
    throw new StackError(`${name} must be true or false, got ${JSON.stringify(env[name])}`);
  return v === 'true';
}

/**
 * Fair dispatch between tenants (STACK_TEMPORAL_FAIRNESS, default true): the server's dynamic configuration
 * `matching.enableFairness` (server 1.32, off by default; on implies the priority matcher `matching.useNewMatcher`, on
 * by default). On, each task queue partition hands out its backlog by fairness key — every order's run carries its
 * tenant as the key and the tenant's weight (src/base/tenants/fairness.ts) — in proportion to the keys' weights,
 * instead of in arrival order. Sticky queues (a cached run's later tasks) stay in arrival order. Switching it off is
 * for measuring what it does (test/integration/fair-dispatch.int.test.ts shows the burst that then holds a quiet tenant
 * back). Both stack Temporals take it.
 */
export function fairDispatch(env: NodeJS.ProcessEnv = process.env): boolean {
  return onOrOff(env, 'STACK_TEMPORAL_FAIRNESS');
}

/**
 * Worker deployments a namespace may hold (Temporal's default 100). A worker is a version of the deployment named
 * after its task queue (WORKER_DEPLOYMENT_NAME's default), and every test scenario and bench phase has a task queue of
 * its own, so the stack's Temporal, whose store outlives runs, holds hundreds; a production namespace holds one.
 */
export const MAX_WORKER_DEPLOYMENTS = 100_000;

/**
 * How soon a worker version that drained can be retired (Temporal's defaults: its pollers are remembered 5 minutes,
 * and whether it drained is read every 3 minutes after a 3-minute grace): shortened on the stack so that a test can
 * retire a version it drained. A production Temporal keeps its own. An idle worker's poll is remembered from when it
 * began, and lasts the long poll (1 minute by default): the stack's long poll is shortened below the pollers' 30 s
 * memory, so that an idle live worker stays listed (as it does with the defaults, 1 minute against 5), and a version
 * whose workers stopped is seen without pollers 30 s later (`fulfilment deployment current|rollback`, the
 * fulfilment_orders_pinned_without_workers gauge: src/adapters/deployment/live-workers.ts).
 */
export const VERSION_RETIREMENT_WAITS = {
  'matching.PollerHistoryTTL': '30s',
  'matching.longPollExpirationInterval': '20s',
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod': '10s',
  'matching.wv.VersionDrainageStatusRefreshInterval': '10s',
} as const;

/**
 * The stack's dynamic configuration for either of its Temporals, key → value (polled every 10 s, so an edit applies
 * without a restart).
 */
export function stackDynamicConfig(): Record<string, unknown> {
  return {
    'system.enableActivityEagerExecution': eagerActivities(),
    'matching.enableFairness': fairDispatch(),
    'matching.maxDeployments': MAX_WORKER_DEPLOYMENTS,
    ...VERSION_RETIREMENT_WAITS,
  };
}

/**
 * PostgreSQL's `synchronous_commit` for the Temporal server's databases (STACK_TEMPORAL_PG_SYNCHRONOUS_COMMIT, on or
 * off, default on). Off, a commit returns before its WAL reaches the disk: a crash of PostgreSQL or the machine may
 * lose the last few hundred milliseconds of Temporal's writes (never corrupt them), in exchange for one fsync less
 * per write. The service's own database keeps `on` whatever this says.
 */
export function pgSynchronousCommit(env: NodeJS.ProcessEnv = process.env): 'on' | 'off' {
  const v = (env.STACK_TEMPORAL_PG_SYNCHRONOUS_COMMIT ?? '').trim().toLowerCase() || 'on';
  if (v !== 'on' && v !== 'off')
    throw new StackError(
      `STACK_TEMPORAL_PG_SYNCHRONOUS_COMMIT must be on or off, got ${JSON.stringify(env.STACK_TEMPORAL_PG_SYNCHRONOUS_COMMIT)}`,
    );
  return v;
}

/** The Web UI server's configuration, beside either stack Temporal. */
export function uiConfig(plan: StackPlan): Record<string, unknown> {
  const t = plan.temporal;
  const codec = uiCodecEndpoint();
  return {
    temporalGrpcAddress: `${t.host}:${t.port}`,
    host: t.ui.host,
    port: t.ui.port,
    enableUi: true,
    defaultNamespace: t.namespace,
    cors: { cookieInsecure: true, allowOrigins: [], unsafeAllowAllOrigins: false },
    refreshInterval: '1m',
    notifyOnNewVersion: false,
    auth: { enabled: false },
    ...(codec ? { codec: { endpoint: codec, includeCredentials: true } } : {}),
  };
}

function writePrivate(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600);
}

export async function prepareServer(plan: StackPlan): Promise<DaemonSpec> {
  const t = plan.temporal;
  if (plan.postgres.external)
    throw new StackError(
      "temporal: STACK_TEMPORAL=server keeps its store on the stack's own PostgreSQL; unset DATABASE_URL, or use STACK_TEMPORAL=dev",
    );
  const dir = serverDir();
  mkdirSync(join(dir, 'config'), { recursive: true, mode: 0o700 });
  mkdirSync(join(dir, 'ui', 'config'), { recursive: true, mode: 0o700 });
  // Built one after another (2 cores), before anything needs them.
  const server = await temporalServerPath();
  await temporalSqlToolPath();
  let ui: string | undefined;
  try {
    ui = await temporalUiServerPath();
  } catch (e) {
    say(
      `temporal: the Web UI server could not be built, running without a Web UI: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`,
    );
  }
  const shardsFile = join(dir, 'shards');
  const had = existsSync(shardsFile) ? Number(readFileSync(shardsFile, 'utf8').trim()) : undefined;
  if (had !== undefined && had !== t.shards) {
    throw new StackError(
      `temporal: the Temporal server's store was made with ${had} history shards and STACK_TEMPORAL_SHARDS asks for ${t.shards}; a store keeps its count. Use STACK_TEMPORAL_SHARDS=${had}, or drop the databases ${TEMPORAL_DB.persistence} and ${TEMPORAL_DB.visibility} and remove ${shardsFile}`,
    );
  }
  await waitFor("postgres (the Temporal server's store)", 60_000, async () => {
    try {
      const c = await superuserClient(plan);
      await c.end();
      return true;
    } catch {
      return undefined;
    }
  });
  await ensureDatabases(plan);
  await ensureSchemas(plan);
  writeFileSync(shardsFile, `${t.shards}\n`);
  writePrivate(join(dir, 'config', 'development.yaml'), `${JSON.stringify(serverConfig(plan), null, 2)}\n`);
  writePrivate(join(dir, 'ui', 'config', 'development.yaml'), `${JSON.stringify(uiConfig(plan), null, 2)}\n`);
  writePrivate(join(dir, 'config', 'dynamicconfig.yaml'), dynamicConfigText(stackDynamicConfig()));
  const start = (service?: string) => serverStartLine(server, dir, service);
  const lines = [
    '#!/bin/sh',
    '# Generated by tools/stack/services/temporal-server.ts: the Temporal server (and its Web UI) in one process group.',
  ];
  if (ui) lines.push(uiStartLine(ui, join(dir, 'ui')));
  if (t.processes === 'split') {
    for (const s of ['history', 'matching', 'worker']) lines.push(`${start(s)} &`);
    lines.push(`exec ${start('frontend')}`);
  } else lines.push(`exec ${start()}`);
  writeFileSync(launcher(), `${lines.join('\n')}\n`, { mode: 0o700 });
  return { service: 'temporal', command: '/bin/sh', args: [launcher()], cwd: dir };
}
