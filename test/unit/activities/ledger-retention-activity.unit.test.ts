/** The ledger-retention activity's loop over a fake database: batches, heartbeats, resumption, refusals. */
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { createLedgerRetentionActivities } from '../../../activities/ledger-pruning.js';
import { createLogger } from '../../../src/base/log.js';
import { createMetrics, metricValue } from '../../../src/base/metrics.js';
import type { Db } from '../../../src/adapters/store/db.js';

const cutoff = new Date('2026-01-01T00:00:00Z');

/** A database whose prune_processed_events calls delete `batches[i]` rows in turn, or throw what is queued. */
function fakeDb(batches: (number | Error)[]): { db: Db; calls: unknown[][] } {
  const calls: unknown[][] = [];
  const db = {
    async query(_sql: string, params: unknown[]) {
      calls.push(params);
      const next = batches.shift() ?? 0;
      if (next instanceof Error) throw next;
      return { rows: [{ deleted: String(next), cutoff }] };
    },
  } as unknown as Db;
  return { db, calls };
}

const logger = createLogger('silent');
/** An activity environment whose SDK logger is quiet (the refusals below are expected). */
const mockEnv = (info: ConstructorParameters<typeof MockActivityEnvironment>[0] = {}) =>
  new MockActivityEnvironment(info, { logger: new DefaultLogger('ERROR', () => undefined) });

describe('pruneDedupeLedger', () => {
  it('calls the function until a batch is short, heartbeating its progress and counting every row', async () => {
    const { db, calls } = fakeDb([3, 3, 1]);
    const metrics = createMetrics();
    const { pruneDedupeLedger } = createLedgerRetentionActivities({ db, logger, metrics, minRetentionDays: 21 });
    const env = mockEnv();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(structuredClone(d)));
    const result = await env.run(pruneDedupeLedger, { retentionDays: 30, batchSize: 3 });
    expect(result).toEqual({ deleted: 7, batches: 3, cutoff: cutoff.toISOString() });
    expect(calls).toEqual([
      [30, 3],
      [30, 3],
      [30, 3],
    ]);
    expect(beats).toHaveLength(3);
    expect(beats.at(-1)).toMatchObject({ deleted: 7, batches: 3 });
    expect(await metricValue(metrics.registry, 'fulfilment_ledger_pruned_total')).toBe(7);
  });

  it('a retried attempt resumes the counts from its last heartbeat', async () => {
    const { db } = fakeDb([2]);
    const { pruneDedupeLedger } = createLedgerRetentionActivities({ db, logger, minRetentionDays: 21 });
    const env = mockEnv({ attempt: 2, heartbeatDetails: { deleted: 3000, batches: 3 } });
    expect(await env.run(pruneDedupeLedger, { retentionDays: 30, batchSize: 1000 })).toMatchObject({
      deleted: 3002,
      batches: 4,
    });
  });

  it('refuses a retention shorter than Kafka retention plus the redrive window without touching the database', async () => {
    const { db, calls } = fakeDb([]);
    const { pruneDedupeLedger } = createLedgerRetentionActivities({ db, logger, minRetentionDays: 21 });
    const err = await mockEnv()
      .run(pruneDedupeLedger, { retentionDays: 20, batchSize: 10 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'RetentionTooShort', nonRetryable: true });
    expect(calls).toEqual([]);
  });

  it("turns the function's refusal (SQLSTATE 22023) into a non-retryable failure; other errors stay retryable", async () => {
    const refusal = Object.assign(new Error('refusing to prune the dedupe ledger with a retention of 20 days'), {
      code: '22023',
    });
    const { db } = fakeDb([refusal, Object.assign(new Error('connection reset'), { code: '08006' })]);
    const { pruneDedupeLedger } = createLedgerRetentionActivities({ db, logger, minRetentionDays: 7 });
    const first = await mockEnv()
      .run(pruneDedupeLedger, { retentionDays: 20, batchSize: 10 })
      .catch((e: unknown) => e);
    expect(first).toMatchObject({ type: 'RetentionTooShort', nonRetryable: true });
    const second = await mockEnv()
      .run(pruneDedupeLedger, { retentionDays: 30, batchSize: 10 })
      .catch((e: unknown) => e);
    expect(second).not.toBeInstanceOf(ApplicationFailure);
    expect((second as Error).message).toBe('connection reset');
  });
});
