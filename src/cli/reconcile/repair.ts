/**
 * `fulfilment reconcile --repair`: what each mismatch a pass found gets, through the service's existing repair paths
 * only — never a write of its own around them. A dry run lists the plan; `--yes` carries it out, at most `--rate`
 * repairs a second, and ends with one audit line on stderr (who, when, why, each repair and its outcome), as
 * `dlq redrive` and `dlq purge` do (src/cli/dlq/audit.ts).
 *
 *   skipped (a valid event)  → redelivered from its offset through `fulfilment redeliver`'s path (the bridge's own
 *                              delivery, in a consumer group of its own): the order's run or the store's late path
 *                              records it; the event id dedupes, so a record handled meanwhile changes nothing
 *   run-missing              → a run started from the store (`fulfilment order retry`'s restartPendingOrder): it ships
 *                              the order under its one key; an open run found meanwhile is left alone
 *   status-unpublished       → the missing status event written into the outbox, as the store writes one
 *                              (buildStatusEvent), its id derived from the order's row as it stands: a second repair
 *                              of the same change writes nothing (the outbox's unique event id); the relay sends it
 *   status-missing-on-topic  → the outbox row's record published again to the status topic exactly as the relay
 *                              publishes it (outboxRecord); consumers drop a repeat by its eventId
 *   run-without-workers      → flagged for a person with the command that fixes it: start workers of the version the
 *                              run is pinned to (FULFILMENT_ROLES=worker WORKER_BUILD_ID=<build> node
 *                              dist/src/service.js, from that build); nothing moves a pinned run to another version
 *                              safely (a version reads only the state of the versions before it:
 *                              src/adapters/deployment/move-rule.ts)
 *   anything else            → flagged for a person, with what to look at: a skipped record that is not a valid event,
 *                              a run open for a closed order, a shipment missing, unexpected or with other lines
 *
 * Rule a reader must not break: every repair is safe to repeat, so a second pass after a repair finds nothing to do
 * and a repeated `--repair --yes` changes nothing more.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../../adapters/store/db.js';
import { inTenantTransaction } from '../../adapters/store/db.js';
import type { Kafka } from '../../adapters/kafka/client.js';
import { createSender } from '../../adapters/kafka/sender.js';
import type { FulfilmentRow } from '../../vocabulary/order.js';
import { orderKey, type Mismatch } from '../../reconcile/mismatch.js';
import type { PassReport } from '../../reconcile/pass.js';
import { mismatchLine } from '../../reconcile/report.js';
import { readOutboxRow, recordStatusChange } from '../../adapters/status-events/outbox.js';
import { outboxRecord } from '../../adapters/status-events/relay.js';
import { expectedEvents } from '../../reconcile/status.js';
import { readFulfilment } from '../../adapters/store/fulfilments.js';
import { audit } from '../dlq/audit.js';
import type { CliContext } from '../context.js';
import { defaultOperator } from '../order/options.js';
import { restartPendingOrder } from '../order/operator-update.js';
import { eprintln, println, type Output } from '../output.js';
import { TokenBucket } from '../token-bucket.js';
import type { ReconcileOptions } from './options.js';

export interface RepairContext extends CliContext {
  db: Db;
  client: Client;
  kafka: Kafka;
}

/** What a repair does to one mismatch (planned), and what came of it (carried out). */
export interface RepairAction {
  kind: Mismatch['kind'];
  order: string;
  at?: string;
  action: 'redeliver' | 'start-run' | 'write-outbox' | 'republish' | 'flag';
  /** For a person: what to look at (flag) or what was done. */
  detail: string;
  outcome?: string;
}

/** The repair each mismatch gets. */
export function planRepairs(report: PassReport): RepairAction[] {
  return report.results.flatMap((r) => r.mismatches.map(planOne));
}

function planOne(m: Mismatch): RepairAction {
  const base = { kind: m.kind, order: orderKey(m.tenantId, m.orderId), ...(m.at ? { at: m.at } : {}) };
  const valid = !m.sides[0]?.state.startsWith('malformed');
  switch (m.kind) {
    case 'skipped':
      return valid
        ? { ...base, action: 'redeliver', detail: `redeliver the record at ${m.at} through the bridge's path` }
        : { ...base, action: 'flag', detail: `a malformed record was skipped, not dead-lettered: ${mismatchLine(m)}` };
    case 'run-missing':
      return { ...base, action: 'start-run', detail: 'start a run from the store that ships the order' };
    case 'run-without-workers':
      return { ...base, action: 'flag', detail: startWorkersOf(m.buildId ?? '<build>') };
    case 'status-unpublished':
      return { ...base, action: 'write-outbox', detail: 'write the missing status event into the outbox' };
    case 'status-missing-on-topic':
      return { ...base, action: 'republish', detail: `publish outbox event ${m.at} to the status topic again` };
    default:
      return { ...base, action: 'flag', detail: `only a person can judge: ${mismatchLine(m)}` };
  }
}

/** What a person runs for a run pinned to a version without workers: a worker of that version, which finishes it. */
export function startWorkersOf(buildId: string): string {
  return (
    `start workers of version ${buildId}, from the image (or checkout) of that build: ` +
    `\`FULFILMENT_ROLES=worker WORKER_BUILD_ID=${buildId} node dist/src/service.js\`; ` +
    `the run goes on there. Keep them until \`fulfilment deployment show\` counts no open run of ${buildId}`
  );
}

/** Plans the repairs, prints the plan; with `--yes` carries them out, paced, and audits them. */
export async function repairAll(
  ctx: RepairContext,
  report: PassReport,
  opts: ReconcileOptions,
): Promise<RepairAction[]> {
  const actions = planRepairs(report);
  const by = opts.by ?? defaultOperator();
  const out = progressOut(ctx.out, opts.json);
  if (!opts.yes) {
    for (const a of actions) println(out, `would ${a.action} ${a.order}${a.at ? ` at ${a.at}` : ''}: ${a.detail}`);
    println(out, `dry run: ${actions.length} repair(s) planned; nothing changed (add --yes --reason "…" to repair)`);
  } else {
    const bucket = TokenBucket.perSecond(opts.rate);
    await redeliverSkipped(ctx, actions, opts.rate, out);
    for (const a of actions) {
      if (a.action === 'redeliver' || a.action === 'flag') continue;
      await bucket.take();
      a.outcome = await carryOut(ctx, a, by).catch((err: unknown) => `failed: ${(err as Error).message}`);
      println(out, `${a.action} ${a.order}: ${a.outcome}`);
    }
    for (const a of actions) if (a.action === 'flag') a.outcome = 'flagged for a person';
  }
  audit(ctx.out, {
    audit: 'reconcile repair',
    at: new Date().toISOString(),
    operator: by,
    reason: opts.reason ?? null,
    dryRun: !opts.yes,
    window: { since: report.since.toISOString(), until: report.until.toISOString() },
    dlqTopic: ctx.config.DLQ_TOPIC,
    actions,
  });
  return actions;
}

/** Where repair progress goes: stdout, or stderr when stdout carries the JSON report. */
function progressOut(out: Output, json?: boolean): Output {
  return json ? { ...out, write: (s: string) => out.writeErr(s) } : out;
}

async function carryOut(ctx: RepairContext, a: RepairAction, by: string): Promise<string> {
  const [tenantId, orderId] = splitOrder(a.order);
  switch (a.action) {
    case 'start-run': {
      const r = await restartPendingOrder(ctx.client, ctx.config, { tenantId, orderId, status: 'pending' }, by);
      return r.via === 'repair run' ? `run ${r.runId} started from the store` : `a run was open already (${r.runId})`;
    }
    case 'write-outbox':
      return writeMissingStatus(ctx, tenantId, orderId, by);
    case 'republish':
      return republish(ctx, tenantId, a.at!);
    default:
      return 'nothing to do';
  }
}

function splitOrder(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}

/** Redelivers the skipped records, one offset range per partition: from the first skipped to the last. */
async function redeliverSkipped(ctx: RepairContext, actions: RepairAction[], rate: number, out: Output): Promise<void> {
  const mine = actions.filter((a) => a.action === 'redeliver');
  if (mine.length === 0) return;
  const byPartition = new Map<number, bigint[]>();
  for (const a of mine) {
    const [p, o] = a.at!.split(':');
    byPartition.set(Number(p), [...(byPartition.get(Number(p)) ?? []), BigInt(o!)]);
  }
  const from = [...byPartition].map(([partition, offs]) => ({
    partition,
    offset: offs.reduce((x, y) => (y < x ? y : x)),
  }));
  const to = [...byPartition].map(([partition, offs]) => ({
    partition,
    offset: offs.reduce((x, y) => (y > x ? y : x)) + 1n,
  }));
  const { redeliver } = await import('../redeliver/redeliver.js');
  try {
    const s = await redeliver(
      { ...ctx, out: { ...out, write: (t: string) => out.writeErr(t) } },
      {
        from: { kind: 'positions', positions: from },
        to: { kind: 'positions', positions: to },
        rate,
        group: `${ctx.config.CONSUMER_GROUP}-reconcile`,
      },
    );
    for (const a of mine) a.outcome = `redelivered (${s.delivered} delivered, ${s.recordedLate} recorded late)`;
  } catch (err) {
    for (const a of mine) a.outcome = `failed: ${(err as Error).message}`;
  }
  eprintln(out, `redelivered ${mine.length} skipped record(s)`);
}

/** Writes the order's missing status events into the outbox, ids derived from the row as it stands. */
async function writeMissingStatus(ctx: RepairContext, tenantId: string, orderId: string, by: string): Promise<string> {
  return inTenantTransaction(ctx.db, tenantId, async (tx) => {
    const row = await readFulfilment(tx, tenantId, orderId);
    if (!row) return 'the store no longer holds the order: nothing written';
    const have = await tx.query<{ event_type: string }>(
      'SELECT event_type FROM status_outbox WHERE tenant_id = $1 AND order_id = $2',
      [tenantId, orderId],
    );
    const present = new Set(have.rows.map((r) => r.event_type));
    const written: string[] = [];
    for (const type of expectedEvents(row).filter((t) => !present.has(t))) {
      const claimKey = `reconcile/${tenantId}/${orderId}/${type}/${row.updated_at.getTime()}`;
      const event = await recordStatusChange(tx, beforeOf(row, type), row, {
        topic: ctx.config.STATUS_TOPIC,
        claimKey,
        causationId: `reconcile by ${by}`,
      });
      if (event) written.push(`${event.type} ${event.eventId}`);
    }
    return written.length ? `written: ${written.join(', ')}` : 'the outbox holds it now: nothing written';
  });
}

/** A row before a change that makes `type` (statusEventType): another status, or no refusal yet. */
function beforeOf(row: FulfilmentRow, type: string): FulfilmentRow {
  if (type === 'fulfilment.CancellationRefused') return { ...row, cancel_refused_at: null };
  return { ...row, status: row.status === 'failed' ? 'pending' : 'failed' };
}

/** Publishes the outbox row with `eventId` to the status topic again, as the relay publishes it. */
async function republish(ctx: RepairContext, tenantId: string, eventId: string): Promise<string> {
  const row = await inTenantTransaction(ctx.db, tenantId, (tx) => readOutboxRow(tx, tenantId, eventId));
  if (!row) return 'the outbox no longer holds it: nothing published';
  const sender = createSender(ctx.kafka, { idempotent: true });
  try {
    const record = outboxRecord(row);
    const at = await sender.sendOne(row.topic, record);
    return `published to ${row.topic}${at ? ` at ${at.partition}:${at.offset}` : ''}`;
  } finally {
    await sender.disconnect().catch(() => undefined);
  }
}
