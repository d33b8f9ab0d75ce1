/**
 * The order workflow's question before it moves to another version of its deployment (upgrade on continue-as-new): is
 * that a move forward? Answered on a fresh reading of the deployment's routing (the worker's own reading every 2 s may
 * be behind the change Temporal just told the run of) by the rule in src/adapters/deployment/move-rule.ts; as a local
 * activity, its answer is recorded in the order's history, so a replay takes the same branch.
 */
import type { DeploymentView } from '../src/adapters/deployment/routing.js';
import { versionMove, type VersionMove } from '../src/adapters/deployment/move-rule.js';

export type { VersionMove } from '../src/adapters/deployment/move-rule.js';

export function createVersionActivities(deps: { readRouting: () => Promise<DeploymentView | undefined> }) {
  return {
    /** May a run pinned to `buildId` move to the deployment's current version now? */
    async mayMoveVersion(input: { buildId?: string }): Promise<VersionMove> {
      return versionMove(await deps.readRouting(), input.buildId);
    },
  };
}

export type VersionActivities = ReturnType<typeof createVersionActivities>;
