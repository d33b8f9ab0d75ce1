/**
 * The bench's warehouse outage: one process with both roles at the defaults (as `npm start` runs it), orders arriving
 * at a steady OUTAGE_RATE per second, the stack's warehouse answering 503 to every shipment for `seconds`
 * (`--outage`), then answering again. What an operator meets: how many orders the outage held as failed (the goal is
 * none), how many requests the warehouse received while down, how long after it came back every order had shipped,
 * and the peak request rate of that recovery. Nothing asserted (a bench is not a test).
 */
import type pg from 'pg';
import { SHIPMENT_BACKOFF } from '../src/base/retry-policies.js';
import { WAREHOUSE_ACTIVITY } from '../workflows/activity-options.js';
import {
  dropTopic,
  measured,
  placement,
  privateTopic,
  produce,
  sleep,
  startChild,
  type Child,
  type Context,
  type PhaseResult,
} from './phases.js';

/** Orders per second the outage phase produces, before and through the outage. */
export const OUTAGE_RATE = 5;

/** An order's whole retry budget at the defaults before waits existed: the jittered delays' upper bounds, summed. */
export function defaultRetryBudgetSeconds(): number {
  let total = 0;
  for (let attempt = 1; attempt < WAREHOUSE_ACTIVITY.retry.maximumAttempts; attempt += 1) {
    total += Math.min(SHIPMENT_BACKOFF.maxDelayMs, SHIPMENT_BACKOFF.initialDelayMs * 2 ** (attempt - 1));
  }
  return total / 1000;
}

async function statuses(db: pg.Pool, tenant: string): Promise<Record<string, number>> {
  const c = await db.connect();
  try {
    await c.query('BEGIN');
    await c.query("SELECT set_config('app.tenant_id', $1, true)", [tenant]);
    const r = await c.query<{ status: string; n: string }>(
      'SELECT status, count(*) AS n FROM fulfilments GROUP BY status',
    );
    await c.query('COMMIT');
    return Object.fromEntries(r.rows.map((row) => [row.status, Number(row.n)]));
  } finally {
    c.release();
  }
}

async function faults(ctx: Context, body: object): Promise<void> {
  const res = await fetch(new URL('/admin/faults', ctx.config.WAREHOUSE_URL), {
    method: 'POST',
    body: JSON.stringify(body),
  });
  if (!res.ok)
    throw new Error(
      `the warehouse refused its faults (${res.status}): the outage phase needs the stack's local warehouse`,
    );
}

async function requestTimes(ctx: Context): Promise<number[]> {
  return ((await (await fetch(new URL('/admin/stats', ctx.config.WAREHOUSE_URL))).json()) as { requestTimes: number[] })
    .requestTimes;
}

export async function warehouseOutage(ctx: Context, rep: number, seconds: number): Promise<PhaseResult> {
  const tenant = `b-${ctx.suffix}-outage-${rep}`;
  const { topic, group, env } = await privateTopic(ctx, `outage-${rep}`, 6);
  let both: Child | undefined;
  let down = false;
  try {
    both = await startChild('both', { ...env, TEMPORAL_TASK_QUEUE: `bench-${ctx.suffix}-outage-${rep}` });
    const b = both;
    return await measured(
      ctx,
      'outage',
      () => ({ bridge: b.pid }),
      async () => {
        let produced = 0;
        const send = async () => {
          const e = placement(tenant, produced);
          produced += 1;
          await produce(ctx, topic, [{ key: e.orderId, value: JSON.stringify(e) }]);
        };
        // A steady arrival rate through the outage (one order every 1/OUTAGE_RATE s, on the clock, not after each send).
        const paced = async (untilMs: number) => {
          const start = Date.now();
          for (let i = 0; Date.now() < untilMs; i += 1) {
            await send();
            const next = start + ((i + 1) * 1000) / OUTAGE_RATE;
            if (next > Date.now()) await sleep(next - Date.now());
          }
        };
        await faults(ctx, { down: true });
        down = true;
        const downAt = Date.now();
        await paced(downAt + seconds * 1000);
        const during = produced;
        const failedByOutage = (await statuses(ctx.db, tenant)).failed ?? 0;
        await faults(ctx, { down: false });
        down = false;
        const upAt = Date.now();
        const whileDown = (await requestTimes(ctx)).filter((t) => t >= downAt && t < upAt).length;
        let last = Date.now();
        for (;;) {
          const s = await statuses(ctx.db, tenant);
          if ((s.shipped ?? 0) + (s.failed ?? 0) >= during) break;
          if (Date.now() - last > 10_000) {
            last = Date.now();
            ctx.progress(`outage: ${s.shipped ?? 0}/${during} shipped since the warehouse came back`);
          }
          await sleep(250);
        }
        const settledAt = Date.now();
        const after = (await requestTimes(ctx)).filter((t) => t >= upAt && t <= settledAt);
        const perSecond = new Map<number, number>();
        for (const t of after) perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1);
        const outageSeconds = (upAt - downAt) / 1000;
        return {
          outageSeconds,
          retryBudgetSeconds: defaultRetryBudgetSeconds(),
          ordersDuringOutage: during,
          failedByOutage,
          failedAfter: (await statuses(ctx.db, tenant)).failed ?? 0,
          requestsWhileDown: whileDown,
          requestsPerSecondWhileDown: whileDown / outageSeconds,
          recoverySeconds: (settledAt - upAt) / 1000,
          recoveryPeakPerSecond: Math.max(0, ...perSecond.values()),
        };
      },
    );
  } finally {
    if (down) await faults(ctx, { down: false }).catch(() => undefined);
    await both?.stop();
    await dropTopic(ctx, topic, group);
  }
}
