/**
 * An order's run moving to a newer worker version (orderFulfilmentV2, order-fulfilment.ts): the run is pinned, and when
 * Temporal says another version is current, a waiting order asks the worker whether the move goes forward (a local
 * activity, so the answer is in the history) and, if so, continues as new on it with its state. Only forward: never
 * back to an older version (a rollback) or onto a ramp (src/adapters/deployment/move-rule.ts). The move owns the
 * worker's last refusal, and is asked by the run's main loop between steps; a change here is a change of the workflow,
 * held by the replay gate (docs/changing-the-workflow.md). Deterministic code only (bundled into the sandbox).
 */
import { proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { VersionActivities } from '../activities/move-answer.js';
import type { OrderRun } from './order-run.js';
import { withNote } from './order-state.js';
import { failureReason } from './activity-failures.js';

/** The worker's answer to a version move: a local activity, so the answer is in the history. */
const versionCheck = proxyLocalActivities<VersionActivities>({
  startToCloseTimeout: '5 seconds',
  retry: { maximumAttempts: 3 },
});
/** How long a refused version move is not asked about again (workflow time, ms). */
const VERSION_MOVE_RECHECK_MS = 10 * 60 * 1000;

/** The run's move to a newer worker version, and when and why the worker last refused one. */
export class VersionMove {
  private refusedAt?: number;
  private refusal?: string;

  constructor(private readonly run: OrderRun) {}

  /**
   * True when Temporal says a newer worker version is current than the one this run is pinned to (servers from 1.32;
   * earlier ones never say so), and nothing is waiting to be handled: checked between steps, so an order that waits
   * — for its placement, the warehouse, a hold — moves to the new code when it next wakes, and one that goes well
   * simply finishes where it started.
   */
  ready(): boolean {
    return workflowInfo().targetWorkerDeploymentVersionChanged && !this.run.hasWork();
  }

  /**
   * Asks the worker whether the move Temporal offers goes forward (the current version newer than this run's,
   * nothing ramping); a definite refusal (a rollback, a ramp) is noted and not asked again for
   * VERSION_MOVE_RECHECK_MS of workflow time.
   */
  async mayMoveForward(): Promise<boolean> {
    if (this.refusedAt !== undefined && Date.now() - this.refusedAt < VERSION_MOVE_RECHECK_MS) return false;
    const buildId = workflowInfo().currentDeploymentVersion?.buildId;
    let answer: { move: boolean; why: string; settled?: boolean };
    try {
      answer = await versionCheck.mayMoveVersion({ ...(buildId !== undefined ? { buildId } : {}) });
    } catch (err) {
      answer = { move: false, why: `the worker could not say (${failureReason(err)})`, settled: false };
    }
    if (answer.move) return true;
    if (answer.why !== this.refusal) this.run.state = withNote(this.run.state, `stays on its version: ${answer.why}`);
    this.refusal = answer.why;
    // Asked again at the next pass when the answer may be a moment behind Temporal (nothing definite refused it).
    if (answer.settled !== false) this.refusedAt = Date.now();
    return false;
  }
}
