import { describe, expect, it } from 'vitest';
import { kinds } from '../../support/reconcile.js';
import {
  compareStatus,
  expectedEvents,
  type OutboxSeen,
  type StatusInputs,
  type StatusRow,
} from '../../../src/reconcile/status.js';

const NOW = Date.parse('2026-03-10T12:00:00Z');
const DAY = 86_400_000;

function row(order: string, status: StatusRow['status'], over: Partial<StatusRow> = {}): StatusRow {
  return {
    tenant_id: 't1',
    order_id: order,
    status,
    retry_count: 0,
    cancel_refused_at: null,
    updated_at: new Date(NOW - 60_000),
    ...over,
  };
}

function entry(order: string, type: string, sentAt: Date | null = new Date(NOW - 30_000)): OutboxSeen {
  return {
    id: `${order}-${type}`,
    topic: 'status',
    tenantId: 't1',
    orderId: order,
    eventId: `ev-${order}-${type}`,
    type,
    createdAt: new Date(NOW - 60_000),
    sentAt,
  };
}

function inputs(rows: StatusRow[], outbox: OutboxSeen[], over: Partial<StatusInputs> = {}): StatusInputs {
  return {
    rows,
    outbox,
    statusTopic: 'status',
    onTopic: new Set(outbox.map((e) => e.eventId)),
    topicFromMs: NOW - 3_600_000,
    outboxHorizonMs: NOW - 7 * DAY,
    outboxRetention: 'STATUS_OUTBOX_RETENTION_DAYS=7',
    ...over,
  };
}

describe('status: the store against the outbox against the status topic', () => {
  it('what a row says its order must have published', () => {
    expect(expectedEvents(row('a', 'pending'))).toEqual([]);
    expect(expectedEvents(row('a', 'pending', { retry_count: 1 }))).toEqual(['fulfilment.Reopened']);
    expect(expectedEvents(row('a', 'shipped', { cancel_refused_at: new Date(NOW) }))).toEqual([
      'fulfilment.Shipped',
      'fulfilment.CancellationRefused',
    ]);
    expect(expectedEvents(row('a', 'recall-failed'))).toEqual(['fulfilment.NeedsAttention']);
  });

  it('a change without its outbox entry is status-unpublished, naming what the outbox has', () => {
    const r = compareStatus(
      inputs(
        [row('ok', 'shipped'), row('missing', 'cancelled')],
        [entry('ok', 'fulfilment.Shipped'), entry('missing', 'fulfilment.Failed')],
      ),
    );
    expect(kinds(r)).toEqual(['status-unpublished missing']);
    expect(r.mismatches[0]!.sides[1]).toEqual({
      source: 'outbox',
      state: 'no fulfilment.Cancelled (has fulfilment.Failed)',
    });
  });

  it('an entry marked sent that is not on the topic is status-missing-on-topic; unsent entries are lag', () => {
    const sent = entry('a', 'fulfilment.Shipped');
    const unsent = entry('b', 'fulfilment.Shipped', null);
    const r = compareStatus(inputs([], [sent, unsent], { onTopic: new Set() }));
    expect(kinds(r)).toEqual(['status-missing-on-topic a']);
    expect(r.mismatches[0]!.at).toBe('ev-a-fulfilment.Shipped');
    expect(r.notes).toEqual(["1 outbox entr(ies) not sent yet: the relay's lag"]);
  });

  it("entries of another topic, or sent before the topic's window, are not compared with it", () => {
    const other = { ...entry('a', 'fulfilment.Shipped'), topic: 'elsewhere' };
    const early = entry('b', 'fulfilment.Shipped', new Date(NOW - 2 * 3_600_000));
    expect(kinds(compareStatus(inputs([], [other, early], { onTopic: new Set() })))).toEqual([]);
  });

  it('a change older than the outbox retention without its entry cannot be seen', () => {
    const r = compareStatus(inputs([row('old', 'shipped', { updated_at: new Date(NOW - 8 * DAY) })], []));
    expect(r.mismatches).toEqual([]);
    expect(r.unseen[0]!.what).toContain('STATUS_OUTBOX_RETENTION_DAYS=7');
  });
});
