/**
 * Whether a worker deployment's versions have live workers: the pollers Temporal lists for each version on the task
 * queues that version has polled (DescribeWorkerDeploymentVersion names the queues, DescribeTaskQueue lists each
 * queue's pollers with the deployment version they poll for). Temporal forgets a poller `matching.PollerHistoryTTL`
 * after its last poll (5 minutes by default; an idle worker polls again at least every minute, the long poll's
 * length), so a version whose workers stopped still counts as live for up to that long.
 *
 * `fulfilment deployment current|ramp|rollback` refuse a version without any (src/cli/deployment/deployment.ts), and
 * the worker counts the open orders pinned to such a version (src/roles/worker/pinned-without-workers.ts); `fulfilment
 * reconcile` names them (src/reconcile/pinned-runs.ts).
 */
import proto from '@temporalio/proto';
import type { DeploymentView } from './routing.js';

type WorkflowService = proto.temporal.api.workflowservice.v1.WorkflowService;
const TaskQueueKind = proto.temporal.api.enums.v1.TaskQueueKind;
const TaskQueueType = proto.temporal.api.enums.v1.TaskQueueType;

/**
 * The versions worth asking about: every one that ever took new runs. An `inactive` version was never current or
 * ramping, so no run is pinned to it.
 */
export function versionsToCheck(view: Pick<DeploymentView, 'versions'>): string[] {
  return view.versions.filter((v) => v.status !== 'inactive').map((v) => v.buildId);
}

/** A version's pollers as Temporal lists them now, over the task queues it has polled. */
export interface VersionPollers {
  buildId: string;
  /** Pollers of this version, summed over its task queues (workflow and activity pollers alike). */
  pollers: number;
  /** The task queues the version has ever polled (`name (workflow)`), for messages. */
  taskQueues: string[];
}

/** gRPC NOT_FOUND: no such version (retired, or never polled). */
const isNotFound = (err: unknown) => (err as { code?: number }).code === 5;

const typeName = (type: number) => (type === TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY ? 'activity' : 'workflow');

/**
 * The pollers of each of `buildIds` in `deployment`: one DescribeWorkerDeploymentVersion per version, then one
 * DescribeTaskQueue per task queue (and type) any of them has polled, however many versions share it.
 */
export async function pollersByVersion(
  service: WorkflowService,
  namespace: string,
  deployment: string,
  buildIds: readonly string[],
): Promise<Map<string, VersionPollers>> {
  const queuesOf = new Map<string, { name: string; type: number }[]>();
  await Promise.all(
    buildIds.map(async (buildId) => {
      try {
        const res = await service.describeWorkerDeploymentVersion({
          namespace,
          deploymentVersion: { deploymentName: deployment, buildId },
        });
        queuesOf.set(
          buildId,
          (res.versionTaskQueues ?? []).map((q) => ({ name: q.name ?? '', type: Number(q.type ?? 0) })),
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
        queuesOf.set(buildId, []);
      }
    }),
  );
  const queueKey = (q: { name: string; type: number }) => `${q.type}/${q.name}`;
  const unique = new Map([...queuesOf.values()].flat().map((q) => [queueKey(q), q]));
  const pollersOn = new Map<string, proto.temporal.api.taskqueue.v1.IPollerInfo[]>();
  await Promise.all(
    [...unique].map(async ([key, q]) => {
      const res = await service.describeTaskQueue({
        namespace,
        taskQueue: { name: q.name, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: q.type,
      });
      pollersOn.set(key, res.pollers ?? []);
    }),
  );
  return new Map(
    buildIds.map((buildId) => {
      const queues = queuesOf.get(buildId) ?? [];
      const pollers = queues
        .flatMap((q) => pollersOn.get(queueKey(q)) ?? [])
        .filter(
          (p) => p.deploymentOptions?.deploymentName === deployment && p.deploymentOptions?.buildId === buildId,
        ).length;
      const taskQueues = queues.map((q) => `${q.name} (${typeName(q.type)})`);
      return [buildId, { buildId, pollers, taskQueues }] as const;
    }),
  );
}

/** What `deployment current|ramp|rollback` may do with a version, given its pollers: go, or refuse and say why. */
export type LiveWorkersVerdict = { go: true; warning?: string } | { go: false; refusal: string };

/**
 * The decision, pure: a version with pollers may take new orders; one without is refused — new orders would start
 * on it and wait, with nothing to run them — unless forced, which goes ahead with a warning.
 */
export function liveWorkersVerdict(c: {
  deployment: string;
  version: VersionPollers;
  /** The command that would route new orders to it, as the operator types it (for the override's wording). */
  command: string;
  force: boolean;
}): LiveWorkersVerdict {
  const { deployment, version, command } = c;
  if (version.pollers > 0) return { go: true };
  const queues = version.taskQueues.length > 0 ? version.taskQueues.join(', ') : 'none';
  const why =
    `version ${version.buildId} of ${deployment} has no live workers: Temporal lists no poller of it on its task ` +
    `queues (${queues}; a stopped worker's pollers are forgotten 5 minutes after their last poll)`;
  if (c.force)
    return {
      go: true,
      warning: `warning: ${why}; going ahead (--force): new orders start on it and wait until a worker of it polls`,
    };
  return {
    go: false,
    refusal: `${why}. New orders would start on it and wait with nothing to run them. Start a worker of ${version.buildId} (WORKER_BUILD_ID=${version.buildId}) first, or run \`${command} --force\` to route new orders to it anyway`,
  };
}
