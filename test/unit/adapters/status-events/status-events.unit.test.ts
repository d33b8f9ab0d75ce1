/**
 * The status events the store writes, decided and built without a database: which committed changes are events, their
 * deterministic ids, their cause and correlation, and every event valid against the published JSON Schema
 * (docs/schema/fulfilment-status.v1.schema.json), with nothing personal in it.
 */
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  buildStatusEvent,
  EVENT_OF_STATUS,
  STATUS_EVENT,
  statusEventId,
  statusEventKey,
  statusEventType,
  type ChangedRow,
  type StatusEvent,
} from '../../../../src/adapters/status-events/event.js';

const read = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../../../docs/schema/${name}`, import.meta.url), 'utf8'));
const validate = new Ajv2020({ allErrors: true }).compile(read('fulfilment-status.v1.schema.json') as object);
const valid = (e: unknown) => (validate(e) ? [] : validate.errors);

const at = (s: number) => new Date(Date.UTC(2026, 10, 30, 9, 15, s, 481));
const row = (over: Partial<ChangedRow> = {}): ChangedRow => ({
  tenant_id: 'acme',
  order_id: 'ord-10042',
  order_version: 1,
  status: 'pending',
  placed_at: at(0),
  cancel_refused_at: null,
  shipment_id: null,
  last_event_id: 'evt-placed-1',
  retry_count: 0,
  updated_at: at(0),
  correlation_id: 'checkout-7f3a9c',
  recall_failures: 0,
  ...over,
});
const change = (
  claimKey: string,
  over: { causationId?: string; correlationId?: string; traceparent?: string } = {},
) => ({ topic: 'fulfilment.status', claimKey, ...over });

describe('which committed changes are status events', () => {
  const pending = row();
  it.each([
    ['a placement (a new pending row)', undefined, pending, undefined],
    [
      "a cancellation's tombstone (cancelled before placement)",
      undefined,
      row({ status: 'cancelled', placed_at: null }),
      STATUS_EVENT.cancelled,
    ],
    ['pending → shipped', pending, row({ status: 'shipped', shipment_id: 'shp-1' }), STATUS_EVENT.shipped],
    ['pending → cancelled', pending, row({ status: 'cancelled', order_version: 2 }), STATUS_EVENT.cancelled],
    [
      'failed → cancelled (a late cancellation of a held order)',
      row({ status: 'failed' }),
      row({ status: 'cancelled', order_version: 2 }),
      STATUS_EVENT.cancelled,
    ],
    ['pending → failed', pending, row({ status: 'failed' }), STATUS_EVENT.failed],
    ['failed → pending (an operator retry)', row({ status: 'failed' }), row({ retry_count: 1 }), STATUS_EVENT.reopened],
    [
      'a cancellation refused after shipment',
      row({ status: 'shipped' }),
      row({ status: 'shipped', cancel_refused_at: at(5), order_version: 2 }),
      STATUS_EVENT.cancellationRefused,
    ],
    [
      'a second refused cancellation (a newer refusal)',
      row({ status: 'shipped', cancel_refused_at: at(5) }),
      row({ status: 'shipped', cancel_refused_at: at(9), order_version: 3 }),
      STATUS_EVENT.cancellationRefused,
    ],
    [
      'the placement a tombstone waited for (still cancelled)',
      row({ status: 'cancelled', placed_at: null }),
      row({ status: 'cancelled' }),
      undefined,
    ],
    ['a newer placement version while pending', pending, row({ order_version: 2 }), undefined],
    [
      'a newer cancellation of a cancelled order',
      row({ status: 'cancelled' }),
      row({ status: 'cancelled', order_version: 3 }),
      undefined,
    ],
    [
      'cancelled → recall-failed (the warehouse refused the recall)',
      row({ status: 'cancelled', order_version: 2 }),
      row({ status: 'recall-failed', order_version: 2, recall_failures: 1 }),
      STATUS_EVENT.needsAttention,
    ],
    [
      'a second refused recall (still recall-failed)',
      row({ status: 'recall-failed', recall_failures: 1 }),
      row({ status: 'recall-failed', recall_failures: 2 }),
      undefined,
    ],
    [
      'recall-failed → cancelled (an operator resolved it)',
      row({ status: 'recall-failed', recall_failures: 1 }),
      row({ status: 'cancelled', recall_failures: 1 }),
      STATUS_EVENT.cancelled,
    ],
  ] as const)('%s', (_what, before, after, expected) => {
    expect(statusEventType(before, after)).toBe(expected);
  });

  it('every stored status names the event a move to it is (a new status is one line in EVENT_OF_STATUS)', () => {
    expect(EVENT_OF_STATUS).toEqual({
      shipped: 'fulfilment.Shipped',
      cancelled: 'fulfilment.Cancelled',
      failed: 'fulfilment.Failed',
      pending: 'fulfilment.Reopened',
      'recall-failed': 'fulfilment.NeedsAttention',
    });
  });
});

describe('event ids', () => {
  it('are the same for the same change, whatever else differs (time, version, trace)', () => {
    const a = buildStatusEvent(
      STATUS_EVENT.shipped,
      row({ status: 'shipped', shipment_id: 'shp-1', updated_at: at(1) }),
      change('shipped/acme/ord-10042'),
    );
    const b = buildStatusEvent(
      STATUS_EVENT.shipped,
      row({ status: 'shipped', shipment_id: 'shp-1', updated_at: at(7), order_version: 4 }),
      change('shipped/acme/ord-10042', { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }),
    );
    expect(a.eventId).toBe(b.eventId);
    expect(a.eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('differ between tenants, types and claims (the same event id in two tenants never collides)', () => {
    const ids = [
      statusEventId('acme', STATUS_EVENT.cancelled, 'evt-1'),
      statusEventId('globex', STATUS_EVENT.cancelled, 'evt-1'),
      statusEventId('acme', STATUS_EVENT.cancellationRefused, 'evt-1'),
      statusEventId('acme', STATUS_EVENT.cancelled, 'evt-2'),
      statusEventId('acme', STATUS_EVENT.failed, 'failed/acme/o-1'),
      statusEventId('acme', STATUS_EVENT.failed, 'failed/acme/o-1/1'),
    ];
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("the documented example's id is the one its change gets", () => {
    const example = read('fulfilment-status.v1.example.json') as StatusEvent;
    expect(example.eventId).toBe(
      statusEventId(example.tenantId, example.type, `shipped/${example.tenantId}/${example.orderId}`),
    );
    expect(valid(example)).toEqual([]);
  });
});

describe('cause and correlation', () => {
  it('an input event causes what it changes and carries its own correlation id', () => {
    const e = buildStatusEvent(
      STATUS_EVENT.cancelled,
      row({ status: 'cancelled', order_version: 2 }),
      change('evt-cancel', { causationId: 'evt-cancel', correlationId: 'support-ticket-9' }),
    );
    expect(e).toMatchObject({
      causationId: 'evt-cancel',
      correlationId: 'support-ticket-9',
      data: { cancelledBeforePlacement: false },
    });
  });

  it("a shipment is caused by the event the row last applied, and correlates on the order's id", () => {
    const e = buildStatusEvent(
      STATUS_EVENT.shipped,
      row({ status: 'shipped', shipment_id: 'shp-1' }),
      change('shipped/acme/ord-10042'),
    );
    expect(e).toMatchObject({
      causationId: 'evt-placed-1',
      correlationId: 'checkout-7f3a9c',
      data: { shipmentId: 'shp-1' },
    });
  });

  it('after an operator retry, the retry is the cause of what follows; without any correlation id the cause is used', () => {
    const after = row({ status: 'failed', retry_count: 2, correlation_id: null });
    const e = buildStatusEvent(STATUS_EVENT.failed, after, change('failed/acme/ord-10042/2'));
    expect(e).toMatchObject({
      causationId: 'retry/acme/ord-10042/2',
      correlationId: 'retry/acme/ord-10042/2',
      data: {},
    });
    const reopened = buildStatusEvent(
      STATUS_EVENT.reopened,
      row({ retry_count: 1 }),
      change('retry/acme/ord-10042/1', { causationId: 'retry/acme/ord-10042/1' }),
    );
    expect(reopened).toMatchObject({ causationId: 'retry/acme/ord-10042/1', data: { retry: 1 } });
  });

  it('a refused recall is caused by the cancellation that asked for it; its operator resolution by the resolve action', () => {
    const held = row({
      status: 'recall-failed',
      order_version: 2,
      last_event_id: 'evt-cancel',
      retry_count: 1,
      recall_failures: 1,
    });
    const e = buildStatusEvent(STATUS_EVENT.needsAttention, held, change('recall-failed/acme/ord-10042/1'));
    expect(e).toMatchObject({
      causationId: 'evt-cancel',
      status: 'recall-failed',
      data: { attention: 'recall-refused', recallRefusals: 1 },
    });
    const resolved = buildStatusEvent(
      STATUS_EVENT.cancelled,
      { ...held, status: 'cancelled' },
      change('resolve/acme/ord-10042/1', { causationId: 'resolve/acme/ord-10042/1' }),
    );
    expect(resolved).toMatchObject({
      type: 'fulfilment.Cancelled',
      causationId: 'resolve/acme/ord-10042/1',
      data: { cancelledBeforePlacement: false },
    });
  });

  it('the record key is <tenant>/<order>', () => {
    expect(statusEventKey('acme', 'ord-10042')).toBe('acme/ord-10042');
  });
});

describe('the events against the published schema', () => {
  const cases: [string, ChangedRow | undefined, ChangedRow, ReturnType<typeof change>][] = [
    ['tombstone', undefined, row({ status: 'cancelled', placed_at: null }), change('evt-c', { causationId: 'evt-c' })],
    ['shipped', row(), row({ status: 'shipped', shipment_id: 'shp-9' }), change('shipped/acme/ord-10042')],
    ['failed', row(), row({ status: 'failed' }), change('failed/acme/ord-10042')],
    [
      'reopened',
      row({ status: 'failed' }),
      row({ retry_count: 1 }),
      change('retry/acme/ord-10042/1', { causationId: 'retry/acme/ord-10042/1' }),
    ],
    [
      'refused',
      row({ status: 'shipped' }),
      row({ status: 'shipped', cancel_refused_at: at(3), order_version: 2 }),
      change('evt-late', { causationId: 'evt-late' }),
    ],
    [
      'needs attention',
      row({ status: 'cancelled' }),
      row({ status: 'recall-failed', recall_failures: 1 }),
      change('recall-failed/acme/ord-10042/1'),
    ],
    [
      'resolved',
      row({ status: 'recall-failed', recall_failures: 1 }),
      row({ status: 'cancelled', recall_failures: 1 }),
      change('resolve/acme/ord-10042/1', { causationId: 'resolve/acme/ord-10042/1' }),
    ],
  ];
  it.each(cases)('%s: valid, and nothing but ids, status, versions and times', (_what, before, after, ctx) => {
    const type = statusEventType(before, after)!;
    const e = buildStatusEvent(type, after, ctx);
    expect(valid(e)).toEqual([]);
    expect(valid(JSON.parse(JSON.stringify(e)))).toEqual([]);
    expect(Object.keys(e).sort()).toEqual([
      'causationId',
      'correlationId',
      'data',
      'eventId',
      'occurredAt',
      'orderId',
      'orderVersion',
      'schemaVersion',
      'status',
      'tenantId',
      'type',
    ]);
    expect(e.occurredAt).toBe(after.updated_at.toISOString());
  });

  it('refuses what a consumer must never see: a personal field, an unknown type', () => {
    const e = buildStatusEvent(
      STATUS_EVENT.shipped,
      row({ status: 'shipped', shipment_id: 'shp-9' }),
      change('shipped/acme/ord-10042'),
    );
    expect(valid({ ...e, data: { ...e.data, customerId: 'cust-1' } })).not.toEqual([]);
    expect(valid({ ...e, type: 'fulfilment.Teleported' })).not.toEqual([]);
  });
});
