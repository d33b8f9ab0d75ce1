/**
 * `fulfilment deployment …`: the worker deployment's versions and where new orders go
 * (src/adapters/deployment/routing.ts). Every change is made against the routing as just read (its conflict token): two
 * operators acting at once cannot both apply a change decided on the same reading.
 */
import { hostname, userInfo } from 'node:os';
import type { Client } from '@temporalio/client';
import type { CliContext } from '../context.js';
import { NotFoundError, UsageError } from '../cli-errors.js';
import { eprintln, println } from '../output.js';
import { formatTable } from '../table.js';
import { cliTemporalClient } from '../temporal-client.js';
import {
  describeDeployment,
  openRunsByVersion,
  retireVersion,
  rollbackTarget,
  setCurrentVersion,
  setRampingVersion,
  type DeploymentView,
} from '../../adapters/deployment/routing.js';
import { liveWorkersVerdict, pollersByVersion } from '../../adapters/deployment/live-workers.js';

export interface DeploymentOptions {
  /** The deployment (default WORKER_DEPLOYMENT_NAME, else TEMPORAL_TASK_QUEUE). */
  deployment?: string;
  json?: boolean;
}

/** `current`, `ramp` and `rollback`: route new orders to a version even when no worker of it polls. */
export interface RoutingOptions extends DeploymentOptions {
  force?: boolean;
}

const identity = () => `fulfilment-cli ${userInfo().username}@${hostname()}`;

interface Target {
  client: Client;
  namespace: string;
  deployment: string;
  view: DeploymentView;
}

async function target(ctx: CliContext, opts: DeploymentOptions): Promise<Target> {
  const deployment = opts.deployment ?? ctx.config.WORKER_DEPLOYMENT_NAME ?? ctx.config.TEMPORAL_TASK_QUEUE;
  const namespace = ctx.config.TEMPORAL_NAMESPACE;
  const client = await cliTemporalClient(ctx.config);
  const view = await describeDeployment(client.workflowService, namespace, deployment);
  if (!view)
    throw new NotFoundError(
      `no worker deployment ${deployment} in namespace ${namespace}: no worker of it has polled (WORKER_DEPLOYMENT_NAME, default the task queue)`,
    );
  return { client, namespace, deployment, view };
}

function requireVersion(t: Target, buildId: string): void {
  if (!t.view.versions.some((v) => v.buildId === buildId))
    throw new NotFoundError(
      `no version ${buildId} in deployment ${t.deployment} (its versions: ${t.view.versions.map((v) => v.buildId).join(', ') || 'none'}); a version exists once a worker of it has polled`,
    );
}

/**
 * Refuses (UsageError) to route new orders (all, or a ramp's share) to a version with no live workers, unless --force; forced, says so on
 * stderr. `command` is what the operator typed, for the override's wording.
 */
async function requireLiveWorkers(
  ctx: CliContext,
  t: Target,
  buildId: string,
  command: string,
  force: boolean | undefined,
): Promise<void> {
  const pollers = await pollersByVersion(t.client.workflowService, t.namespace, t.deployment, [buildId]);
  const verdict = liveWorkersVerdict({
    deployment: t.deployment,
    version: pollers.get(buildId) ?? { buildId, pollers: 0, taskQueues: [] },
    command,
    force: force === true,
  });
  if (!verdict.go) throw new UsageError(verdict.refusal);
  if (verdict.warning) eprintln(ctx.out, verdict.warning);
}

const iso = (d: Date | undefined) => (d ? d.toISOString().replace(/\.\d+Z$/, 'Z') : '-');

export async function deploymentShow(ctx: CliContext, opts: DeploymentOptions): Promise<void> {
  const t = await target(ctx, opts);
  const open = await openRunsByVersion(
    t.client,
    t.deployment,
    t.view.versions.map((v) => v.buildId),
  );
  const versions = t.view.versions.map((v) => ({
    buildId: v.buildId,
    status: v.status,
    openRuns: open.get(v.buildId) ?? 0,
    createdAt: v.createdAt?.toISOString() ?? null,
    firstActivatedAt: v.firstActivatedAt?.toISOString() ?? null,
    lastDeactivatedAt: v.lastDeactivatedAt?.toISOString() ?? null,
  }));
  if (opts.json) {
    println(
      ctx.out,
      JSON.stringify({
        deployment: t.deployment,
        namespace: t.namespace,
        current: t.view.current ?? null,
        ramping: t.view.ramping ?? null,
        versions,
      }),
    );
    return;
  }
  const ramp = t.view.ramping ? `, ramping ${t.view.ramping.buildId} at ${t.view.ramping.percent}%` : '';
  println(ctx.out, `deployment ${t.deployment} (namespace ${t.namespace}): current ${t.view.current ?? 'none'}${ramp}`);
  const rows = t.view.versions.map((v) => [
    v.buildId,
    v.status,
    String(open.get(v.buildId) ?? 0),
    iso(v.createdAt),
    iso(v.firstActivatedAt),
    iso(v.lastDeactivatedAt),
  ]);
  for (const line of formatTable(['BUILD ID', 'STATUS', 'OPEN RUNS', 'CREATED', 'FIRST ACTIVE', 'LAST ACTIVE'], rows))
    println(ctx.out, line);
}

export async function deploymentCurrent(ctx: CliContext, opts: RoutingOptions & { buildId: string }): Promise<void> {
  const t = await target(ctx, opts);
  requireVersion(t, opts.buildId);
  if (t.view.current === opts.buildId && t.view.ramping === undefined) {
    println(ctx.out, `${opts.buildId} is current in ${t.deployment} already`);
    return;
  }
  await requireLiveWorkers(ctx, t, opts.buildId, `fulfilment deployment current ${opts.buildId}`, opts.force);
  await setCurrentVersion(t.client.workflowService, {
    namespace: t.namespace,
    deployment: t.deployment,
    buildId: opts.buildId,
    identity: identity(),
    conflictToken: t.view.conflictToken,
  });
  println(
    ctx.out,
    `${t.deployment}: current ${opts.buildId} (was ${t.view.current ?? 'none'}); new orders start on it`,
  );
}

/** A share of none sends no order to the version, so only a share above none needs its workers. */
export async function deploymentRamp(
  ctx: CliContext,
  opts: RoutingOptions & { buildId: string; percent: number },
): Promise<void> {
  const t = await target(ctx, opts);
  requireVersion(t, opts.buildId);
  if (t.view.current === opts.buildId)
    throw new UsageError(`${opts.buildId} is the current version of ${t.deployment}: ramp another one`);
  if (opts.percent > 0) {
    const command = `fulfilment deployment ramp ${opts.buildId} ${opts.percent}`;
    await requireLiveWorkers(ctx, t, opts.buildId, command, opts.force);
  }
  await setRampingVersion(t.client.workflowService, {
    namespace: t.namespace,
    deployment: t.deployment,
    buildId: opts.buildId,
    percent: opts.percent,
    identity: identity(),
    conflictToken: t.view.conflictToken,
  });
  println(
    ctx.out,
    `${t.deployment}: ramping ${opts.buildId} at ${opts.percent}% of new orders (the rest on ${t.view.current ?? 'unversioned workers'})`,
  );
}

export async function deploymentRollback(ctx: CliContext, opts: RoutingOptions): Promise<void> {
  const t = await target(ctx, opts);
  const previous = rollbackTarget(t.view);
  if (!previous)
    throw new NotFoundError(
      `no version of ${t.deployment} was current before ${t.view.current ?? 'none'}: nothing to roll back to`,
    );
  await requireLiveWorkers(ctx, t, previous.buildId, 'fulfilment deployment rollback', opts.force);
  await setCurrentVersion(t.client.workflowService, {
    namespace: t.namespace,
    deployment: t.deployment,
    buildId: previous.buildId,
    identity: identity(),
    conflictToken: t.view.conflictToken,
  });
  println(
    ctx.out,
    `${t.deployment}: rolled back to ${previous.buildId} (was ${t.view.current ?? 'none'}${t.view.ramping ? `, ramping ${t.view.ramping.buildId}` : ''}); new orders start on it`,
  );
}

export async function deploymentRetire(ctx: CliContext, opts: DeploymentOptions & { buildId: string }): Promise<void> {
  const t = await target(ctx, opts);
  requireVersion(t, opts.buildId);
  const open = (await openRunsByVersion(t.client, t.deployment, [opts.buildId])).get(opts.buildId) ?? 0;
  if (open > 0)
    throw new UsageError(
      `${opts.buildId} still runs ${open} open run(s) pinned to it: keep its workers until \`fulfilment deployment show\` counts 0`,
    );
  await retireVersion(t.client.workflowService, {
    namespace: t.namespace,
    deployment: t.deployment,
    buildId: opts.buildId,
    identity: identity(),
  });
  println(ctx.out, `${t.deployment}: version ${opts.buildId} retired`);
}
