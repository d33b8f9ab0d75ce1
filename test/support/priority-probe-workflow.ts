/**
 * A workflow of the fair-dispatch test (test/integration/fair-dispatch.int.test.ts), bundled alone: it continues as
 * new once, then runs one activity through the task queue (no eager dispatch), and answers with the priority its
 * second run and that activity were given. It sets no priority of its own, as the order workflow sets none: what it
 * answers is what Temporal carries over from the run's start. Deterministic code only.
 */
import { continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Priority } from '@temporalio/common';

export interface ProbeActivities {
  /** The activity's own info.priority, as its worker was given it. */
  priorityOfActivity(): Promise<Priority | undefined>;
}

const { priorityOfActivity } = proxyActivities<ProbeActivities>({
  startToCloseTimeout: '30 seconds',
  allowEagerDispatch: false,
});

export async function priorityProbe(continued: boolean): Promise<{ run?: Priority; activity?: Priority }> {
  if (!continued) await continueAsNew<typeof priorityProbe>(true);
  return { run: workflowInfo().priority, activity: await priorityOfActivity() };
}
