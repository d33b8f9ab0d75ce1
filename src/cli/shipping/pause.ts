/**
 * `fulfilment shipping pause|resume|status` (commands.ts): writes and reads shipping_pauses (migration 008) as the
 * runtime role. Workers read the pauses every 2 s (src/adapters/store/pause-book.ts): an order whose shipment comes up
 * while a pause holds its tenant waits, as in an outage, and the workers' resumers wake it once the pause has ended.
 */
import { runtimeConnection } from '../../adapters/store/connection.js';
import { createDb, type Db } from '../../adapters/store/db.js';
import { checkRuntimeRole } from '../../adapters/store/runtime-role.js';
import { wakeReleased } from '../../roles/worker/wake-orders.js';
import {
  pausesInForce,
  releaseWaitingOrders,
  waitSummary,
  type ShippingPause,
  type WaitSummary,
} from '../../adapters/store/shipment-waits.js';
import { cliLogger, type CliContext } from '../context.js';
import { InterruptedError, NotFoundError } from '../cli-errors.js';
import { eprintln, println } from '../output.js';
import { cliTemporalClient } from '../temporal-client.js';
import { DEFAULT_PAUSE_REFRESH_MS } from '../../adapters/store/pause-book.js';
import { endLapsedReleases, holdRelease } from '../../adapters/store/pause-releases.js';
import { defaultOperator } from '../order/options.js';
import { sleep } from '../../base/sleep.js';

/** What `shipping pause` and `shipping resume` are asked. */
export interface ShippingChangeOptions {
  /** Undefined: every tenant. */
  tenantId?: string;
  reason: string;
  by?: string;
  dryRun?: boolean;
  json?: boolean;
  /** resume only: wake the pause's orders at this many per second before ending it. */
  rate?: number;
}

const scopeOf = (tenantId: string | undefined) => (tenantId ? `tenant ${tenantId}` : 'every tenant');

function describePause(p: ShippingPause): string {
  const until = p.releasingUntil
    ? `; if it stopped, the pause ends at ${p.releasingUntil.toISOString()} unless run again`
    : '';
  const releasing = p.releasingAt
    ? ` (being resumed since ${p.releasingAt.toISOString()}: shipments go out, its orders are woken by \`shipping resume --rate\`${until})`
    : '';
  return `${scopeOf(p.tenantId)}: paused by ${p.pausedBy} at ${p.pausedAt.toISOString()}: ${p.reason}${releasing}`;
}

function describeWaits(w: WaitSummary): string {
  if (w.orders === 0) return 'no order waits for the warehouse';
  return `${w.orders} order(s) wait for the warehouse, the oldest since ${w.oldest?.toISOString() ?? '?'}; a pause holds ${w.paused} of them`;
}

/** Runs `work` on the store as the runtime role, once the pauses whose resume stopped holding them are ended. */
async function withDb<T>(ctx: CliContext, work: (db: Db) => Promise<T>): Promise<T> {
  const db = createDb(runtimeConnection(ctx.config), 1);
  try {
    await checkRuntimeRole(db);
    await endLapsedReleases(db);
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
      if (opts.json)
        println(
          ctx.out,
          JSON.stringify({ outcome: 'already-paused', dryRun: opts.dryRun === true, pause: existing, waits }),
        );
      else println(ctx.out, `already paused, nothing changed: ${describePause(existing)}`);
      return;
    }
    if (opts.dryRun) {
      if (opts.json)
        println(
          ctx.out,
          JSON.stringify({
            outcome: 'would-pause',
            dryRun: true,
            tenantId: opts.tenantId ?? null,
            by,
            reason: opts.reason,
            waits,
          }),
        );
      else
        println(
          ctx.out,
          `dry run: would pause shipping for ${scopeOf(opts.tenantId)} (by ${by}: ${opts.reason}); ${describeWaits(waits)}; nothing changed`,
        );
      return;
    }
    const row = (
      await db.query<{ id: string; paused_at: Date }>(
        'INSERT INTO shipping_pauses (tenant_id, paused_by, reason) VALUES ($1, $2, $3) RETURNING id, paused_at',
        [opts.tenantId ?? null, by, opts.reason],
      )
    ).rows[0]!;
    if (opts.json)
      println(
        ctx.out,
        JSON.stringify({
          outcome: 'paused',
          dryRun: false,
          id: String(row.id),
          tenantId: opts.tenantId ?? null,
          by,
          reason: opts.reason,
          pausedAt: row.paused_at.toISOString(),
          waits,
        }),
      );
    else {
      println(
        ctx.out,
        `paused shipping for ${scopeOf(opts.tenantId)} at ${row.paused_at.toISOString()} (by ${by}: ${opts.reason})`,
      );
      println(
        ctx.out,
        'takes hold within 2 s on every worker; a shipment already at the warehouse finishes; orders whose shipment comes up wait (pending) until `fulfilment shipping resume`',
      );
    }
  });
}

/** Ends a pause in force — after waking its orders at `--rate`, when given — and reports what still waits. */
export async function shippingResume(ctx: CliContext, opts: ShippingChangeOptions): Promise<void> {
  const by = opts.by ?? defaultOperator();
  await withDb(ctx, async (db) => {
    const existing = (await pausesInForce(db)).find((p) => sameScope(p, opts.tenantId));
    if (!existing)
      throw new NotFoundError(
        `no pause in force for ${scopeOf(opts.tenantId)}: nothing to resume (\`fulfilment shipping status\` lists the pauses)`,
      );
    if (opts.dryRun) return reportDryResume(ctx, opts, existing, by, await waitSummary(db));
    const woken = opts.rate ? await wakeBeforeResuming(ctx, db, existing, opts.tenantId, opts.rate) : undefined;
    const resumedAt = await endPause(db, existing, opts, by);
    reportResumed(ctx, opts, { pause: existing, by, resumedAt, woken, waits: await waitSummary(db) });
  });
}

type Pause = Awaited<ReturnType<typeof pausesInForce>>[number];
type Waits = Awaited<ReturnType<typeof waitSummary>>;

function reportDryResume(ctx: CliContext, opts: ShippingChangeOptions, pause: Pause, by: string, waits: Waits): void {
  if (opts.json) {
    const result = { outcome: 'would-resume', dryRun: true, pause, by, reason: opts.reason, rate: opts.rate ?? null };
    return println(ctx.out, JSON.stringify({ ...result, waits }));
  }
  const paced = opts.rate ? `, waking its orders first at ${opts.rate}/s` : '';
  println(
    ctx.out,
    `dry run: would end the pause of ${describePause(pause)}${paced}; ${describeWaits(waits)}; nothing changed`,
  );
}

const RELEASE_LEASE_BASE_SECONDS = 30;

/**
 * How long one hold of the release lasts: renewed at the start of each round, so it outlasts a round (its pacing and
 * its signals) many times over; a command that stops holds the pause at most this long after its last round.
 */
function releaseLeaseSeconds(rate: number): number {
  const roundSeconds = Math.max(1, Math.round(rate)) / rate;
  return Math.ceil(RELEASE_LEASE_BASE_SECONDS + 3 * roundSeconds);
}

/** Holds (or renews) the release of `pause` for `rate`'s lease; stops the command if the pause ended meanwhile. */
async function renewRelease(db: Db, pause: Pause, rate: number, woken: number): Promise<void> {
  if ((await holdRelease(db, pause.id, releaseLeaseSeconds(rate))) === undefined)
    throw new NotFoundError(
      `the pause of ${scopeOf(pause.tenantId)} was ended meanwhile (by someone else, or because this command held it too long without a round) after waking ${woken} order(s): the workers' resumers wake the rest`,
    );
}

/**
 * Lets shipments go out again (the workers stop holding them within DEFAULT_PAUSE_REFRESH_MS), then wakes the pause's
 * orders at `rate`: only this command wakes them. An order woken before its worker read the pauses would find the
 * pause still holding it and wait again, hence the wait first. The release is a lease renewed each round
 * (src/adapters/store/pause-releases.ts): if the command stops for good, the pause ends once it runs out.
 */
async function wakeBeforeResuming(
  ctx: CliContext,
  db: Db,
  pause: Pause,
  tenantId: string | undefined,
  rate: number,
): Promise<number> {
  await renewRelease(db, pause, rate, 0);
  eprintln(
    ctx.out,
    `resume: shipments go out again within ${DEFAULT_PAUSE_REFRESH_MS / 1000} s; waking the pause's orders at ≤ ${rate}/s after that`,
  );
  await sleep(DEFAULT_PAUSE_REFRESH_MS + 500);
  return wakePaused(ctx, db, { pause, tenantId, rate });
}

/** Records the pause ended (who, why, when); refused when someone else ended it meanwhile. */
async function endPause(db: Db, pause: Pause, opts: ShippingChangeOptions, by: string): Promise<Date> {
  const row = (
    await db.query<{ resumed_at: Date }>(
      'UPDATE shipping_pauses SET resumed_at = now(), resumed_by = $2, resume_reason = $3 WHERE id = $1 AND resumed_at IS NULL RETURNING resumed_at',
      [pause.id, by, opts.reason],
    )
  ).rows[0];
  if (!row)
    throw new NotFoundError(
      `the pause of ${scopeOf(opts.tenantId)} was ended meanwhile by someone else: nothing changed`,
    );
  return row.resumed_at;
}

function reportResumed(
  ctx: CliContext,
  opts: ShippingChangeOptions,
  r: { pause: Pause; by: string; resumedAt: Date; woken: number | undefined; waits: Waits },
): void {
  if (opts.json) {
    const result = { outcome: 'resumed', dryRun: false, pause: r.pause, by: r.by, reason: opts.reason };
    const after = { resumedAt: r.resumedAt.toISOString(), woken: r.woken ?? null, waits: r.waits };
    return println(ctx.out, JSON.stringify({ ...result, ...after }));
  }
  if (r.woken !== undefined)
    println(ctx.out, `woke ${r.woken} waiting order(s) at ≤ ${opts.rate}/s, oldest first, before ending the pause`);
  println(
    ctx.out,
    `resumed shipping for ${scopeOf(opts.tenantId)} at ${r.resumedAt.toISOString()} (by ${r.by}: ${opts.reason}); it was ${describePause(r.pause)}`,
  );
  const wake = `the workers' shipment resumers wake them, oldest first, at WAREHOUSE_RESUME_PER_SECOND (${ctx.config.WAREHOUSE_RESUME_PER_SECOND}/s) per worker`;
  println(ctx.out, r.waits.orders > 0 ? `${describeWaits(r.waits)}: ${wake}` : describeWaits(r.waits));
}

/**
 * Wakes the orders the pause of `tenantId`'s scope holds, oldest first, at most `rate` per second, while the pause
 * still holds the rest (release_waiting_orders despite that pause, only orders whose last wait was for a pause). Every
 * order it releases is signalled; one that waits again for an outage is left to the workers' resumers once the pause
 * ends. A signal that fails hands its order back, and the command stops with the pause still in force: run it again
 * (or the pause ends when the release's lease runs out). An order released by an earlier run that was killed before
 * its signal is released again once its lease ran out — by a later run, or by the workers' resumers after the pause
 * ended. Each round renews the release. Returns how many orders it woke.
 */
async function wakePaused(
  ctx: CliContext,
  db: Db,
  { pause, tenantId, rate }: { pause: Pause; tenantId: string | undefined; rate: number },
): Promise<number> {
  const client = await cliTemporalClient(ctx.config);
  const woken = new Set<string>();
  try {
    const perRound = Math.max(1, Math.round(rate));
    const roundMs = (perRound / rate) * 1000;
    for (;;) {
      if (ctx.signal?.aborted)
        throw new InterruptedError(
          `interrupted after waking ${woken.size} order(s); the pause is still in force, being resumed: run the command again, or it ends when the release's lease runs out`,
        );
      const started = Date.now();
      await renewRelease(db, pause, rate, woken.size);
      const batch = await releaseWaitingOrders(db, perRound, {
        tenantId,
        despitePause: true,
        waitingFor: 'pause',
        leaseSeconds: ctx.config.WAKE_LEASE_SECONDS,
      });
      if (batch.length === 0) return woken.size;
      const tally = await wakeReleased({ client, db, logger: ctx.logger ?? cliLogger() }, batch, (o) =>
        woken.add(`${o.tenantId}/${o.orderId}`),
      );
      if (tally.failed.length > 0)
        throw new Error(
          `${tally.failed.length} order(s) could not be woken (${tally.error}) and were handed back, after waking ${woken.size}; the pause is still in force: run the command again`,
        );
      eprintln(ctx.out, `resume: ${woken.size} order(s) woken`);
      const rest = roundMs - (Date.now() - started);
      if (rest > 0) await sleep(rest);
    }
  } finally {
    await client.connection.close();
  }
}

export async function shippingStatus(ctx: CliContext, opts: { json?: boolean }): Promise<void> {
  await withDb(ctx, async (db) => {
    const pauses = await pausesInForce(db);
    const waits = await waitSummary(db);
    if (opts.json) return println(ctx.out, JSON.stringify({ pauses, waits }));
    println(
      ctx.out,
      pauses.length === 0 ? 'shipping is not paused' : `shipping paused for ${pauses.map(describePause).join('; ')}`,
    );
    println(ctx.out, describeWaits(waits));
  });
}
