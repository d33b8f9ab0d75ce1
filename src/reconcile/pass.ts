/**
 * One reconciliation pass: reads each source once, runs the checks asked for (one module per kind: skipped.ts,
 * runs.ts, shipments.ts, status.ts) and confirms each mismatch before it is reported. The CLI's `fulfilment
 * reconcile` prints a pass (src/cli/reconcile/), and its repairs act on one.
 *
 * The tenants: those named (`tenants`), else those the window's records of the orders topic name — row-level
 * security lets the runtime role list one tenant's orders at a time, never every tenant's. The report says which.
 *
 * Rules a reader must not break:
 * - every source is read as the service reads it (the runtime role, the brokers, Temporal's visibility, the
 *   warehouse's API) and nothing is written;
 * - a mismatch found from a snapshot that may have moved on (the ledger, visibility, the row) is read again before it
 *   is reported: a record recorded meanwhile, a run that opened, a row that moved on are not mismatches;
 * - what a check could not read is `unseen`, never passed.
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../base/config.js';
import type { Db } from '../adapters/store/db.js';
import type { Kafka } from '../adapters/kafka/client.js';
import { CHECKS, emptyResult, orderKey, type CheckName, type CheckResult, type Mismatch } from './mismatch.js';
import { compareRuns } from './runs.js';
import { confirmStranded, readStrandedRuns } from './pinned-runs.js';
import { compareShipments, type WarehouseShipment } from './shipments.js';
import { claimKey, ledgerClaims, readTopicSide, type TopicResume, type TopicSide } from './skipped-sources.js';
import { compareSkipped } from './skipped.js';
import { compareStatus } from './status.js';
import { statusTopicEventIds } from './status-sources.js';
import { ledgerHolds, outboxRows, pendingRows, rowsChanged, rowsOf } from './store-reader.js';
import { confirmOpen, listOpenRuns, type OpenRun } from './temporal-runs.js';
import { listShipments } from './warehouse-reader.js';
import { shipmentKey } from '../vocabulary/order.js';

const DAY_MS = 86_400_000;

export interface PassOptions {
  since: Date;
  until: Date;
  /** Only these tenants; default: those the window's records name. */
  tenants?: readonly string[];
  /** The checks to run; default all. */
  checks?: readonly CheckName[];
  /** How old a state must be before it is judged (a run opening, a shipment being recorded), ms. */
  settleMs: number;
  /**
   * Read the orders topic from where an earlier pass stopped (its `resumeAt`) rather than from `since`, back to the
   * floor at the most: the continuous reconciliation's passes, each over the time since the last.
   */
  resume?: TopicResume;
  /** Tenants to check beside those the window's records name (not with `tenants`). */
  alsoTenants?: readonly string[];
}

export interface PassDeps {
  config: Config;
  kafka: Kafka;
  db: Db;
  client: Client;
  signal?: AbortSignal;
  now?: () => number;
}

export interface PassReport {
  since: Date;
  until: Date;
  tenants: string[];
  /** Where the tenants came from: `--tenant`, or the window's records. */
  tenantsFrom: 'named' | 'window';
  results: CheckResult[];
  /**
   * Per partition of the orders topic, where a next pass may start reading: where this one stopped, or its first record
   * still in flight. Only for a pass that ran the skipped check.
   */
  resumeAt: Map<number, bigint>;
}

/** Runs one pass over the window. */
export async function reconcilePass(deps: PassDeps, opts: PassOptions): Promise<PassReport> {
  const { config } = deps;
  const now = deps.now ?? Date.now;
  const checks = new Set(opts.checks ?? CHECKS);
  const clientId = `${config.KAFKA_CLIENT_ID}-reconcile`;
  const named = opts.tenants && opts.tenants.length > 0 ? new Set(opts.tenants) : undefined;
  const topic = await readTopicSide(
    deps.kafka,
    {
      ordersTopic: config.ORDERS_TOPIC,
      dlqTopic: config.DLQ_TOPIC,
      group: config.CONSUMER_GROUP,
      window: opts,
      tenants: named,
      resume: opts.resume,
    },
    { clientId, signal: deps.signal },
  );
  const tenants = named ? [...named] : [...new Set([...tenantsOf(topic), ...(opts.alsoTenants ?? [])])].sort();
  const openRuns = await listOpenRuns(deps.client, tenants);
  const results: CheckResult[] = [];
  const ctx = { deps, opts, tenants, openRuns, now: now() };
  const resumeAt = new Map<number, bigint>();
  if (checks.has('skipped')) {
    const { firstInFlight, ...result } = await skippedCheck(ctx, topic);
    results.push(result);
    for (const [partition, readTo] of topic.readTo) {
      const held = firstInFlight.get(partition);
      resumeAt.set(partition, held !== undefined && held < readTo ? held : readTo);
    }
  }
  if (checks.has('runs')) results.push(await runsCheck(ctx));
  if (checks.has('shipments')) results.push(await shipmentsCheck(ctx));
  if (checks.has('status')) results.push(await statusCheck(ctx));
  return { since: opts.since, until: opts.until, tenants, tenantsFrom: named ? 'named' : 'window', results, resumeAt };
}

interface CheckContext {
  deps: PassDeps;
  opts: PassOptions;
  tenants: string[];
  openRuns: Map<string, OpenRun>;
  now: number;
}

function tenantsOf(topic: TopicSide): string[] {
  const tenants = new Set<string>();
  for (const r of topic.records) if (r.verdict.kind === 'event') tenants.add(r.verdict.tenantId);
  return [...tenants].sort();
}

async function skippedCheck(
  { deps, openRuns, now }: CheckContext,
  topic: TopicSide,
): Promise<CheckResult & { firstInFlight: Map<number, bigint> }> {
  const { config, db } = deps;
  const claims = await ledgerClaims(db, topic.records);
  const result = compareSkipped({
    topic: config.ORDERS_TOPIC,
    records: topic.records,
    inLedger: (tenantId, eventId) => claims.has(claimKey(tenantId, eventId)),
    deadLettered: topic.deadLettered,
    openRuns: new Set(openRuns.keys()),
    ledgerHorizonMs: now - config.LEDGER_RETENTION_DAYS * DAY_MS,
    ledgerRetention: `LEDGER_RETENTION_DAYS=${config.LEDGER_RETENTION_DAYS}`,
  });
  // Read again: an event recorded since the first look was in flight, not skipped.
  const still: Mismatch[] = [];
  for (const m of result.mismatches) {
    const eventId = topic.records.find((r) => `${r.partition}:${r.offset}` === m.at)?.verdict;
    if (eventId?.kind === 'event' && (await ledgerHolds(db, m.tenantId, [eventId.eventId])).size > 0) continue;
    still.push(m);
  }
  return {
    ...result,
    mismatches: still,
    unseen: [...topic.unseen, ...result.unseen],
    notes: [...topic.notes, ...result.notes],
  };
}

async function runsCheck({ deps, opts, tenants, openRuns, now }: CheckContext): Promise<CheckResult> {
  const { config, db, client } = deps;
  const rows = [];
  for (const tenantId of tenants) {
    const changed = await rowsChanged(db, tenantId, opts.since, opts.until);
    const pending = await pendingRows(db, tenantId, opts.until);
    const byKey = new Map([...changed, ...pending].map((r) => [orderKey(r.tenant_id, r.order_id), r]));
    rows.push(...byKey.values());
  }
  const versions = {
    namespace: config.TEMPORAL_NAMESPACE,
    deployment: config.WORKER_DEPLOYMENT_NAME ?? config.TEMPORAL_TASK_QUEUE,
  };
  const stranded = await readStrandedRuns(client, { ...versions, tenants });
  const result = compareRuns({
    rows,
    openRuns,
    now,
    lingerSeconds: config.ORDER_LINGER_SECONDS,
    cancelGraceSeconds: config.CANCEL_GRACE_SECONDS,
    slackMs: opts.settleMs,
    pinnedWithoutWorkers: stranded.pinnedTo,
    versionsWithWorkers: stranded.withWorkers,
  });
  // Confirm against the order's own run and row (and a version's pollers): visibility lags, rows move on.
  const still: Mismatch[] = [];
  for (const m of result.mismatches) {
    const open = await confirmOpen(client, m.tenantId, m.orderId);
    const [row] = await rowsOf(db, m.tenantId, [m.orderId]);
    if (m.kind === 'run-missing' && (open || row?.status !== 'pending')) continue;
    if (m.kind === 'run-open-for-closed' && (!open || row?.status === 'pending')) continue;
    if (m.kind === 'run-without-workers') {
      const order = { tenantId: m.tenantId, orderId: m.orderId, buildId: m.buildId! };
      if (!row || !(await confirmStranded(client, { ...versions, ...order }))) continue;
    }
    still.push(m);
  }
  return { ...result, mismatches: still };
}

async function shipmentsCheck({ deps, opts, tenants, now }: CheckContext): Promise<CheckResult> {
  const { config, db } = deps;
  const result = emptyResult('shipments');
  for (const tenantId of tenants) {
    const timeout = config.WAREHOUSE_TIMEOUT_MS;
    const listing = await listShipments(config.WAREHOUSE_URL, tenantId, timeout, { createdFrom: opts.since });
    if (!listing.ok) {
      result.unseen.push({ check: 'shipments', what: `tenant ${tenantId}: ${listing.why}; nothing compared` });
      continue;
    }
    const inWindow = (s: WarehouseShipment) => {
      const at = Date.parse(s.createdAt);
      return at >= opts.since.getTime() && at < opts.until.getTime();
    };
    const rows = await rowsChanged(db, tenantId, opts.since, opts.until);
    const byKey = new Map(listing.shipments.map((s) => [s.key, s]));
    // A shipped order whose shipment was created before the window (a retried call, a later change to the row) is
    // looked up by its key.
    for (const row of rows) {
      const key = shipmentKey(row.tenant_id, row.order_id);
      if (row.status !== 'shipped' || byKey.has(key)) continue;
      const one = await listShipments(config.WAREHOUSE_URL, tenantId, timeout, { key });
      if (one.ok) for (const s of one.shipments) if (s.key === key) byKey.set(key, s);
    }
    const named = await rowsOf(
      db,
      tenantId,
      listing.shipments.filter(inWindow).map((s) => s.orderId),
    );
    const rowByOrder = new Map([...rows, ...named].map((r) => [r.order_id, r]));
    const one = compareShipments({
      rows,
      rowOf: (_t, orderId) => rowByOrder.get(orderId),
      shipments: byKey,
      inWindow,
      now,
      slackMs: opts.settleMs,
    });
    result.compared += one.compared;
    result.mismatches.push(...one.mismatches);
  }
  return result;
}

async function statusCheck({ deps, opts, tenants, now }: CheckContext): Promise<CheckResult> {
  const { config, db, kafka } = deps;
  const rows = [];
  const outbox = [];
  for (const tenantId of tenants) {
    const changed = (await rowsChanged(db, tenantId, opts.since, opts.until)).filter(
      (r) => now - r.updated_at.getTime() >= opts.settleMs,
    );
    rows.push(...changed);
    outbox.push(
      ...(await outboxRows(db, tenantId, {
        orderIds: changed.map((r) => r.order_id),
        since: opts.since,
        until: opts.until,
      })),
    );
  }
  // A record's timestamp is taken just before its row is marked sent: read back from a little earlier.
  const fromTopic = await statusTopicEventIds(kafka, config.STATUS_TOPIC, new Date(opts.since.getTime() - 60_000), {
    clientId: `${config.KAFKA_CLIENT_ID}-reconcile`,
    signal: deps.signal,
  });
  const result = compareStatus({
    rows,
    outbox,
    statusTopic: config.STATUS_TOPIC,
    onTopic: fromTopic.eventIds,
    topicFromMs: opts.since.getTime(),
    outboxHorizonMs: now - config.STATUS_OUTBOX_RETENTION_DAYS * DAY_MS,
    outboxRetention: `STATUS_OUTBOX_RETENTION_DAYS=${config.STATUS_OUTBOX_RETENTION_DAYS}`,
  });
  for (const p of fromTopic.gone)
    result.unseen.push({
      check: 'status',
      what: `partition ${p} of ${config.STATUS_TOPIC} no longer holds its oldest records: sent entries of the window cannot all be matched`,
    });
  return result;
}
