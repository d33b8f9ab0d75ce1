/**
 * The status outbox's retention run: started by the Temporal Schedule that the worker keeps in step with its
 * configuration (src/roles/worker/status-outbox-retention-schedule.ts), every STATUS_OUTBOX_PRUNE_INTERVAL, overlap
 * SKIP.
 *
 * Rule a reader must not break: no I/O, clocks or randomness (this file is replayed). The run is one activity call.
 */
import { proxyActivities } from '@temporalio/workflow';
import type {
  PruneStatusOutboxInput,
  PruneStatusOutboxResult,
  StatusOutboxRetentionActivities,
} from '../activities/status-outbox-pruning.js';
import { STATUS_OUTBOX_PRUNE_ACTIVITY } from './activity-options.js';

const retention = proxyActivities<StatusOutboxRetentionActivities>(STATUS_OUTBOX_PRUNE_ACTIVITY);

/** Deletes status-outbox rows sent more than `input.retentionDays` ago across every tenant; reports what it deleted. */
export async function pruneStatusOutbox(input: PruneStatusOutboxInput): Promise<PruneStatusOutboxResult> {
  return retention.pruneSentStatusEvents(input);
}
