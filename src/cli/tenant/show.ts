/**
 * `fulfilment tenant show <tenant> [--json]`: one tenant as the service sees it, each figure from where it lives.
 *
 *   weight, share   the configuration (TENANT_WEIGHTS, TENANT_DEFAULT_WEIGHT: base/tenants/weights.ts) over the
 *                   tenants that have work, as Temporal's visibility lists them (share.ts, open-runs.ts)
 *   backlog         the tenant's orders the store holds unsettled, read as the runtime role in a transaction scoped to
 *                   the tenant (src/adapters/store/tenant-backlog.ts)
 *   open runs       its open order runs on TEMPORAL_TASK_QUEUE (the TenantId search attribute)
 *   shipping        the pause of shipping in force for it, its own or every tenant's (shipping_pauses)
 *
 * Read-only. A source that cannot be read within --timeout is reported and the others still shown; the exit code is
 * then 1. A tenant found nowhere (no order in the store, no open run, no pause of its own, not named in
 * TENANT_WEIGHTS) is not found (exit 1): tenant ids are case-sensitive.
 */
import { createDb } from '../../adapters/store/db.js';
import { runtimeConnection } from '../../adapters/store/connection.js';
import { checkRuntimeRole } from '../../adapters/store/runtime-role.js';
import { pausesInForce, type ShippingPause } from '../../adapters/store/shipment-waits.js';
import { tenantBacklog, type TenantBacklog } from '../../adapters/store/tenant-backlog.js';
import { tenantWeights } from '../../base/tenants/weights.js';
import { withTimeout } from '../../base/timeout.js';
import type { CliContext } from '../context.js';
import { NotFoundError } from '../cli-errors.js';
import { println } from '../output.js';
import { cliTemporalClientWithin } from '../temporal-client.js';
import { openRunsOf, tenantsWithOpenRuns } from './open-runs.js';
import { checkTenantShowOptions, DEFAULT_TENANT_SHOW_TIMEOUT_SECONDS, type TenantShowOptions } from './options.js';
import { tenantShare } from './share.js';
import type { TenantShowResult } from './show-result.js';
import { describeTenant } from './show-text.js';

export { checkTenantShowOptions, type TenantShowOptions } from './options.js';

/** Some source could not be read; what could be read was printed. */
export class IncompleteTenantShowError extends Error {
  override name = 'IncompleteTenantShowError';
}

interface StoreView {
  backlog: TenantBacklog;
  pause: ShippingPause | undefined;
}

/** The tenant's backlog and the pause in force for it, as the runtime role. */
async function readStore(ctx: CliContext, tenantId: string): Promise<StoreView> {
  const db = createDb(runtimeConnection(ctx.config), 1);
  try {
    await checkRuntimeRole(db);
    const backlog = await tenantBacklog(db, tenantId);
    const pauses = await pausesInForce(db);
    const pause = pauses.find((p) => p.tenantId === tenantId) ?? pauses.find((p) => p.tenantId === undefined);
    return { backlog, pause };
  } finally {
    await db.end().catch(() => undefined);
  }
}

interface TemporalView {
  openRuns: number;
  withWork: string[];
  more: boolean;
}

/** The tenant's open runs and the tenants with any, on the service's task queue; the connection bounded by `ms`. */
async function readTemporal(ctx: CliContext, tenantId: string, ms: number): Promise<TemporalView> {
  const client = await cliTemporalClientWithin(ctx.config, ms);
  try {
    const queue = ctx.config.TEMPORAL_TASK_QUEUE;
    const [openRuns, found] = await bounded(
      ms,
      Promise.all([openRunsOf(client, queue, tenantId), tenantsWithOpenRuns(client, queue)]),
    );
    return { openRuns, withWork: found.tenants, more: found.more };
  } finally {
    await client.connection.close().catch(() => undefined);
  }
}

const bounded = <T>(ms: number, work: Promise<T>) =>
  withTimeout(work, ms, `no answer within ${ms / 1000} s (--timeout)`);

export async function tenantShow(ctx: CliContext, opts: TenantShowOptions): Promise<TenantShowResult> {
  checkTenantShowOptions(opts);
  const { tenantId } = opts;
  const { config } = ctx;
  const ms = (opts.timeoutSeconds ?? DEFAULT_TENANT_SHOW_TIMEOUT_SECONDS) * 1000;
  const problems: string[] = [];
  const part = async <T>(what: string, read: () => Promise<T>): Promise<T | undefined> =>
    read().catch((err: unknown) => {
      problems.push(`${what}: ${(err as Error).message}`);
      return undefined;
    });
  const [store, temporal] = await Promise.all([
    part('backlog and pauses (PostgreSQL, DATABASE_URL)', () => bounded(ms, readStore(ctx, tenantId))),
    part(`open runs (Temporal, namespace ${config.TEMPORAL_NAMESPACE})`, () => readTemporal(ctx, tenantId, ms)),
  ]);
  const weightOf = tenantWeights(config);
  const share = temporal && tenantShare(tenantId, temporal.withWork, weightOf);
  const result: TenantShowResult = {
    tenantId,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    weight: weightOf(tenantId),
    weightFrom: config.TENANT_WEIGHTS?.has(tenantId) ? 'TENANT_WEIGHTS' : 'TENANT_DEFAULT_WEIGHT',
    share: share && temporal ? { ...share, hasWork: temporal.openRuns > 0, moreTenants: temporal.more } : null,
    openRuns: temporal?.openRuns ?? null,
    backlog: store?.backlog ?? null,
    pause: store?.pause ?? null,
    pauseKnown: store !== undefined,
    problems,
  };
  const nowhere =
    result.weightFrom === 'TENANT_DEFAULT_WEIGHT' &&
    store?.backlog.orders === 0 &&
    store.pause?.tenantId !== tenantId &&
    temporal?.openRuns === 0;
  if (nowhere)
    throw new NotFoundError(
      `no tenant ${tenantId}: the store holds no order of it, task queue ${config.TEMPORAL_TASK_QUEUE} has no open run of it, ` +
        'no pause names it and TENANT_WEIGHTS does not (tenant ids are case-sensitive)',
    );
  if (opts.json) println(ctx.out, JSON.stringify(result));
  else for (const line of describeTenant(result)) println(ctx.out, line);
  if (problems.length > 0)
    throw new IncompleteTenantShowError(
      `tenant ${tenantId} is shown incomplete:\n${problems.map((p) => `  ${p}`).join('\n')}`,
    );
  return result;
}
