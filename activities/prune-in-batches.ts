/**
 * The loop of a retention activity (the dedupe ledger's, and any other table's): one bounded batch per call of the
 * table's retention function, until a batch comes back short, heartbeating the progress after each batch — so a
 * retried attempt resumes the counts and a cancellation stops it between batches. The function's refusal of its
 * arguments (SQLSTATE 22023) is a non-retryable failure of type `refusedAs`; anything else is left to the retry policy.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { isPruneRefusal, type PrunedBatch } from '../src/adapters/store/retention.js';

export interface PruneResult {
  /** Rows deleted by this run. */
  deleted: number;
  /** ISO 8601: rows older than this instant are gone (the last batch's cutoff, the database's clock). */
  cutoff: string;
  /** Calls of the retention function, the last one finding less than a full batch. */
  batches: number;
}

/** Progress carried in heartbeats, so that a retried attempt reports the whole run. */
interface Progress {
  deleted: number;
  batches: number;
  cutoff?: string;
}

/** What a run did, and the facts its log line gives. */
export interface PruneRun {
  result: PruneResult;
  attempt: number;
  resumedFromHeartbeat: boolean;
  durationMs: number;
}

/** Calls `batch` until it deletes less than `batchSize` rows, counting each deletion with `counted`. */
export async function pruneInBatches(
  what: string,
  batch: () => Promise<PrunedBatch>,
  batchSize: number,
  refusedAs: string,
  counted: (deleted: number) => void,
): Promise<PruneRun> {
  const ctx = Context.current();
  const resumed = ctx.info.heartbeatDetails as Progress | undefined;
  const progress: Progress = {
    deleted: resumed?.deleted ?? 0,
    batches: resumed?.batches ?? 0,
    cutoff: resumed?.cutoff,
  };
  const started = Date.now();
  for (;;) {
    if (ctx.cancellationSignal.aborted) throw new CancelledFailure(`${what} cancelled between batches`, [progress]);
    let done: PrunedBatch;
    try {
      done = await batch();
    } catch (err) {
      if (isPruneRefusal(err)) throw ApplicationFailure.nonRetryable((err as Error).message, refusedAs);
      throw err;
    }
    progress.deleted += done.deleted;
    progress.batches += 1;
    progress.cutoff = done.cutoff.toISOString();
    if (done.deleted > 0) counted(done.deleted);
    ctx.heartbeat(progress);
    if (done.deleted < batchSize) break;
  }
  return {
    result: { deleted: progress.deleted, cutoff: progress.cutoff ?? '', batches: progress.batches },
    attempt: ctx.info.attempt,
    resumedFromHeartbeat: resumed !== undefined,
    durationMs: Date.now() - started,
  };
}
