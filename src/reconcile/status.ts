/**
 * `status-unpublished` and `status-missing-on-topic`: the store against the status outbox against the status topic.
 * Pure: status-sources.ts reads the three, this compares them.
 *
 * - Every status change the store committed wrote its event into the outbox in the same transaction
 *   (src/adapters/status-events/outbox.ts recordStatusChange; which change is which event:
 *   src/adapters/status-events/event.ts). The row as it stands says which events its order must have had: the event of
 *   its status (EVENT_OF_STATUS; a pending row only after a retry reopened it), and CancellationRefused once a
 *   cancellation was refused. An order whose outbox lacks one — `status-unpublished`.
 * - Every outbox entry the relay marked sent is on the status topic (read back by time window) — else
 *   `status-missing-on-topic`.
 *
 * Rule a reader must not break: sent entries are pruned after STATUS_OUTBOX_RETENTION_DAYS, so an order that changed
 * before that horizon and lacks its entry cannot be judged: the check says it cannot see it.
 */
import { EVENT_OF_STATUS, STATUS_EVENT, type StatusEventType } from '../adapters/status-events/event.js';
import type { FulfilmentRow } from '../vocabulary/order.js';
import { emptyResult, orderKey, type CheckResult } from './mismatch.js';

export type StatusRow = Pick<
  FulfilmentRow,
  'tenant_id' | 'order_id' | 'status' | 'retry_count' | 'cancel_refused_at' | 'updated_at'
>;

/** One outbox row, as the check reads it. */
export interface OutboxSeen {
  id: string;
  topic: string;
  tenantId: string;
  orderId: string;
  eventId: string;
  type: string;
  createdAt: Date;
  sentAt: Date | null;
}

export interface StatusInputs {
  /** The orders the store changed in the window. */
  rows: readonly StatusRow[];
  /** The outbox rows of those orders, and every outbox row sent in the window. */
  outbox: readonly OutboxSeen[];
  /** The status topic compared (STATUS_TOPIC); rows of another topic are another relay's. */
  statusTopic: string;
  /** Event ids read back from the status topic, from `topicFromMs` on. */
  onTopic: ReadonlySet<string>;
  /** Sent rows sent at or after this (ms) are compared with the topic. */
  topicFromMs: number;
  /** Changes older than this (ms) may have lost their sent entry to the outbox's retention. */
  outboxHorizonMs: number;
  /** Retention named in the report (`STATUS_OUTBOX_RETENTION_DAYS=7`). */
  outboxRetention: string;
}

/** The status events the row says its order must have had. */
export function expectedEvents(row: StatusRow): StatusEventType[] {
  const expected: StatusEventType[] = [];
  if (row.status !== 'pending' || row.retry_count > 0) expected.push(EVENT_OF_STATUS[row.status]);
  if (row.cancel_refused_at !== null) expected.push(STATUS_EVENT.cancellationRefused);
  return expected;
}

/** Compares the rows with the outbox and the sent entries with the topic. */
export function compareStatus(input: StatusInputs): CheckResult {
  const result = emptyResult('status');
  const typesOf = new Map<string, Set<string>>();
  for (const e of input.outbox) {
    const key = orderKey(e.tenantId, e.orderId);
    typesOf.set(key, (typesOf.get(key) ?? new Set()).add(e.type));
  }
  let beyondHorizon = 0;
  for (const row of input.rows) {
    result.compared += 1;
    const have = typesOf.get(orderKey(row.tenant_id, row.order_id)) ?? new Set<string>();
    const missing = expectedEvents(row).filter((t) => !have.has(t));
    if (missing.length === 0) continue;
    if (row.updated_at.getTime() < input.outboxHorizonMs) {
      beyondHorizon += 1;
      continue;
    }
    result.mismatches.push({
      kind: 'status-unpublished',
      tenantId: row.tenant_id,
      orderId: row.order_id,
      sides: [
        { source: 'store', state: `${row.status} since ${row.updated_at.toISOString()}` },
        { source: 'outbox', state: `no ${missing.join(', ')} (has ${[...have].join(', ') || 'none'})` },
      ],
    });
  }
  let unsent = 0;
  for (const e of input.outbox) {
    if (e.topic !== input.statusTopic) continue;
    if (e.sentAt === null) {
      unsent += 1;
      continue;
    }
    if (e.sentAt.getTime() < input.topicFromMs) continue;
    result.compared += 1;
    if (input.onTopic.has(e.eventId)) continue;
    result.mismatches.push({
      kind: 'status-missing-on-topic',
      tenantId: e.tenantId,
      orderId: e.orderId,
      at: e.eventId,
      sides: [
        { source: 'outbox', state: `${e.type} row ${e.id} sent ${e.sentAt.toISOString()}` },
        { source: 'status topic', state: `no record with eventId ${e.eventId}` },
      ],
    });
  }
  if (beyondHorizon > 0)
    result.unseen.push({
      check: 'status',
      what:
        `${beyondHorizon} order(s) changed before the outbox's retention horizon (${input.outboxRetention}, ` +
        `${new Date(input.outboxHorizonMs).toISOString()}) lack an entry that pruning may have removed`,
    });
  if (unsent > 0) result.notes.push(`${unsent} outbox entr(ies) not sent yet: the relay's lag`);
  return result;
}
