/**
 * A worker deployment's versions and where Temporal routes new orders (Worker Deployment Versioning): read its
 * versions and routing, make a version current, ramp one to a share of new runs, retire a drained one. The worker
 * uses it to take its place when it starts (src/roles/worker/version-rollout.ts), `fulfilment deployment` to show and
 * change it. Every call goes to Temporal's WorkflowService, the same as `temporal worker deployment` does.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

type WorkflowService = proto.temporal.api.workflowservice.v1.WorkflowService;
const Status = proto.temporal.api.enums.v1.WorkerDeploymentVersionStatus;
const Drainage = proto.temporal.api.enums.v1.VersionDrainageStatus;

/** Where a version stands: `inactive` never took new runs; `draining` took them and has open pinned runs; `drained` has none. */
export type VersionStatus = 'inactive' | 'current' | 'ramping' | 'draining' | 'drained' | 'unknown';

export interface VersionView {
  buildId: string;
  status: VersionStatus;
  createdAt?: Date;
  /** When it first became current or ramping (none: never). */
  firstActivatedAt?: Date;
  /** When it last became current (none: never current; a canary that only ramped has none). */
  lastCurrentAt?: Date;
  /** When it last stopped being current or ramping. */
  lastDeactivatedAt?: Date;
}

export interface DeploymentView {
  name: string;
  /** The current version's build id; undefined when new runs go to unversioned workers. */
  current?: string;
  /** The version a share of new runs go to, and that share in percent. */
  ramping?: { buildId: string; percent: number };
  /** Oldest first. */
  versions: VersionView[];
  /** Passed back on a change, so two changes made from the same reading cannot both apply. */
  conflictToken: Uint8Array;
}

const STATUS_NAMES: Record<number, VersionStatus> = {
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE]: 'inactive',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT]: 'current',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING]: 'ramping',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING]: 'draining',
  [Status.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED]: 'drained',
};

type Timestamp = proto.google.protobuf.ITimestamp | null | undefined;
function toDate(t: Timestamp): Date | undefined {
  if (!t?.seconds) return undefined;
  return new Date(Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6));
}

/** gRPC NOT_FOUND: no deployment (or version) of that name. */
const isNotFound = (err: unknown) => (err as { code?: number }).code === 5;

/** The deployment's routing and versions; undefined when no worker of it has polled yet. */
export async function describeDeployment(
  service: WorkflowService,
  namespace: string,
  name: string,
): Promise<DeploymentView | undefined> {
  let res: proto.temporal.api.workflowservice.v1.IDescribeWorkerDeploymentResponse;
  try {
    res = await service.describeWorkerDeployment({ namespace, deploymentName: name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const info = res.workerDeploymentInfo;
  const routing = info?.routingConfig;
  const versions = (info?.versionSummaries ?? [])
    .map((v) => {
      const drained = v.drainageStatus === Drainage.VERSION_DRAINAGE_STATUS_DRAINED;
      const status = STATUS_NAMES[v.status ?? 0] ?? (drained ? 'drained' : 'unknown');
      const view: VersionView = { buildId: v.deploymentVersion?.buildId ?? v.version ?? '', status };
      const createdAt = toDate(v.createTime);
      const firstActivatedAt = toDate(v.firstActivationTime);
      const lastCurrentAt = toDate(v.lastCurrentTime);
      const lastDeactivatedAt = toDate(v.lastDeactivationTime);
      if (createdAt) view.createdAt = createdAt;
      if (firstActivatedAt) view.firstActivatedAt = firstActivatedAt;
      if (lastCurrentAt) view.lastCurrentAt = lastCurrentAt;
      if (lastDeactivatedAt) view.lastDeactivatedAt = lastDeactivatedAt;
      return view;
    })
    .sort((a, b) => (a.createdAt?.getTime() ?? 0) - (b.createdAt?.getTime() ?? 0));
  const view: DeploymentView = { name, versions, conflictToken: res.conflictToken ?? new Uint8Array() };
  const current = routing?.currentDeploymentVersion?.buildId;
  if (current) view.current = current;
  const ramping = routing?.rampingDeploymentVersion?.buildId;
  if (ramping) view.ramping = { buildId: ramping, percent: routing?.rampingVersionPercentage ?? 0 };
  return view;
}

export interface RoutingChange {
  namespace: string;
  deployment: string;
  buildId: string;
  /** Who makes the change (recorded by Temporal as the deployment's last modifier). */
  identity: string;
  /** From the reading the change was decided on: refused if the routing changed since. */
  conflictToken?: Uint8Array;
}

/**
 * The version `rollback` makes current again: of the versions that were ever current, the one most recently made
 * current before the current one (undefined: none). A version that only ramped (a canary whose ramp was aborted) was
 * never current and is never the target, however recently it stopped ramping.
 */
export function rollbackTarget(view: Pick<DeploymentView, 'current' | 'versions'>): VersionView | undefined {
  return view.versions
    .filter((v) => v.buildId !== view.current && v.lastCurrentAt !== undefined)
    .sort((a, b) => b.lastCurrentAt!.getTime() - a.lastCurrentAt!.getTime())[0];
}

/** Makes `buildId` the current version: every new run of the deployment starts on it (but the ramp's share). */
export async function setCurrentVersion(service: WorkflowService, c: RoutingChange): Promise<void> {
  await service.setWorkerDeploymentCurrentVersion({
    namespace: c.namespace,
    deploymentName: c.deployment,
    buildId: c.buildId,
    identity: c.identity,
    ...(c.conflictToken ? { conflictToken: c.conflictToken } : {}),
  });
}

/** Sends `percent` of new runs to `buildId`, the rest to the current version; percent 0 keeps it ramping at none. */
export async function setRampingVersion(
  service: WorkflowService,
  c: RoutingChange & { percent: number },
): Promise<void> {
  await service.setWorkerDeploymentRampingVersion({
    namespace: c.namespace,
    deploymentName: c.deployment,
    buildId: c.buildId,
    percentage: c.percent,
    identity: c.identity,
    ...(c.conflictToken ? { conflictToken: c.conflictToken } : {}),
  });
}

/**
 * Removes a version from the deployment. Temporal refuses while it is current or ramping, while it has open runs
 * pinned to it (not drained), and while its workers still poll — stop them first.
 */
export async function retireVersion(service: WorkflowService, c: Omit<RoutingChange, 'conflictToken'>): Promise<void> {
  await service.deleteWorkerDeploymentVersion({
    namespace: c.namespace,
    deploymentVersion: { deploymentName: c.deployment, buildId: c.buildId },
    identity: c.identity,
  });
}

/**
 * Open runs pinned to each version, counted by Temporal's visibility (`TemporalWorkerDeploymentVersion`, written
 * `deployment:build` since server 1.31 and `deployment.build` before: both are asked for).
 */
export async function openRunsByVersion(
  client: Client,
  deployment: string,
  buildIds: readonly string[],
): Promise<Map<string, number>> {
  const counts = await Promise.all(
    buildIds.map(async (id) => {
      const query = `TemporalWorkerDeploymentVersion IN ("${deployment}:${id}", "${deployment}.${id}") AND ExecutionStatus = "Running"`;
      return [id, (await client.workflow.count(query)).count] as const;
    }),
  );
  return new Map(counts);
}
