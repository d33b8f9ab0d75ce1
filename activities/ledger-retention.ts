/**
 * The dedupe ledger's retention activity, built by a factory over its dependencies like createActivities. It
 * deletes processed_events rows older than the retention across every tenant, one batch per call of the database
 * function prune_processed_events (bounded work per transaction), heartbeating after each batch with its progress, so
 * a retry resumes the counts and a cancellation stops it between batches. It refuses a retention shorter than
 * Kafka retention plus the redrive window (the function refuses one below its own floor too).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { Logger } from '../src/log.js';
import type { Metrics } from '../src/metrics.js';
import type { Db } from '../src/store/db.js';
import { isPruneRefusal, pruneLedgerBatch } from '../src/store/ledger-retention.js';

export interface PruneLedgerInput {
  /** Rows older than this many days are deleted, every tenant's. */
  retentionDays: number;
  /** Rows per call of prune_processed_events. */
  batchSize: number;
}

export interface PruneLedgerResult {
  /** Rows deleted by this run. */
  deleted: number;
  /** ISO 8601: rows processed before this instant are gone (the last batch's cutoff, the database's clock). */
  cutoff: string;
  /** Calls of prune_processed_events, the last one finding less than a full batch. */
  batches: number;
}

export interface LedgerRetentionDeps {
  db: Db;
  logger: Logger;
  metrics?: Metrics;
  /** The shortest retention this worker accepts, in days: KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS. */
  minRetentionDays: number;
}

/** Progress carried in heartbeats, so that a retried attempt reports the whole run. */
interface Progress {
  deleted: number;
  batches: number;
  cutoff?: string;
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
      const ctx = Context.current();
      const resumed = ctx.info.heartbeatDetails as Progress | undefined;
      const progress: Progress = { deleted: resumed?.deleted ?? 0, batches: resumed?.batches ?? 0, cutoff: resumed?.cutoff };
      const started = Date.now();
      for (;;) {
        if (ctx.cancellationSignal.aborted) throw new CancelledFailure('ledger retention cancelled between batches', [progress]);
        let batch;
        try {
          batch = await pruneLedgerBatch(db, retentionDays, batchSize);
        } catch (err) {
          if (isPruneRefusal(err)) throw ApplicationFailure.nonRetryable((err as Error).message, 'RetentionTooShort');
          throw err;
        }
        progress.deleted += batch.deleted;
        progress.batches += 1;
        progress.cutoff = batch.cutoff.toISOString();
        if (batch.deleted > 0) metrics?.ledgerPruned.inc(batch.deleted);
        ctx.heartbeat(progress);
        if (batch.deleted < batchSize) break;
      }
      const result: PruneLedgerResult = { deleted: progress.deleted, cutoff: progress.cutoff ?? '', batches: progress.batches };
      logger.info(
        { ...result, retentionDays, batchSize, attempt: ctx.info.attempt, resumedFromHeartbeat: resumed !== undefined, durationMs: Date.now() - started },
        'dedupe ledger pruned',
      );
      return result;
    },
  };
}

export type LedgerRetentionActivities = ReturnType<typeof createLedgerRetentionActivities>;
