/**
 * The Temporal Schedule that prunes the dedupe ledger (workflow `pruneLedger`, workflows/ledger-retention-run.ts), kept by
 * every worker at start-up (src/roles/worker/retention-schedule.ts). LEDGER_PRUNE_INTERVAL=0 makes a worker leave it
 * alone.
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../../base/config.js';
import type { Logger } from '../../base/log.js';
import {
  ensureRetentionSchedule,
  retentionScheduleSpec,
  type RetentionScheduleSpec,
  type ScheduleSync,
} from './retention-schedule.js';

export type LedgerScheduleSync = ScheduleSync;

/** What the schedule must be under `config`: every LEDGER_PRUNE_INTERVAL, overlap SKIP, on the worker's task queue. */
export function ledgerRetentionSchedule(config: Config): RetentionScheduleSpec {
  return retentionScheduleSpec(config, 'LEDGER', {
    workflowType: 'pruneLedger',
    deletes: (days) => `the dedupe ledger: processed_events rows older than ${days} days`,
    purpose:
      'Deletes dedupe-ledger (processed_events) rows older than LEDGER_RETENTION_DAYS across every tenant, through prune_processed_events',
    module: 'src/roles/worker/ledger-retention-schedule.ts',
    doc: 'docs/how-it-works.md "Decisions worth knowing"',
    name: 'ledger-retention schedule',
  });
}

/**
 * Creates the ledger-retention schedule (config.LEDGER_PRUNE_SCHEDULE_ID) when it is missing and updates it when it
 * differs from `config`; several workers starting at once converge on the same schedule.
 */
export function ensureLedgerRetentionSchedule(
  client: Client,
  config: Config,
  logger: Logger,
): Promise<LedgerScheduleSync> {
  return ensureRetentionSchedule(client, ledgerRetentionSchedule(config), logger);
}
