/**
 * `fulfilment status tail <tenant>[/<order>] [--limit n] [--follow] [--json]`: the status events of a tenant or an
 * order, from the status outbox (src/adapters/status-events/outbox.ts) read as the runtime role in transactions scoped
 * to the tenant (row-level security applies as for the service). Each line: when the change was committed, the type,
 * the order and its version, the status, the cause, and whether the relay has published it (`sent` or `waiting`). With
 * --follow it polls for newer rows every STATUS_RELAY_POLL_MS until SIGINT. No personal data: the events hold none.
 */
import { runtimeConnection } from '../../adapters/store/connection.js';
import { createDb, inTenantTransaction, type Db } from '../../adapters/store/db.js';
import { checkRuntimeRole } from '../../adapters/store/runtime-role.js';
import { lastStatusEvents, readStatusEvents, type OutboxEntry } from '../../adapters/status-events/outbox.js';
import type { CliContext } from '../context.js';
import { println } from '../output.js';
import { sleep } from '../../base/sleep.js';

/** What `status tail` shows: a tenant's events, or one order's. */
export interface StatusTailOptions {
  tenantId: string;
  orderId?: string;
  limit: number;
  follow?: boolean;
  json?: boolean;
}

/** One line of an entry: text, or a JSON object with --json. */
export function tailLine(e: OutboxEntry, json: boolean | undefined): string {
  if (json)
    return JSON.stringify({ id: e.id, topic: e.topic, sentAt: e.sentAt?.toISOString() ?? null, event: e.event });
  const ev = e.event;
  return [
    ev.occurredAt,
    ev.type.padEnd(31),
    `${ev.tenantId}/${ev.orderId}`,
    `v${ev.orderVersion}`,
    ev.status,
    `cause ${ev.causationId}`,
    e.sentAt ? 'sent' : 'waiting',
    ev.eventId,
  ].join('  ');
}

async function follow(ctx: CliContext, db: Db, opts: StatusTailOptions, afterId: string): Promise<void> {
  let last = afterId;
  while (!ctx.signal?.aborted) {
    const page = await inTenantTransaction(db, opts.tenantId, (tx) =>
      readStatusEvents(tx, { ...opts, afterId: last, limit: 500 }),
    );
    for (const e of page) println(ctx.out, tailLine(e, opts.json));
    if (page.length > 0) last = page.at(-1)!.id;
    else await sleep(ctx.config.STATUS_RELAY_POLL_MS, ctx.signal);
  }
}

/** Prints the last `limit` events (then, with --follow, the new ones); returns how many it printed first. */
export async function statusTail(ctx: CliContext, opts: StatusTailOptions): Promise<{ shown: number }> {
  const db = createDb(runtimeConnection(ctx.config), 1);
  try {
    await checkRuntimeRole(db);
    const first = await inTenantTransaction(db, opts.tenantId, (tx) => lastStatusEvents(tx, opts));
    for (const e of first) println(ctx.out, tailLine(e, opts.json));
    if (opts.follow) await follow(ctx, db, opts, first.at(-1)?.id ?? '0');
    return { shown: first.length };
  } finally {
    await db.end().catch(() => undefined);
  }
}
