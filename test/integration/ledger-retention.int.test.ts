/**
 * Dedupe-ledger retention on the real stack: the worker's Temporal Schedule, the pruneLedger workflow and its
 * activity, and prune_processed_events (migration 004). This file runs in a throw-away database of its own, so
 * the counts are exactly its own rows and the shared database is not touched; the schedule, task queue and
 * tenants are private to it too.
 */
import { ScheduleOverlapPolicy, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../src/app.js';
import { durationMs, loadConfig, type Config } from '../../src/base/config.js';
import { ensureLedgerRetentionSchedule } from '../../src/roles/worker/ledger-retention-schedule.js';
import { metricValue } from '../../src/base/metrics.js';
import { inTenantTransaction } from '../../src/adapters/store/db.js';
import { provisionPostgres } from '../../src/roles/provision/schema-and-grants.js';
import { CONSUMER_NAME } from '../../src/vocabulary/order.js';
import type { PruneLedgerResult } from '../../workflows/ledger-retention-run.js';
import { logger, uniqueSuffix, waitFor } from '../support/harness.js';

const suffix = uniqueSuffix('ledger');
const dbName = `fulfilment_it_${suffix.replace(/[^a-z0-9]/gi, '_').toLowerCase()}`;
// The database is made (and dropped) by the owner role, which the local stack lets create databases; the worker
// runs as the runtime role in it, as everywhere.
const shared = loadConfig();
const sharedOwnerUrl = shared.DATABASE_MIGRATION_URL!;
const inOwnDb = (url: string) => {
  const u = new URL(url);
  u.pathname = `/${dbName}`;
  return u.toString();
};
const env = {
  ...process.env,
  DATABASE_URL: inOwnDb(shared.DATABASE_URL),
  DATABASE_MIGRATION_URL: inOwnDb(sharedOwnerUrl),
  TEMPORAL_TASK_QUEUE: `ledger-${suffix}`,
  LEDGER_PRUNE_SCHEDULE_ID: `ledger-retention-${suffix}`,
  LEDGER_PRUNE_INTERVAL: '2h',
  LEDGER_RETENTION_DAYS: '30',
  LEDGER_PRUNE_BATCH: '3',
  // The status outbox's schedule is not this file's (status-relay.int.test.ts runs its retention).
  STATUS_OUTBOX_PRUNE_INTERVAL: '0',
  FULFILMENT_ROLES: 'worker',
  METRICS_PORT: '0',
};

let config: Config;
let app: App;
const tenantA = `lr-a-${suffix}`.slice(0, 64);
const tenantB = `lr-b-${suffix}`.slice(0, 64);

async function sharedQuery(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: sharedOwnerUrl });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** Ledger rows of `tenant`, `daysAgo` each; processed_at is set explicitly inside the tenant's own transaction. */
async function insertRows(tenant: string, daysAgo: number[]): Promise<void> {
  await inTenantTransaction(app.db!, tenant, async (tx) => {
    for (const [i, days] of daysAgo.entries()) {
      await tx.query(
        `INSERT INTO processed_events (consumer, event_id, tenant_id, processed_at)
         VALUES ($1, $2, $3, now() - make_interval(days => $4))`,
        [CONSUMER_NAME, `evt-${days}d-${i}`, tenant, days],
      );
    }
  });
}

async function eventIds(tenant: string): Promise<string[]> {
  return inTenantTransaction(app.db!, tenant, async (tx) =>
    (await tx.query<{ event_id: string }>('SELECT event_id FROM processed_events ORDER BY event_id')).rows.map(
      (r) => r.event_id,
    ),
  );
}

/** Triggers the schedule once and returns the result of the run it started. */
async function triggerOnce(): Promise<PruneLedgerResult> {
  const handle = app.client.schedule.getHandle(config.LEDGER_PRUNE_SCHEDULE_ID);
  const before = (await handle.describe()).info.numActionsTaken;
  await handle.trigger();
  const desc = await waitFor('the triggered run to start', async () => {
    const d = await handle.describe();
    return d.info.numActionsTaken > before && d.info.recentActions.length > 0 ? d : undefined;
  });
  const run = desc.info.recentActions.at(-1)!.action.workflow;
  return app.client.workflow
    .getHandle<() => Promise<PruneLedgerResult>>(run.workflowId, run.firstExecutionRunId)
    .result();
}

beforeAll(async () => {
  await sharedQuery(`CREATE DATABASE ${dbName}`);
  config = loadConfig(env);
  await provisionPostgres(config);
  app = await startApp(config, { logger, roles: { worker: true, bridge: false }, serveMetrics: false });
});

afterAll(async () => {
  await app?.client.schedule
    .getHandle(config.LEDGER_PRUNE_SCHEDULE_ID)
    .delete()
    .catch(() => undefined);
  await app?.stop();
  await sharedQuery(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
});

describe('ledger retention', () => {
  it('the worker has created the schedule: the configured interval, overlap SKIP, pruneLedger on its task queue', async () => {
    const desc = await app.client.schedule.getHandle(config.LEDGER_PRUNE_SCHEDULE_ID).describe();
    expect(desc.spec.intervals?.map((i) => [i.every, i.offset ?? 0])).toEqual([[durationMs('2h'), 0]]);
    expect(desc.policies.overlap).toBe(ScheduleOverlapPolicy.SKIP);
    expect(desc.action.workflowType).toBe('pruneLedger');
    expect(desc.action.taskQueue).toBe(config.TEMPORAL_TASK_QUEUE);
    expect(desc.action.args).toEqual([{ retentionDays: 30, batchSize: 3 }]);
    expect(desc.action.staticSummary).toContain('older than 30 days');
    expect(String(desc.memo?.purpose)).toContain('processed_events');
    expect(desc.state.paused).toBe(false);
    // Idempotent: a second worker start with the same configuration changes nothing.
    expect(await ensureLedgerRetentionSchedule(app.client, config, logger)).toBe('unchanged');
  });

  it('a triggered run deletes the old rows of every tenant, keeps the recent ones and reports what it deleted', async () => {
    await insertRows(tenantA, [40, 35, 31, 29, 1]);
    await insertRows(tenantB, [365, 45, 0]);
    const result = await triggerOnce();
    // 5 old rows in batches of 3: a full batch, then a short one.
    expect(result).toMatchObject({ deleted: 5, batches: 2 });
    const cutoffAgeDays = (Date.now() - Date.parse(result.cutoff)) / 86_400_000;
    expect(cutoffAgeDays).toBeGreaterThan(29.99);
    expect(cutoffAgeDays).toBeLessThan(30.01);
    expect(await eventIds(tenantA)).toEqual(['evt-1d-4', 'evt-29d-3']);
    expect(await eventIds(tenantB)).toEqual(['evt-0d-2']);
    expect(await metricValue(app.metrics.registry, 'fulfilment_ledger_pruned_total')).toBe(5);

    // Nothing left to delete: one short batch.
    expect(await triggerOnce()).toMatchObject({ deleted: 0, batches: 1 });
    expect(await metricValue(app.metrics.registry, 'fulfilment_ledger_pruned_total')).toBe(5);
  });

  it('the activity refuses a retention shorter than Kafka retention plus the redrive window', async () => {
    await insertRows(tenantA, [25]);
    const run = app.client.workflow.execute('pruneLedger', {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `prune-too-short-${suffix}`,
      args: [{ retentionDays: 20, batchSize: 10 }],
    });
    const err = await run.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const failure = (err as WorkflowFailedError).cause?.cause;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).type).toBe('RetentionTooShort');
    expect((failure as ApplicationFailure).message).toContain('KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS');
    expect(await eventIds(tenantA)).toContain('evt-25d-0');
  });

  it('prune_processed_events refuses a retention below its floor, is the only door, and leaves RLS binding', async () => {
    const c = new pg.Client({ connectionString: config.DATABASE_URL });
    await c.connect();
    try {
      const refused = await c.query("SELECT prune_processed_events(interval '20 days', 10)").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((refused as { code?: string }).code).toBe('22023');
      expect((refused as Error).message).toContain('the floor is 21 days');
      const badBatch = await c.query("SELECT prune_processed_events(interval '30 days', 0)").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((badBatch as { code?: string }).code).toBe('22023');

      const fn = await c.query<{
        prosecdef: boolean;
        proconfig: string[];
        acl: string;
        owner: string;
        tableowner: string;
      }>(
        `SELECT p.prosecdef, p.proconfig, p.proacl::text AS acl, p.proowner::regrole::text AS owner, t.tableowner
         FROM pg_proc p, pg_tables t WHERE p.proname = 'prune_processed_events' AND t.tablename = 'processed_events'`,
      );
      const row = fn.rows[0]!;
      expect(row.prosecdef).toBe(true);
      expect(row.proconfig).toContain('search_path=pg_catalog, pg_temp');
      expect(row.owner).toBe(row.tableowner);
      // EXECUTE for the service's role only: no PUBLIC entry ("=X/...") in the ACL.
      expect(row.acl).not.toMatch(/[{,]=X/);

      // Within one transaction, after the function, the session still sees no tenant's rows without app.tenant_id.
      await c.query('BEGIN');
      await c.query("SELECT prune_processed_events(interval '30 days', 10)");
      expect((await c.query<{ n: string }>('SELECT count(*) AS n FROM processed_events')).rows[0]!.n).toBe('0');
      expect(
        (await c.query<{ s: string }>("SELECT current_setting('app.ledger_retention', true) AS s")).rows[0]!.s,
      ).toBe('');
      await c.query('COMMIT');
      // The 25-day row is younger than 30 days: kept.
      expect(await eventIds(tenantA)).toContain('evt-25d-0');
    } finally {
      await c.end();
    }
  });

  it("a worker with another configuration updates the schedule, leaving an operator's pause as it was", async () => {
    const handle = app.client.schedule.getHandle(config.LEDGER_PRUNE_SCHEDULE_ID);
    await handle.pause('paused by the test operator');
    const changed = loadConfig({ ...env, LEDGER_PRUNE_INTERVAL: '90m', LEDGER_RETENTION_DAYS: '45' });
    expect(await ensureLedgerRetentionSchedule(app.client, changed, logger)).toBe('updated');
    const desc = await handle.describe();
    expect(desc.spec.intervals?.map((i) => [i.every, i.offset ?? 0])).toEqual([[90 * 60_000, 0]]);
    expect(desc.action.args).toEqual([{ retentionDays: 45, batchSize: 3 }]);
    expect(desc.state).toMatchObject({ paused: true, note: 'paused by the test operator' });
    expect(await ensureLedgerRetentionSchedule(app.client, changed, logger)).toBe('unchanged');
  });
});
