/**
 * The open runs pinned to a version no worker polls for, as the runs check reads them: the deployment's versions that
 * ever took new runs (versionsToCheck), their pollers (src/adapters/deployment/live-workers.ts), and for each version
 * without any, its open order runs of the tenants (visibility, `TemporalWorkerDeploymentVersion`, one listing per
 * version and tenant). The worker's gauge counts the same runs (src/roles/worker/pinned-without-workers.ts); this names
 * their orders.
 *
 * Rules a reader must not break:
 * - a run listed here is reported only once confirmed against the run itself (describe: still running, still pinned
 *   to that version) and the version's pollers read again (confirmStranded): visibility lags and workers come back;
 * - Temporal forgets a stopped worker's pollers 5 minutes after their last poll (`matching.PollerHistoryTTL`), so a
 *   version counts as having workers for up to that long after its last one stopped.
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import proto from '@temporalio/proto';
import { describeDeployment } from '../adapters/deployment/routing.js';
import { pollersByVersion, versionsToCheck } from '../adapters/deployment/live-workers.js';
import { ID_PATTERN } from '../vocabulary/order.js';
import { ORDER_WORKFLOW_TYPE, orderWorkflowId } from '../../workflows/api.js';
import { orderKey } from './mismatch.js';
import { orderOfWorkflowId } from './temporal-runs.js';

const PINNED = proto.temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;

/** Where the deployment's open runs stand: which are pinned to a version without workers, which versions have some. */
export interface StrandedRuns {
  deployment: string;
  /** `tenant/order` → the version its open run is pinned to, for versions no worker polls for. */
  pinnedTo: Map<string, string>;
  /** The versions with live workers, for the report. */
  withWorkers: string[];
}

/** Reads the deployment's versions, their pollers, and the tenants' open runs pinned to versions without workers. */
export async function readStrandedRuns(
  client: Client,
  c: { namespace: string; deployment: string; tenants: readonly string[] },
): Promise<StrandedRuns> {
  const stranded: StrandedRuns = { deployment: c.deployment, pinnedTo: new Map(), withWorkers: [] };
  const view = await describeDeployment(client.workflowService, c.namespace, c.deployment);
  if (!view) return stranded;
  const checked = versionsToCheck(view);
  const pollers = await pollersByVersion(client.workflowService, c.namespace, c.deployment, checked);
  for (const buildId of checked) {
    if ((pollers.get(buildId)?.pollers ?? 0) > 0) {
      stranded.withWorkers.push(buildId);
      continue;
    }
    for (const tenantId of c.tenants) {
      if (!ID_PATTERN.test(tenantId)) throw new Error(`tenant id ${JSON.stringify(tenantId)} is not a tenant id`);
      const query =
        `WorkflowType = '${ORDER_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TenantId = '${tenantId}' AND ` +
        `TemporalWorkerDeploymentVersion IN ("${c.deployment}:${buildId}", "${c.deployment}.${buildId}")`;
      for await (const w of client.workflow.list({ query })) {
        const order = orderOfWorkflowId(w.workflowId);
        if (order) stranded.pinnedTo.set(orderKey(order.tenantId, order.orderId), buildId);
      }
    }
  }
  return stranded;
}

/**
 * Whether the order's run is still open, pinned to `buildId`, and the version still has no pollers: asked of the run
 * and of the task queues now, not of the visibility store.
 */
export async function confirmStranded(
  client: Client,
  c: { namespace: string; deployment: string; tenantId: string; orderId: string; buildId: string },
): Promise<boolean> {
  const d = await client.workflow
    .getHandle(orderWorkflowId(c.tenantId, c.orderId))
    .describe()
    .catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
  const info = d?.raw.workflowExecutionInfo?.versioningInfo;
  if (d?.status.name !== 'RUNNING' || info?.behavior !== PINNED) return false;
  if (info.deploymentVersion?.buildId !== c.buildId) return false;
  const pollers = await pollersByVersion(client.workflowService, c.namespace, c.deployment, [c.buildId]);
  return (pollers.get(c.buildId)?.pollers ?? 0) === 0;
}
