/**
 * The Temporal Schedule that prunes sent status-outbox rows (workflow `pruneStatusOutbox`,
 * workflows/status-outbox-retention-run.ts), kept by every worker at start-up like the ledger's
 * (src/roles/worker/retention-schedule.ts). STATUS_OUTBOX_PRUNE_INTERVAL=0 makes a worker leave it alone.
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

/** What the schedule must be under `config`: every STATUS_OUTBOX_PRUNE_INTERVAL, overlap SKIP, on the worker's task queue. */
export function statusOutboxRetentionSchedule(config: Config): RetentionScheduleSpec {
  return retentionScheduleSpec(config, 'STATUS_OUTBOX', {
    workflowType: 'pruneStatusOutbox',
    deletes: (days) => `the status outbox: rows sent more than ${days} days ago`,
    purpose:
      'Deletes status-outbox rows the relay sent more than STATUS_OUTBOX_RETENTION_DAYS ago across every tenant, through prune_status_outbox; never an unsent row',
    module: 'src/roles/worker/status-outbox-retention-schedule.ts',
    doc: 'docs/status-events.md "Retention"',
    name: 'status-outbox retention schedule',
  });
}

/** Creates the schedule (config.STATUS_OUTBOX_PRUNE_SCHEDULE_ID) when missing, updates it when it differs from `config`. */
export function ensureStatusOutboxRetentionSchedule(
  client: Client,
  config: Config,
  logger: Logger,
): Promise<ScheduleSync> {
  return ensureRetentionSchedule(client, statusOutboxRetentionSchedule(config), logger);
}
