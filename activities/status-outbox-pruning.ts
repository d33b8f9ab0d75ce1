/**
 * The status outbox's retention activity: deletes rows the relay sent more than the retention ago, every tenant's,
 * one batch per call of prune_status_outbox (migration 007; it never deletes an unsent row), heartbeating its progress
 * like the ledger's (prune-in-batches.ts).
 */
import type { Logger } from '../src/base/log.js';
import type { Metrics } from '../src/base/metrics.js';
import type { Db } from '../src/adapters/store/db.js';
import { pruneInBatches, type PruneResult } from './prune-in-batches.js';
import { pruneStatusOutboxBatch } from '../src/adapters/store/status-outbox-retention.js';

export interface PruneStatusOutboxInput {
  /** Rows sent more than this many days ago are deleted, every tenant's. */
  retentionDays: number;
  /** Rows per call of prune_status_outbox. */
  batchSize: number;
}

export type PruneStatusOutboxResult = PruneResult;

export function createStatusOutboxRetentionActivities(deps: {
  db: Db;
  logger: Logger;
  metrics?: Pick<Metrics, 'statusOutboxPruned'>;
}) {
  const { db, logger, metrics } = deps;
  return {
    /** Deletes sent status-outbox rows older than `retentionDays`, in batches; returns what it deleted. */
    async pruneSentStatusEvents(input: PruneStatusOutboxInput): Promise<PruneStatusOutboxResult> {
      const { retentionDays, batchSize } = input;
      const run = await pruneInBatches(
        'status-outbox retention',
        () => pruneStatusOutboxBatch(db, retentionDays, batchSize),
        batchSize,
        'RetentionTooShort',
        (n) => metrics?.statusOutboxPruned.inc(n),
      );
      const { result, ...facts } = run;
      logger.info({ ...result, retentionDays, batchSize, ...facts }, 'status outbox pruned');
      return result;
    },
  };
}

export type StatusOutboxRetentionActivities = ReturnType<typeof createStatusOutboxRetentionActivities>;
