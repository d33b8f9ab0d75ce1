/**
 * What the skipped check reads: the orders topic's window below the group's committed offsets, each record as the edge
 * parses it (src/adapters/events/envelope.ts: the bridge's own verdict); the dead letters written since the window
 * began, headers only (their `dlq-original-*` coordinates); and the ledger's claims of the window's event ids, per
 * tenant. The comparison is skipped.ts's.
 */
import { DLQ_HEADERS } from '../adapters/dlq/dead-letter.js';
import { parseRecord } from '../adapters/events/envelope.js';
import type { Kafka } from '../adapters/kafka/client.js';
import { headerString, type ConsumedRecord } from '../adapters/kafka/records.js';
import type { Db } from '../adapters/store/db.js';
import { ledgerHolds } from './store-reader.js';
import { positionKey, type RecordVerdict, type SeenRecord } from './skipped.js';
import { planWindow, readWindow, withAdmin } from './topic-window.js';
import type { Unseen } from './mismatch.js';

export interface TopicSide {
  records: SeenRecord[];
  /** Per partition of the orders topic, the offset the read stopped at (the committed offset or `until`'s). */
  readTo: Map<number, bigint>;
  deadLettered: Set<string>;
  unseen: Unseen[];
  notes: string[];
}

interface Window {
  since: Date;
  until: Date;
}

/** Where an earlier read of the orders topic stopped, per partition, and how far back a partition may be read. */
export interface TopicResume {
  floor: Date;
  offsets: ReadonlyMap<number, bigint>;
}

/** The edge's verdict on one record (never throws). */
export function verdictOf(record: ConsumedRecord): RecordVerdict {
  try {
    const parsed = parseRecord({ value: record.value, headers: record.headers });
    if (parsed.kind !== 'order-event') return { kind: 'unknown-type', type: parsed.type };
    const e = parsed.event;
    return { kind: 'event', tenantId: e.tenantId, orderId: e.orderId, eventId: e.eventId, type: e.type };
  } catch (err) {
    return { kind: 'malformed', reason: (err as Error).message.slice(0, 200), ...identify(record.value) };
  }
}

/** Best effort: the ids a malformed record still names, to say whose it was. */
function identify(value: Buffer | null): { tenantId?: string; orderId?: string } {
  if (value === null || value.length > 1024 * 1024) return {};
  try {
    const o = JSON.parse(value.toString()) as Record<string, unknown>;
    const pick = (k: string) => (typeof o?.[k] === 'string' ? (o[k] as string).slice(0, 64) : undefined);
    return { tenantId: pick('tenantId'), orderId: pick('orderId') };
  } catch {
    return {};
  }
}

/**
 * The window of the orders topic below `group`'s committed offsets, and the dead letters written since it began.
 * `tenants`, when given, keeps only their records (a malformed record naming no tenant is kept for every tenant).
 * `resume`, when given, reads each partition it names from where an earlier read stopped, whatever the records' times
 * (a partition that lagged, records an offset move skipped), back to its floor at the most; the dead letters then from
 * the floor (they are few).
 */
export async function readTopicSide(
  kafka: Kafka,
  q: {
    ordersTopic: string;
    dlqTopic: string;
    group: string;
    window: Window;
    tenants?: ReadonlySet<string>;
    resume?: TopicResume;
  },
  opts: { clientId: string; signal?: AbortSignal },
): Promise<TopicSide> {
  const side: TopicSide = { records: [], readTo: new Map(), deadLettered: new Set(), unseen: [], notes: [] };
  const window = q.resume ? { since: q.resume.floor, until: q.window.until } : q.window;
  const { orders, dlq } = await withAdmin(kafka, async (admin) => {
    const committed = await admin.groupOffsets(q.group, q.ordersTopic);
    const ordersPlan = await planWindow(
      admin,
      q.ordersTopic,
      window,
      (partition, untilOffset) => {
        const c = committed.get(partition) ?? 0n;
        return c < untilOffset ? c : untilOffset;
      },
      q.resume?.offsets,
    );
    const dlqPlan = await planWindow(admin, q.dlqTopic, window, (_p, _u, high) => high);
    return { orders: { ...ordersPlan, committed }, dlq: dlqPlan };
  });
  for (const r of orders.ranges) side.readTo.set(r.partition, r.end);
  const uncommitted = orders.ranges.filter((r) => !orders.committed.has(r.partition)).map((r) => r.partition);
  if (uncommitted.length > 0)
    side.notes.push(
      `partition(s) ${uncommitted.join(', ')}: group ${q.group} has committed nothing there, so nothing is below its offset`,
    );
  for (const p of orders.gone)
    side.unseen.push({
      check: 'skipped',
      what: `partition ${p} of ${q.ordersTopic} no longer holds its oldest records (topic retention): those of the window cannot be seen`,
    });
  for (const p of dlq.gone)
    side.unseen.push({
      check: 'skipped',
      what: `partition ${p} of ${q.dlqTopic} no longer holds its oldest dead letters: a record dead-lettered then cannot be matched`,
    });
  await readWindow(
    kafka,
    q.ordersTopic,
    orders.ranges,
    ({ partition, record }) => {
      const verdict = verdictOf(record);
      const tenant = verdict.kind === 'unknown-type' ? undefined : verdict.tenantId;
      if (q.tenants && tenant !== undefined && !q.tenants.has(tenant)) return;
      side.records.push({ partition, offset: BigInt(record.offset), timestamp: Number(record.timestamp), verdict });
    },
    opts,
  );
  await readWindow(
    kafka,
    q.dlqTopic,
    dlq.ranges,
    ({ record }) => {
      const topic = headerString(record.headers, DLQ_HEADERS.topic);
      const partition = headerString(record.headers, DLQ_HEADERS.partition);
      const offset = headerString(record.headers, DLQ_HEADERS.offset);
      if (topic === q.ordersTopic && partition !== undefined && offset !== undefined)
        side.deadLettered.add(positionKey(topic, Number(partition), offset));
    },
    opts,
  );
  return side;
}

/** The ledger's claims of the records' event ids, as `tenant\n eventId` keys. */
export async function ledgerClaims(db: Db, records: readonly SeenRecord[]): Promise<Set<string>> {
  const byTenant = new Map<string, string[]>();
  for (const r of records) {
    if (r.verdict.kind !== 'event') continue;
    const ids = byTenant.get(r.verdict.tenantId) ?? [];
    ids.push(r.verdict.eventId);
    byTenant.set(r.verdict.tenantId, ids);
  }
  const held = new Set<string>();
  for (const [tenantId, ids] of byTenant)
    for (const id of await ledgerHolds(db, tenantId, ids)) held.add(claimKey(tenantId, id));
  return held;
}

export function claimKey(tenantId: string, eventId: string): string {
  return `${tenantId}\n${eventId}`;
}
