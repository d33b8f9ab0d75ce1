/**
 * The Temporal Schedule that prunes the dedupe ledger (workflow `pruneLedger`, workflows/ledger-retention.ts). Every
 * worker makes sure of it at start-up, idempotently: created when missing, updated when its interval, workflow, task
 * queue, arguments or policies differ from this worker's configuration, left alone otherwise. Its state (paused by an
 * operator, with a note) is never touched by a restart. LEDGER_PRUNE_INTERVAL=0 makes a worker leave it alone.
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
import { durationMs, type Config } from '../config.js';
import type { Logger } from '../log.js';
import type { PruneLedgerInput, pruneLedger } from '../../workflows/ledger-retention.js';

export type LedgerScheduleSync = 'created' | 'updated' | 'unchanged' | 'disabled';

type PruneAction = ScheduleOptionsStartWorkflowAction<typeof pruneLedger>;
type Wanted = Required<Pick<ScheduleOptions<PruneAction>, 'spec' | 'action' | 'policies'>>;

/** What the schedule must be under `config`: every LEDGER_PRUNE_INTERVAL, overlap SKIP, on the worker's task queue. */
export function ledgerRetentionSchedule(config: Config): Wanted & { note: string; memo: Record<string, string> } {
  const every = durationMs(config.LEDGER_PRUNE_INTERVAL);
  const input: PruneLedgerInput = { retentionDays: config.LEDGER_RETENTION_DAYS, batchSize: config.LEDGER_PRUNE_BATCH };
  const summary = `Prune the dedupe ledger: processed_events rows older than ${input.retentionDays} days, every tenant, every ${config.LEDGER_PRUNE_INTERVAL}`;
  return {
    spec: { intervals: [{ every }] },
    action: {
      type: 'startWorkflow',
      workflowType: 'pruneLedger',
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [input],
      staticSummary: summary,
    },
    // A run still going when the next is due is skipped; after an outage at most one missed run is made up.
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: every, pauseOnFailure: false },
    note: `Kept in step with LEDGER_PRUNE_INTERVAL, LEDGER_RETENTION_DAYS and LEDGER_PRUNE_BATCH by every worker at start-up`,
    memo: {
      purpose: 'Deletes dedupe-ledger (processed_events) rows older than LEDGER_RETENTION_DAYS across every tenant, through prune_processed_events',
      managedBy: 'the fulfilment worker at start-up (src/worker/ledger-retention-schedule.ts); docs/how-it-works.md "Decisions worth knowing"',
    },
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
  if (JSON.stringify(a.args ?? []) !== JSON.stringify(w.args ?? [])) out.push(`args ${JSON.stringify(a.args ?? [])} → ${JSON.stringify(w.args)}`);
  if ((a.staticSummary ?? '') !== (w.staticSummary ?? '')) out.push('summary');
  if (desc.policies.overlap !== wanted.policies.overlap) out.push(`overlap ${desc.policies.overlap} → ${String(wanted.policies.overlap)}`);
  if (desc.policies.catchupWindow !== wanted.policies.catchupWindow) out.push(`catch-up window ${desc.policies.catchupWindow} → ${String(wanted.policies.catchupWindow)} (ms)`);
  if (desc.policies.pauseOnFailure !== wanted.policies.pauseOnFailure) out.push(`pause on failure → ${String(wanted.policies.pauseOnFailure)}`);
  return out;
}

/**
 * Creates the ledger-retention schedule (config.LEDGER_PRUNE_SCHEDULE_ID) when it is missing and updates it when it
 * differs from `config`; several workers starting at once converge on the same schedule.
 */
export async function ensureLedgerRetentionSchedule(client: Client, config: Config, logger: Logger): Promise<LedgerScheduleSync> {
  const scheduleId = config.LEDGER_PRUNE_SCHEDULE_ID;
  if (durationMs(config.LEDGER_PRUNE_INTERVAL) === 0) {
    logger.info({ scheduleId }, 'LEDGER_PRUNE_INTERVAL=0: leaving the ledger-retention schedule alone');
    return 'disabled';
  }
  const { note, memo, ...wanted } = ledgerRetentionSchedule(config);
  const log = { scheduleId, interval: config.LEDGER_PRUNE_INTERVAL, retentionDays: config.LEDGER_RETENTION_DAYS, taskQueue: config.TEMPORAL_TASK_QUEUE };
  const handle: ScheduleHandle = client.schedule.getHandle(scheduleId);
  let desc: ScheduleDescription | undefined;
  try {
    desc = await handle.describe();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
  if (!desc) {
    try {
      await client.schedule.create<typeof pruneLedger>({ scheduleId, ...wanted, memo, state: { note } });
      logger.info(log, 'ledger-retention schedule created');
      return 'created';
    } catch (err) {
      // Another worker created it between our describe and create: compare with theirs.
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
      desc = await handle.describe();
    }
  }
  const differences = scheduleDifferences(desc, wanted);
  if (differences.length === 0) return 'unchanged';
  await handle.update<typeof pruneLedger>((prev) => ({
    ...wanted,
    // The state is the operator's (paused, with a reason): a restart never changes it.
    state: { paused: prev.state.paused, note: prev.state.note, remainingActions: prev.state.remainingActions },
  }));
  logger.info({ ...log, differences }, 'ledger-retention schedule updated');
  return 'updated';
}
