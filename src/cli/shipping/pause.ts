/**
 * `fulfilment shipping pause|resume|status` (commands.ts): writes and reads shipping_pauses (migration 008) as the
 * runtime role. Workers read the pauses every 2 s (src/store/pause-book.ts): an order whose shipment comes up while a
 * pause holds its tenant waits, as in an outage, and the workers' resumers wake it once the pause has ended.
 */
import { runtimeConnection } from '../../store/connection.js';
import { createDb, type Db } from '../../store/db.js';
import { checkRuntimeRole } from '../../store/runtime-role.js';
import { pausesInForce, waitSummary, type ShippingPause, type WaitSummary } from '../../store/shipment-waits.js';
import type { CliContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { println } from '../output.js';
import { defaultOperator } from '../order/options.js';
import type { ShippingChangeOptions } from './commands.js';

const scopeOf = (tenantId: string | undefined) => (tenantId ? `tenant ${tenantId}` : 'every tenant');

function describePause(p: ShippingPause): string {
  return `${scopeOf(p.tenantId)}: paused by ${p.pausedBy} at ${p.pausedAt.toISOString()}: ${p.reason}`;
}

function describeWaits(w: WaitSummary): string {
  if (w.orders === 0) return 'no order waits for the warehouse';
  return `${w.orders} order(s) wait for the warehouse, the oldest since ${w.oldest?.toISOString() ?? '?'}; a pause holds ${w.paused} of them`;
}

async function withDb<T>(ctx: CliContext, work: (db: Db) => Promise<T>): Promise<T> {
  const db = createDb(runtimeConnection(ctx.config), 1);
  try {
    await checkRuntimeRole(db);
    return await work(db);
  } finally {
    await db.end().catch(() => undefined);
  }
}

const sameScope = (p: ShippingPause, tenantId: string | undefined) => p.tenantId === tenantId;

export async function shippingPause(ctx: CliContext, opts: ShippingChangeOptions): Promise<void> {
  const by = opts.by ?? defaultOperator();
  await withDb(ctx, async (db) => {
    const existing = (await pausesInForce(db)).find((p) => sameScope(p, opts.tenantId));
    const waits = await waitSummary(db);
    if (existing) {
      if (opts.json) println(ctx.out, JSON.stringify({ outcome: 'already-paused', dryRun: opts.dryRun === true, pause: existing, waits }));
      else println(ctx.out, `already paused, nothing changed: ${describePause(existing)}`);
      return;
    }
    if (opts.dryRun) {
      if (opts.json) println(ctx.out, JSON.stringify({ outcome: 'would-pause', dryRun: true, tenantId: opts.tenantId ?? null, by, reason: opts.reason, waits }));
      else println(ctx.out, `dry run: would pause shipping for ${scopeOf(opts.tenantId)} (by ${by}: ${opts.reason}); ${describeWaits(waits)}; nothing changed`);
      return;
    }
    const row = (
      await db.query<{ id: string; paused_at: Date }>('INSERT INTO shipping_pauses (tenant_id, paused_by, reason) VALUES ($1, $2, $3) RETURNING id, paused_at', [opts.tenantId ?? null, by, opts.reason])
    ).rows[0]!;
    if (opts.json) println(ctx.out, JSON.stringify({ outcome: 'paused', dryRun: false, id: String(row.id), tenantId: opts.tenantId ?? null, by, reason: opts.reason, pausedAt: row.paused_at.toISOString(), waits }));
    else {
      println(ctx.out, `paused shipping for ${scopeOf(opts.tenantId)} at ${row.paused_at.toISOString()} (by ${by}: ${opts.reason})`);
      println(ctx.out, 'takes hold within 2 s on every worker; a shipment already at the warehouse finishes; orders whose shipment comes up wait (pending) until `fulfilment shipping resume`');
    }
  });
}

export async function shippingResume(ctx: CliContext, opts: ShippingChangeOptions): Promise<void> {
  const by = opts.by ?? defaultOperator();
  await withDb(ctx, async (db) => {
    const existing = (await pausesInForce(db)).find((p) => sameScope(p, opts.tenantId));
    if (!existing) throw new NotFoundError(`no pause in force for ${scopeOf(opts.tenantId)}: nothing to resume (\`fulfilment shipping status\` lists the pauses)`);
    if (opts.dryRun) {
      const waits = await waitSummary(db);
      if (opts.json) println(ctx.out, JSON.stringify({ outcome: 'would-resume', dryRun: true, pause: existing, by, reason: opts.reason, waits }));
      else println(ctx.out, `dry run: would end the pause of ${describePause(existing)}; ${describeWaits(waits)}; nothing changed`);
      return;
    }
    const row = (
      await db.query<{ resumed_at: Date }>(
        'UPDATE shipping_pauses SET resumed_at = now(), resumed_by = $2, resume_reason = $3 WHERE id = $1 AND resumed_at IS NULL RETURNING resumed_at',
        [existing.id, by, opts.reason],
      )
    ).rows[0];
    if (!row) throw new NotFoundError(`the pause of ${scopeOf(opts.tenantId)} was ended meanwhile by someone else: nothing changed`);
    const waits = await waitSummary(db);
    if (opts.json) println(ctx.out, JSON.stringify({ outcome: 'resumed', dryRun: false, pause: existing, by, reason: opts.reason, resumedAt: row.resumed_at.toISOString(), waits }));
    else {
      println(ctx.out, `resumed shipping for ${scopeOf(opts.tenantId)} at ${row.resumed_at.toISOString()} (by ${by}: ${opts.reason}); it was ${describePause(existing)}`);
      const wake = `the workers' shipment resumers wake them, oldest first, at WAREHOUSE_RESUME_PER_SECOND (${ctx.config.WAREHOUSE_RESUME_PER_SECOND}/s) per worker`;
      println(ctx.out, waits.orders > 0 ? `${describeWaits(waits)}: ${wake}` : describeWaits(waits));
    }
  });
}

export async function shippingStatus(ctx: CliContext, opts: { json?: boolean }): Promise<void> {
  await withDb(ctx, async (db) => {
    const pauses = await pausesInForce(db);
    const waits = await waitSummary(db);
    if (opts.json) return println(ctx.out, JSON.stringify({ pauses, waits }));
    println(ctx.out, pauses.length === 0 ? 'shipping is not paused' : `shipping paused for ${pauses.map(describePause).join('; ')}`);
    println(ctx.out, describeWaits(waits));
  });
}
