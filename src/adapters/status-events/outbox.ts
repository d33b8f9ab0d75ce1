/**
 * The status outbox (migration 007_status_outbox.sql): the row a status change writes in its own transaction, and what
 * the relay and the CLI read. Writing goes through the store's tenant-scoped transactions like every other effect;
 * the relay's work is cross-tenant and goes through the migration's functions, on one session that holds the relay's
 * lock of its topic (they refuse any other session): see src/adapters/status-events/relay.ts.
 */
import pg from 'pg';
import type { Db, Tx } from '../store/db.js';
import { buildStatusEvent, statusEventType, type ChangeContext, type ChangedRow, type StatusEvent } from './event.js';

export type { ChangeContext } from './event.js';

/**
 * Writes the event of a change (the row `before` → `after`) into the outbox inside `tx`, the change's transaction,
 * when the change is one (statusEventType); returns the event, or undefined when the change is none.
 */
export async function recordStatusChange(
  tx: Tx,
  before: ChangedRow | undefined,
  after: ChangedRow,
  change: ChangeContext,
): Promise<StatusEvent | undefined> {
  const type = statusEventType(before, after);
  if (type === undefined) return undefined;
  const event = buildStatusEvent(type, after, change);
  await tx.query(
    `INSERT INTO status_outbox (topic, tenant_id, order_id, event_id, event_type, payload, traceparent, correlation_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      change.topic,
      event.tenantId,
      event.orderId,
      event.eventId,
      event.type,
      JSON.stringify(event),
      change.traceparent ?? null,
      event.correlationId,
    ],
  );
  return event;
}

/** One outbox row as the relay publishes it. */
export interface OutboxRow {
  /** Commit order within an order (a bigint, as text). */
  id: string;
  tenantId: string;
  orderId: string;
  eventId: string;
  type: string;
  /** The record's value, exactly as written. */
  payload: string;
  traceparent: string | null;
  correlationId: string;
  /** When the change was committed (the transaction's time). */
  createdAt: Date;
}

interface OutboxRecord {
  id: string;
  tenant_id: string;
  order_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  traceparent: string | null;
  correlation_id: string;
  created_at: Date;
}

const toRow = (r: OutboxRecord): OutboxRow => ({
  id: r.id,
  tenantId: r.tenant_id,
  orderId: r.order_id,
  eventId: r.event_id,
  type: r.event_type,
  payload: r.payload,
  traceparent: r.traceparent,
  correlationId: r.correlation_id,
  createdAt: r.created_at,
});

/** The name the outbox's insert trigger notifies, with the row's topic as payload. */
export const OUTBOX_CHANNEL = 'fulfilment_status_outbox';

/** The relay's own session: one connection that holds (or waits for) the lock of its topic, and listens for rows. */
export interface RelaySession {
  readonly topic: string;
  /** Takes the topic's lock when no other session holds it; true once this session holds it. */
  tryLead(): Promise<boolean>;
  /** The next unsent rows of the topic, in commit order; refused (SQLSTATE 55P03) unless this session leads. */
  unsent(limit: number): Promise<OutboxRow[]>;
  /** Marks rows sent; refused unless this session leads. Returns how many were still unsent. */
  markSent(ids: readonly string[]): Promise<number>;
  /** Seconds since the oldest unsent row of the topic was committed (the database's clock); 0 when none waits. */
  lagSeconds(): Promise<number>;
  /**
   * Resolves when a row for the topic was committed since the last unsent() began (at once if one already was), after
   * `ms`, when `signal` aborts, or when the session is lost. True when a row's notification woke it.
   */
  changed(ms: number, signal: AbortSignal): Promise<boolean>;
  /** Why the connection is gone, once it is (its lock went with it). */
  lost(): Error | undefined;
  /** Ends the connection, and with it the lock. */
  close(): Promise<void>;
}

/**
 * The commits a relay session is told of (its topic's notifications), and its waits for the next one. A commit is
 * remembered until the next read begins, so one that lands while a round runs (no wait yet) ends the wait that follows
 * it at once.
 */
class CommitWaits {
  private notified = false;
  private readonly waiters = new Set<() => void>();

  /** A row of the topic was committed. */
  committed(): void {
    this.notified = true;
    this.wakeAll();
  }

  /** A read of the outbox begins: a row committed after its snapshot notifies after this, and is waited for. */
  reading(): void {
    this.notified = false;
  }

  /** Ends every wait (the session is gone). */
  wakeAll(): void {
    for (const w of this.waiters) w();
    this.waiters.clear();
  }

  /** Resolves on a commit (true), after `ms`, when `signal` aborts or the session is `over` (false, unless notified). */
  wait(ms: number, signal: AbortSignal, over: boolean): Promise<boolean> {
    if (over || signal.aborted || this.notified) return Promise.resolve(this.notified);
    return new Promise<boolean>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve(this.notified);
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
  }
}

/** Opens the relay's session for `topic` as the runtime role (`connection`): connected and listening, not leading yet. */
export async function openRelaySession(connection: pg.ClientConfig, topic: string): Promise<RelaySession> {
  const client = new pg.Client({ ...connection, keepAlive: true });
  let gone: Error | undefined;
  const commits = new CommitWaits();
  client.on('error', (err: Error) => {
    gone ??= err;
    commits.wakeAll();
  });
  client.on('end', () => {
    gone ??= new Error('the relay session ended');
    commits.wakeAll();
  });
  client.on('notification', (n) => {
    if (n.channel === OUTBOX_CHANNEL && n.payload === topic) commits.committed();
  });
  await client.connect();
  try {
    await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return {
    topic,
    async tryLead() {
      return (
        (await client.query<{ leads: boolean }>('SELECT status_relay_try_lead($1) AS leads', [topic])).rows[0]
          ?.leads === true
      );
    },
    async unsent(limit) {
      commits.reading();
      return (await client.query<OutboxRecord>('SELECT * FROM status_outbox_unsent($1, $2)', [topic, limit])).rows.map(
        toRow,
      );
    },
    async markSent(ids) {
      const res = await client.query<{ marked: string }>('SELECT status_outbox_mark_sent($1, $2::bigint[]) AS marked', [
        topic,
        ids,
      ]);
      return Number(res.rows[0]?.marked ?? 0);
    },
    async lagSeconds() {
      return Number(
        (await client.query<{ lag: number }>('SELECT status_outbox_lag($1) AS lag', [topic])).rows[0]?.lag ?? 0,
      );
    },
    changed: (ms, signal) => commits.wait(ms, signal, gone !== undefined),
    lost: () => gone,
    async close() {
      gone ??= new Error('the relay session was closed');
      commits.wakeAll();
      await client.end().catch(() => undefined);
    },
  };
}

/** One order's or one tenant's status events in commit order, read tenant-scoped, after row `afterId`. */
export interface OutboxEntry {
  id: string;
  topic: string;
  /** The event, as published. */
  event: StatusEvent;
  /** When the relay published it (null: not yet). */
  sentAt: Date | null;
}

/** Reads up to `limit` of `tenantId`'s events (of `orderId` only, when given) after row `afterId`, inside `tx`. */
export async function readStatusEvents(
  tx: Tx,
  q: { tenantId: string; orderId?: string; afterId?: string; limit: number },
): Promise<OutboxEntry[]> {
  const res = await tx.query<{ id: string; topic: string; payload: StatusEvent; sent_at: Date | null }>(
    `SELECT id, topic, payload, sent_at FROM status_outbox
     WHERE tenant_id = $1 AND ($2::text IS NULL OR order_id = $2) AND id > $3::bigint
     ORDER BY id LIMIT $4`,
    [q.tenantId, q.orderId ?? null, q.afterId ?? '0', q.limit],
  );
  return res.rows.map((r) => ({ id: r.id, topic: r.topic, event: r.payload, sentAt: r.sent_at }));
}

/** The last `limit` of `tenantId`'s events (of `orderId` only, when given), oldest first, inside `tx`. */
export async function lastStatusEvents(
  tx: Tx,
  q: { tenantId: string; orderId?: string; limit: number },
): Promise<OutboxEntry[]> {
  const res = await tx.query<{ id: string; topic: string; payload: StatusEvent; sent_at: Date | null }>(
    `SELECT * FROM (
       SELECT id, topic, payload, sent_at FROM status_outbox
       WHERE tenant_id = $1 AND ($2::text IS NULL OR order_id = $2)
       ORDER BY id DESC LIMIT $3
     ) last ORDER BY id`,
    [q.tenantId, q.orderId ?? null, q.limit],
  );
  return res.rows.map((r) => ({ id: r.id, topic: r.topic, event: r.payload, sentAt: r.sent_at }));
}

/** Seconds since the oldest unsent row of `topic` was committed (the database's clock); 0 when none waits. Any session. */
export async function statusOutboxLag(db: Db, topic: string): Promise<number> {
  return Number((await db.query<{ lag: number }>('SELECT status_outbox_lag($1) AS lag', [topic])).rows[0]?.lag ?? 0);
}

/** One of `tenantId`'s outbox rows by its event id, with its topic, read tenant-scoped inside `tx`; undefined if none. */
export async function readOutboxRow(
  tx: Tx,
  tenantId: string,
  eventId: string,
): Promise<(OutboxRow & { topic: string }) | undefined> {
  const res = await tx.query<OutboxRecord & { topic: string }>(
    `SELECT id, topic, tenant_id, order_id, event_id, event_type, payload::text AS payload, traceparent, correlation_id,
            created_at
     FROM status_outbox WHERE tenant_id = $1 AND event_id = $2`,
    [tenantId, eventId],
  );
  const r = res.rows[0];
  return r && { ...toRow(r), topic: r.topic };
}
