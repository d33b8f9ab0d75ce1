/**
 * The dedupe ledger's retention activity, built by a factory over its dependencies like createActivities. It
 * deletes processed_events rows older than the retention across every tenant, one batch per call of the database
 * function prune_processed_events (bounded work per transaction), heartbeating after each batch with its progress, so
 * a retry resumes the counts and a cancellation stops it between batches. It refuses a retention shorter than
 * Kafka retention plus the redrive window (the function refuses one below its own floor too).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from '../src/base/log.js';
import type { Metrics } from '../src/base/metrics.js';
import type { Db } from '../src/adapters/store/db.js';
import { pruneLedgerBatch } from '../src/adapters/store/ledger-retention.js';
import { pruneInBatches, type PruneResult } from './prune-in-batches.js';

export interface PruneLedgerInput {
  /** Rows older than this many days are deleted, every tenant's. */
  retentionDays: number;
  /** Rows per call of prune_processed_events. */
  batchSize: number;
}

/** What a run deleted: rows, the cutoff (ISO 8601, the database's clock) and the calls of prune_processed_events. */
export type PruneLedgerResult = PruneResult;

export interface LedgerRetentionDeps {
  db: Db;
  logger: Logger;
  metrics?: Pick<Metrics, 'ledgerPruned'>;
  /** The shortest retention this worker accepts, in days: KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS. */
  minRetentionDays: number;
}

export function createLedgerRetentionActivities(deps: LedgerRetentionDeps) {
  const { db, logger, metrics, minRetentionDays } = deps;

  return {
    /** Deletes ledger rows older than `retentionDays` of every tenant, in batches; returns what it deleted. */
    async pruneDedupeLedger(input: PruneLedgerInput): Promise<PruneLedgerResult> {
      const { retentionDays, batchSize } = input;
      if (!Number.isInteger(retentionDays) || retentionDays < minRetentionDays) {
        throw ApplicationFailure.nonRetryable(
          `refusing to prune the dedupe ledger with a retention of ${retentionDays} days: expected at least ${minRetentionDays} days ` +
            '(KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS), or redelivered events would apply twice',
          'RetentionTooShort',
        );
      }
      const run = await pruneInBatches(
        'ledger retention',
        () => pruneLedgerBatch(db, retentionDays, batchSize),
        batchSize,
        'RetentionTooShort',
        (n) => metrics?.ledgerPruned.inc(n),
      );
      const { result, ...facts } = run;
      logger.info({ ...result, retentionDays, batchSize, ...facts }, 'dedupe ledger pruned');
      return result;
    },
  };
}

export type LedgerRetentionActivities = ReturnType<typeof createLedgerRetentionActivities>;
