/**
 * The dedupe ledger's retention run: started by the Temporal Schedule that the worker keeps in step with its
 * configuration (src/roles/worker/ledger-retention-schedule.ts), every LEDGER_PRUNE_INTERVAL, overlap SKIP. One
 * activity does the work in batches; the result says what was deleted.
 *
 * Rule a reader must not break: no I/O, clocks or randomness (this file is replayed). The run is one activity call.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { LedgerRetentionActivities, PruneLedgerInput, PruneLedgerResult } from '../activities/ledger-pruning.js';
import { LEDGER_PRUNE_ACTIVITY } from './activity-options.js';

export type { PruneLedgerInput, PruneLedgerResult } from '../activities/ledger-pruning.js';

const retention = proxyActivities<LedgerRetentionActivities>(LEDGER_PRUNE_ACTIVITY);

/** Deletes dedupe-ledger rows older than `input.retentionDays` across every tenant, and reports what it deleted. */
export async function pruneLedger(input: PruneLedgerInput): Promise<PruneLedgerResult> {
  return retention.pruneDedupeLedger(input);
}
