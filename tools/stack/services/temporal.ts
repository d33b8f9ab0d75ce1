/**
 * Temporal for the stack: by default the dev server — the Temporal server on a SQLite file, with the Web UI
 * (./temporal-dev.ts); with STACK_TEMPORAL=server the Temporal server on the stack's PostgreSQL (./temporal-server.ts).
 * Registers the namespace and the app's search attributes on either.
 */
import proto from '@temporalio/proto';
import type { Connection } from '@temporalio/client';
import type { Config } from '../../../src/base/config.js';
import { connectTemporal } from '../../../src/domain/temporal.js';
import { ensureSearchAttributes } from '../../../src/roles/provision/search-attributes.js';
import { say, StackError } from '../log.js';
import { sleep, waitFor } from '../proc.js';
import { serviceLog } from '../paths.js';
import type { Service } from '../service.js';
import { kindMismatch, prepareServer, serverRunsUi } from './temporal-server.js';
import { devRestartReason, prepareDev } from './temporal-dev.js';

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
    kindMismatch(plan, rec) ?? (plan.temporal.kind === 'dev' ? devRestartReason(plan, rec) : undefined),

  prepare: (plan) => (plan.temporal.kind === 'server' ? prepareServer(plan) : prepareDev(plan)),

  async ready(plan) {
    try {
      // The stack's Temporal has no namespace until afterReady registers it: there the frontend answering is enough.
      const ours = !plan.temporal.external;
      const ok = await withConnection(plan.temporal.settings, async (c) => {
        await c.workflowService.getSystemInfo({});
        if (!ours) await c.workflowService.describeNamespace({ namespace: plan.temporal.namespace });
        return true;
      });
      const ui = ours && (plan.temporal.kind === 'dev' || serverRunsUi());
      return ok && (!ui || (await uiAnswers(plan.temporal.uiUrl)));
    } catch {
      return false;
    }
  },

  /** The namespace (a new store has none) and the search attributes, as `fulfilment provision --only temporal` makes them. */
  async afterReady(plan) {
    const ours = !plan.temporal.external;
    if (ours) {
      await ensureNamespace(plan.temporal.settings);
      await waitFor("the Temporal server's history and matching services", 120_000, () =>
        historyAndMatchingAnswer(plan.temporal.settings),
      );
    }
    await registerSearchAttributes(plan.temporal.settings, ours);
  },
};

const RETENTION = proto.google.protobuf.Duration.fromObject({ seconds: 72 * 3600 });

async function namespaceKnown(settings: Config['temporal']): Promise<boolean> {
  return (await namespaceRetention(settings)) !== undefined;
}

/** The namespace's retention, when the frontend knows it. */
async function namespaceRetention(settings: Config['temporal']): Promise<number | undefined> {
  return withConnection(settings, async (c) => {
    const d = await c.workflowService.describeNamespace({ namespace: settings.namespace });
    return Number(d.config?.workflowExecutionRetentionTtl?.seconds ?? 0);
  }).catch(() => undefined);
}

/**
 * The namespace of `settings` with a retention of 72 h: registered unless it exists, its retention set when it has
 * another (the dev server makes `default` with 24 h); waits until the frontend knows it.
 */
export async function ensureNamespace(settings: Config['temporal'], service = 'temporal'): Promise<void> {
  const retention = await namespaceRetention(settings);
  if (retention !== undefined) {
    if (retention !== Number(RETENTION.seconds))
      await withConnection(settings, (c) =>
        c.workflowService.updateNamespace({
          namespace: settings.namespace,
          config: { workflowExecutionRetentionTtl: RETENTION },
        }),
      );
    return;
  }
  await withConnection(settings, async (c) => {
    try {
      await c.workflowService.registerNamespace({
        namespace: settings.namespace,
        workflowExecutionRetentionPeriod: RETENTION,
      });
      say(`${service}: registered namespace ${settings.namespace}`);
    } catch (e) {
      if ((e as { code?: number }).code !== 6) throw e; // 6 = ALREADY_EXISTS
    }
  });
  await waitFor(`namespace ${settings.namespace} (${service})`, 60_000, async () =>
    (await namespaceKnown(settings)) ? true : undefined,
  );
}

/**
 * The service's search attributes in the namespace of `settings`, as `fulfilment provision --only temporal` makes them
 * (src/roles/provision/search-attributes.ts). A namespace a Temporal server has just registered reaches the operator API's
 * namespace cache within its refresh interval (10 s): with `justRegistered`, NOT_FOUND is retried for up to a minute.
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
        await sleep(500);
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
