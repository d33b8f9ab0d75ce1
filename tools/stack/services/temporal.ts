/**
 * Temporal for the stack: by default the dev server (`temporal server start-dev`) with Web UI and a file-backed
 * SQLite store under <state>/temporal; with STACK_TEMPORAL=server the Temporal server on the stack's PostgreSQL
 * (./temporal-server.ts). Registers the app's search attributes on either.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Connection } from '@temporalio/client';
import type { Config } from '../../../src/config.js';
import { connectTemporal } from '../../../src/temporal.js';
import type { StackPlan } from '../addresses.js';
import { ensureSearchAttributes, SEARCH_ATTRIBUTES } from '../../../src/provision/temporal.js';
import { say, StackError } from '../log.js';
import { waitFor } from '../proc.js';
import { serviceLog, stateDir } from '../paths.js';
import type { Service } from '../service.js';
import type { PidRecord } from '../proc.js';
import { temporalCliPath } from '../tools.js';
import { uiCodecEndpoint } from '../ui-codec.js';
import {
  eagerActivities,
  ensureNamespace,
  kindMismatch,
  MAX_WORKER_DEPLOYMENTS,
  prepareServer,
  serverRunsUi,
  VERSION_RETIREMENT_WAITS,
} from './temporal-server.js';

/** A running dev server started with another codec endpoint than STACK_UI_CODEC_ENDPOINT asks for is restarted. */
function codecMismatch(rec: { command: string }): string | undefined {
  if (rec.command.includes('temporal-server')) return undefined; // the UI server's file is rewritten by prepare
  const running = / --ui-codec-endpoint (\S+)/.exec(rec.command)?.[1];
  const wanted = uiCodecEndpoint();
  if (running === wanted) return undefined;
  return wanted ? `STACK_UI_CODEC_ENDPOINT=${wanted}` : 'STACK_UI_CODEC_ENDPOINT is unset';
}

/** `fn` on a connection of its own to the Temporal `settings` describe, closed afterwards. */
export async function withConnection<T>(settings: Config['temporal'], fn: (c: Connection) => Promise<T>): Promise<T> {
  const conn = await connectTemporal({ temporal: settings }, { connectTimeout: '2s' });
  try {
    return await fn(conn);
  } finally {
    await conn.close().catch(() => undefined);
  }
}

async function uiAnswers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000), redirect: 'manual' });
    await res.body?.cancel();
    return res.status < 500;
  } catch {
    return false;
  }
}

/**
 * The frontend answers before the history and matching services have joined (one process each with
 * STACK_TEMPORAL_PROCESSES=split, or shards still being acquired): a history read of a workflow that does not
 * exist must come back NOT_FOUND from history, and a task queue must be described by matching.
 */
export async function historyAndMatchingAnswer(settings: Config['temporal']): Promise<true | undefined> {
  const namespace = settings.namespace;
  try {
    return await withConnection(settings, async (c) => {
      await c.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: 'stack-readiness' },
        taskQueueType: 1,
      });
      try {
        await c.workflowService.getWorkflowExecutionHistory({
          namespace,
          execution: { workflowId: 'stack-readiness-none' },
        });
      } catch (e) {
        if ((e as { code?: number }).code !== 5) return undefined; // 5 = NOT_FOUND: history answered
      }
      return true as const;
    });
  } catch {
    return undefined;
  }
}

/**
 * The dev server's SQLite `synchronous` pragma (STACK_TEMPORAL_SQLITE_SYNCHRONOUS, default NORMAL). Under WAL,
 * NORMAL syncs at checkpoints only: a crash of the process loses nothing, a power loss may roll back the last
 * transactions. FULL (SQLite's default) syncs the WAL on every commit.
 */
export const SQLITE_SYNCHRONOUS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'] as const;
export function sqliteSynchronous(env: NodeJS.ProcessEnv = process.env): (typeof SQLITE_SYNCHRONOUS)[number] {
  const v = (env.STACK_TEMPORAL_SQLITE_SYNCHRONOUS ?? '').trim().toUpperCase() || 'NORMAL';
  if (!(SQLITE_SYNCHRONOUS as readonly string[]).includes(v)) {
    throw new StackError(
      `STACK_TEMPORAL_SQLITE_SYNCHRONOUS must be ${SQLITE_SYNCHRONOUS.join(', ')}, got ${JSON.stringify(env.STACK_TEMPORAL_SQLITE_SYNCHRONOUS)}`,
    );
  }
  return v as (typeof SQLITE_SYNCHRONOUS)[number];
}

/** A dev server started with another `synchronous` pragma or eager-activity setting (or before either was passed) is restarted. */
/** The worker deployments the dev server holds (MAX_WORKER_DEPLOYMENTS) and how soon a drained version can go. */
const DEPLOYMENTS = `matching.maxDeployments=${MAX_WORKER_DEPLOYMENTS}`;
const VERSIONING_VALUES = [
  DEPLOYMENTS,
  ...Object.entries(VERSION_RETIREMENT_WAITS).map(([k, v]) => `${k}=${JSON.stringify(v)}`),
];

function devSettingsMismatch(plan: StackPlan, rec: PidRecord): string | undefined {
  if (plan.temporal.kind !== 'dev' || rec.command.includes('temporal-server')) return undefined;
  const synchronous = `synchronous=${sqliteSynchronous()}`;
  if (!rec.command.includes(synchronous)) return `STACK_TEMPORAL_SQLITE_SYNCHRONOUS asks for ${synchronous}`;
  const eager = `system.enableActivityEagerExecution=${eagerActivities()}`;
  if (!rec.command.includes(eager)) return `STACK_TEMPORAL_EAGER_ACTIVITIES asks for ${eager}`;
  const missing = VERSIONING_VALUES.find((v) => !rec.command.includes(v));
  return missing === undefined ? undefined : `the stack asks for ${missing}`;
}

export const temporalService: Service = {
  name: 'temporal',
  address: (plan) => plan.temporal.address,
  external: (plan) => plan.temporal.external,
  ports: (plan) => [
    { host: plan.temporal.host, port: plan.temporal.port, label: 'Temporal frontend', env: 'TEMPORAL_ADDRESS' },
    { host: plan.temporal.ui.host, port: plan.temporal.ui.port, label: 'Temporal Web UI', env: 'TEMPORAL_UI_URL' },
  ],
  logs: () => [serviceLog('temporal')],
  readyTimeoutMs: 120_000,
  stopSignal: 'SIGTERM',
  stopGraceMs: 20_000,

  restartReason: (rec, plan) =>
    kindMismatch(plan, rec) ??
    devSettingsMismatch(plan, rec) ??
    (plan.temporal.kind === 'dev' ? codecMismatch(rec) : undefined),

  async prepare(plan) {
    if (plan.temporal.kind === 'server') return prepareServer(plan);
    const cli = await temporalCliPath();
    const dir = join(stateDir(), 'temporal');
    mkdirSync(dir, { recursive: true });
    const t = plan.temporal;
    const args = [
      'server',
      'start-dev',
      '--ip',
      t.host,
      '--port',
      String(t.port),
      '--ui-ip',
      t.ui.host,
      '--ui-port',
      String(t.ui.port),
      '--db-filename',
      join(dir, 'temporal.db'),
      '--sqlite-pragma',
      'journal_mode=WAL',
      '--sqlite-pragma',
      `synchronous=${sqliteSynchronous()}`,
      '--dynamic-config-value',
      `system.enableActivityEagerExecution=${eagerActivities()}`,
      ...VERSIONING_VALUES.flatMap((v) => ['--dynamic-config-value', v]),
      '--log-level',
      'warn',
      '--color',
      'never',
    ];
    // "default" always exists; passing it again is harmless but noisy.
    if (t.namespace !== 'default') args.push('--namespace', t.namespace);
    const codec = uiCodecEndpoint();
    if (codec) args.push('--ui-codec-endpoint', codec);
    for (const [k, v] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${k}=${v}`);
    return { service: 'temporal', command: cli, args, cwd: dir };
  },

  async ready(plan) {
    try {
      // The Temporal server has no namespace until afterReady registers it: there the frontend answering is enough.
      const server = plan.temporal.kind === 'server' && !plan.temporal.external;
      const ok = await withConnection(plan.temporal.settings, async (c) => {
        await c.workflowService.getSystemInfo({});
        if (!server) await c.workflowService.describeNamespace({ namespace: plan.temporal.namespace });
        return true;
      });
      return ok && (plan.temporal.external || (server && !serverRunsUi()) || (await uiAnswers(plan.temporal.uiUrl)));
    } catch {
      return false;
    }
  },

  /**
   * start-dev registers search attributes only when it creates the store; later additions are made here, as
   * `fulfilment provision --only temporal` makes them (src/provision/temporal.ts).
   */
  async afterReady(plan) {
    const ns = plan.temporal.namespace;
    if (plan.temporal.kind === 'server' && !plan.temporal.external) {
      await ensureNamespace(plan, () =>
        withConnection(plan.temporal.settings, async (c) => {
          await c.workflowService.describeNamespace({ namespace: ns });
          return true;
        }).catch(() => false),
      );
      await waitFor("the Temporal server's history and matching services", 120_000, () =>
        historyAndMatchingAnswer(plan.temporal.settings),
      );
    }
    await registerSearchAttributes(plan.temporal.settings, plan.temporal.kind === 'server' && !plan.temporal.external);
  },
};

/**
 * The service's search attributes in the namespace of `settings`, as `fulfilment provision --only temporal` makes them
 * (src/provision/temporal.ts). A namespace a Temporal server has just registered reaches the operator API's namespace
 * cache within its refresh interval (10 s): with `justRegistered`, NOT_FOUND is retried for up to a minute.
 */
export async function registerSearchAttributes(
  settings: Config['temporal'],
  justRegistered: boolean,
  service = 'temporal',
): Promise<void> {
  const ns = settings.namespace;
  try {
    const deadline = Date.now() + 60_000;
    // Worth another try: a namespace registered a moment ago and not known everywhere yet (NOT_FOUND), and a server
    // too busy to answer within the connection's deadline (DEADLINE_EXCEEDED, UNAVAILABLE — the client wraps those
    // in "Failed to connect to Temporal server"); seen on a loaded machine with the TLS Temporal.
    const transient = (e: unknown) => {
      const code = (e as { code?: number }).code ?? (e as { cause?: { code?: number } }).cause?.code;
      if (code === undefined)
        return e instanceof Error && e.message.startsWith('Failed to connect before the deadline');
      return code === 4 || code === 14 || (justRegistered && code === 5);
    };
    const attempt = async (): Promise<{ registered: string[] }> => {
      try {
        return await withConnection(settings, (c) => ensureSearchAttributes(c, ns));
      } catch (e) {
        if (Date.now() > deadline || !transient(e)) throw e;
        await new Promise((r) => setTimeout(r, 500));
        return attempt();
      }
    };
    const { registered } = await attempt();
    if (registered.length) say(`${service}: registered search attributes ${registered.join(', ')} in namespace ${ns}`);
  } catch (e) {
    throw new StackError(
      `${service}: could not register search attributes: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}
