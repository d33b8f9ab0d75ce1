/**
 * A retention run's Temporal Schedule (the dedupe ledger's, the status outbox's), kept by every worker at start-up,
 * idempotently: created when missing, updated when its interval, workflow, task queue, arguments or policies differ from
 * this worker's configuration, left alone otherwise. Its state (paused by an operator, with a note) is never touched
 * by a restart. An interval of 0 makes a worker leave it alone.
 */
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
  type ScheduleHandle,
  type ScheduleOptions,
  type ScheduleOptionsStartWorkflowAction,
} from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import { durationMs, type Config } from '../../base/config.js';
import type { Logger } from '../../base/log.js';

export type ScheduleSync = 'created' | 'updated' | 'unchanged' | 'disabled';

type Action = ScheduleOptionsStartWorkflowAction<Workflow>;
type Wanted = Required<Pick<ScheduleOptions<Action>, 'spec' | 'action' | 'policies'>>;

/** What one retention schedule is to be, from the configuration. */
export interface RetentionScheduleSpec {
  scheduleId: string;
  /** Every how long it runs (`1h`; `0`: leave it alone); its catch-up window too. */
  interval: string;
  /** Which variable says so, for the log line of `0`. */
  intervalVariable: string;
  workflowType: string;
  taskQueue: string;
  args: unknown[];
  /** The runs' summary in the Web UI. */
  summary: string;
  /** The schedule's note (an operator's pause replaces it). */
  note: string;
  memo: Record<string, string>;
  /** What the log lines call it, e.g. `ledger-retention schedule`. */
  name: string;
  /** Fields of its log lines. */
  log: Record<string, unknown>;
}

/** The prefix of a retention's variables: <P>_PRUNE_INTERVAL, <P>_RETENTION_DAYS, <P>_PRUNE_BATCH, <P>_PRUNE_SCHEDULE_ID. */
export type RetentionPrefix = 'LEDGER' | 'STATUS_OUTBOX';

/** What sets a retention schedule apart from another; the rest comes from its variables (retentionScheduleSpec). */
export interface RetentionScheduleParts {
  workflowType: string;
  /** The summary's words for what a run deletes, given the retention in days. */
  deletes: (retentionDays: number) => string;
  purpose: string;
  /** The module that keeps it, and the document that tells of it, for the memo. */
  module: string;
  doc: string;
  name: string;
}

/**
 * The spec of the retention schedule whose variables start with `prefix`, on the worker's task queue; its run's one
 * argument is `{ retentionDays, batchSize }`.
 */
export function retentionScheduleSpec(
  config: Config,
  prefix: RetentionPrefix,
  parts: RetentionScheduleParts,
): RetentionScheduleSpec {
  const interval = config[`${prefix}_PRUNE_INTERVAL`];
  const retentionDays = config[`${prefix}_RETENTION_DAYS`];
  return {
    scheduleId: config[`${prefix}_PRUNE_SCHEDULE_ID`],
    interval,
    intervalVariable: `${prefix}_PRUNE_INTERVAL`,
    workflowType: parts.workflowType,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    args: [{ retentionDays, batchSize: config[`${prefix}_PRUNE_BATCH`] }],
    summary: `Prune ${parts.deletes(retentionDays)}, every tenant, every ${interval}`,
    note: `Kept in step with ${prefix}_PRUNE_INTERVAL, ${prefix}_RETENTION_DAYS and ${prefix}_PRUNE_BATCH by every worker at start-up`,
    memo: { purpose: parts.purpose, managedBy: `the fulfilment worker at start-up (${parts.module}); ${parts.doc}` },
    name: parts.name,
    log: { retentionDays },
  };
}

/** The schedule `spec` describes: every interval, overlap SKIP, at most one missed run made up. */
export function wantedSchedule(spec: RetentionScheduleSpec): Wanted {
  const every = durationMs(spec.interval);
  return {
    spec: { intervals: [{ every }] },
    action: {
      type: 'startWorkflow',
      workflowType: spec.workflowType,
      taskQueue: spec.taskQueue,
      args: spec.args,
      staticSummary: spec.summary,
    },
    // A run still going when the next is due is skipped; after an outage at most one missed run is made up.
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: every, pauseOnFailure: false },
  };
}

/** How `desc` differs from `wanted`, one phrase per difference (empty: nothing to update). */
export function scheduleDifferences(desc: ScheduleDescription, wanted: Wanted): string[] {
  const out: string[] = [];
  const have = (desc.spec.intervals ?? []).map((i) => `${i.every}+${i.offset ?? 0}`).join(',');
  const want = (wanted.spec.intervals ?? []).map((i) => `${String(i.every)}+${String(i.offset ?? 0)}`).join(',');
  if (have !== want) out.push(`intervals ${have || 'none'} → ${want} (ms)`);
  if ((desc.spec.calendars ?? []).length > 0) out.push('calendars → none');
  const a = desc.action;
  const w = wanted.action;
  if (a.workflowType !== w.workflowType) out.push(`workflow type ${a.workflowType} → ${String(w.workflowType)}`);
  if (a.taskQueue !== w.taskQueue) out.push(`task queue ${a.taskQueue} → ${w.taskQueue}`);
  if (JSON.stringify(a.args ?? []) !== JSON.stringify(w.args ?? []))
    out.push(`args ${JSON.stringify(a.args ?? [])} → ${JSON.stringify(w.args)}`);
  if ((a.staticSummary ?? '') !== (w.staticSummary ?? '')) out.push('summary');
  if (desc.policies.overlap !== wanted.policies.overlap)
    out.push(`overlap ${desc.policies.overlap} → ${String(wanted.policies.overlap)}`);
  if (desc.policies.catchupWindow !== wanted.policies.catchupWindow)
    out.push(`catch-up window ${desc.policies.catchupWindow} → ${String(wanted.policies.catchupWindow)} (ms)`);
  if (desc.policies.pauseOnFailure !== wanted.policies.pauseOnFailure)
    out.push(`pause on failure → ${String(wanted.policies.pauseOnFailure)}`);
  return out;
}

/**
 * Creates the schedule of `spec` when it is missing and updates it when it differs; several workers starting at once
 * converge on the same schedule.
 */
export async function ensureRetentionSchedule(
  client: Client,
  spec: RetentionScheduleSpec,
  logger: Logger,
): Promise<ScheduleSync> {
  const { scheduleId } = spec;
  if (durationMs(spec.interval) === 0) {
    logger.info({ scheduleId }, `${spec.intervalVariable}=0: leaving the ${spec.name} alone`);
    return 'disabled';
  }
  const wanted = wantedSchedule(spec);
  const log = { scheduleId, interval: spec.interval, ...spec.log, taskQueue: spec.taskQueue };
  const handle: ScheduleHandle = client.schedule.getHandle(scheduleId);
  let desc: ScheduleDescription | undefined;
  try {
    desc = await handle.describe();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
  if (!desc) {
    try {
      await client.schedule.create<Workflow>({ scheduleId, ...wanted, memo: spec.memo, state: { note: spec.note } });
      logger.info(log, `${spec.name} created`);
      return 'created';
    } catch (err) {
      // Another worker created it between our describe and create: compare with theirs.
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
      desc = await handle.describe();
    }
  }
  const differences = scheduleDifferences(desc, wanted);
  if (differences.length === 0) return 'unchanged';
  await handle.update<Workflow>((prev) => ({
    ...wanted,
    // The state is the operator's (paused, with a reason): a restart never changes it.
    state: { paused: prev.state.paused, note: prev.state.note, remainingActions: prev.state.remainingActions },
  }));
  logger.info({ ...log, differences }, `${spec.name} updated`);
  return 'updated';
}
