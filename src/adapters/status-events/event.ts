/**
 * Which committed changes of a fulfilments row are status events, and the event each one is (the output contract,
 * docs/schema/fulfilment-status.v1.schema.json). Pure: the store calls it with the row before and after a change, in
 * the change's transaction (src/adapters/status-events/outbox.ts), and the tests call it alone.
 *
 * Rules a reader must not break: the event id depends only on the change (tenant, type and the claim key of the
 * transaction that made it), never on a clock or a counter, so the same change always has the same id; and nothing
 * personal goes into an event (no customer id, address, lines or free text: ids, status and versions only).
 */
import { v5 as uuidv5 } from 'uuid';
import type { FulfilmentRow } from '../../vocabulary/order.js';

/** The status events this service publishes, by name. */
export const STATUS_EVENT = {
  shipped: 'fulfilment.Shipped',
  cancelled: 'fulfilment.Cancelled',
  failed: 'fulfilment.Failed',
  reopened: 'fulfilment.Reopened',
  cancellationRefused: 'fulfilment.CancellationRefused',
  needsAttention: 'fulfilment.NeedsAttention',
} as const;
export type StatusEventType = (typeof STATUS_EVENT)[keyof typeof STATUS_EVENT];

/** The version of the event's schema this code writes. */
export const STATUS_EVENT_SCHEMA_VERSION = 1;

/**
 * The event a move *to* each stored status is. A new status is one line here; the type makes every status name its
 * event. `pending` is reached by a change only from `failed` (the store's guard), so a move to it is always a
 * reopening. `recall-failed` (a cancelled order whose shipment the warehouse refused to recall) needs a person; an
 * operator's resolution of it moves the order to `cancelled`, a Cancelled event caused by that action.
 */
export const EVENT_OF_STATUS: Record<FulfilmentRow['status'], StatusEventType> = {
  shipped: STATUS_EVENT.shipped,
  cancelled: STATUS_EVENT.cancelled,
  failed: STATUS_EVENT.failed,
  pending: STATUS_EVENT.reopened,
  'recall-failed': STATUS_EVENT.needsAttention,
};

/** Fixed namespace of the events' UUIDv5 ids (generated once for this service; never change it). */
export const STATUS_EVENT_ID_NAMESPACE = '0ca0a072-92f5-45ad-baaf-3f98db8d6c1b';

/**
 * The event id of the change claimed as `claimKey` in `tenantId`'s ledger that made an event of `type`. A tenant id
 * holds no `/` (ID_PATTERN) and a type none either, so the name reads back unambiguously.
 */
export function statusEventId(tenantId: string, type: StatusEventType, claimKey: string): string {
  return uuidv5(`${tenantId}/${type}/${claimKey}`, STATUS_EVENT_ID_NAMESPACE);
}

/** What the transaction that commits a change knows of it: where its event goes, and what made it. */
export interface ChangeContext {
  /** The topic the change's event is published to (STATUS_TOPIC). */
  topic: string;
  /** The key the transaction claimed in processed_events: the input event's id, `shipped/<t>/<o>`, `retry/<t>/<o>/<n>`, … */
  claimKey: string;
  /** The input event or operator action behind the change; absent: the row's (see causationOf). */
  causationId?: string;
  /** The input event's correlation id, where one carried it; absent: the order's, else the causation id. */
  correlationId?: string;
  /** W3C trace context of the work that committed the change (absent while tracing is off). */
  traceparent?: string;
}

/** The `data` of an event: the few facts of its type a consumer needs, none of them personal. */
export interface StatusEventData {
  /** Shipped: the warehouse's shipment id. */
  shipmentId?: string;
  /** Cancelled: true when the cancellation arrived before any placement (nothing was ever placed). */
  cancelledBeforePlacement?: boolean;
  /** Reopened: which operator retry of the order it is, from 1. */
  retry?: number;
  /** NeedsAttention: why a person is needed (`recall-refused`: the warehouse refused to recall a cancelled order's shipment). */
  attention?: 'recall-refused';
  /** NeedsAttention for a refused recall: how many recalls the warehouse refused for good so far. */
  recallRefusals?: number;
}

/** One status event, the value of one `fulfilment.status` record. */
export interface StatusEvent {
  eventId: string;
  type: StatusEventType;
  schemaVersion: typeof STATUS_EVENT_SCHEMA_VERSION;
  /** RFC 3339: when the store committed the change (the transaction's time, as the row's updated_at). */
  occurredAt: string;
  tenantId: string;
  orderId: string;
  orderVersion: number;
  status: FulfilmentRow['status'];
  causationId: string;
  correlationId: string;
  data: StatusEventData;
}

/** The row fields a status event is made of. */
export type ChangedRow = Pick<
  FulfilmentRow,
  | 'tenant_id'
  | 'order_id'
  | 'order_version'
  | 'status'
  | 'placed_at'
  | 'cancel_refused_at'
  | 'shipment_id'
  | 'last_event_id'
  | 'retry_count'
  | 'updated_at'
  | 'correlation_id'
  | 'recall_failures'
>;

/**
 * The event a committed change is, or undefined when it is none: a new row that is a cancellation's tombstone
 * (cancelled before placement), a move to another status, or a cancellation refused after shipment (a new refusal
 * time). A new pending row (a placement), a placement filling in a tombstone, a newer version that leaves the status
 * as it was: no event.
 */
export function statusEventType(before: ChangedRow | undefined, after: ChangedRow): StatusEventType | undefined {
  if (!before) return after.status === 'cancelled' ? STATUS_EVENT.cancelled : undefined;
  if (before.status !== after.status) return EVENT_OF_STATUS[after.status];
  const refusedAt = after.cancel_refused_at?.getTime();
  if (refusedAt !== undefined && refusedAt !== before.cancel_refused_at?.getTime())
    return STATUS_EVENT.cancellationRefused;
  return undefined;
}

/** The operator action of retry `n` of an order: the claim its reopening made. */
export function retryActionId(tenantId: string, orderId: string, n: number): string {
  return `retry/${tenantId}/${orderId}/${n}`;
}

/** The operator action that resolves an order's `n`th refused recall: the claim its resolution made. */
export function resolveActionId(tenantId: string, orderId: string, n: number): string {
  return `resolve/${tenantId}/${orderId}/${n}`;
}

/**
 * The cause of a change the transaction did not name: for a refused recall, the input event the row last applied (the
 * cancellation that asked for the recall); else the operator retry that re-drove the order when there was one (a
 * shipment or failure after `retry n`), else the input event the row last applied (its placement, for a shipment).
 */
export function causationOf(cause: ChangeContext, after: ChangedRow): string {
  if (cause.causationId !== undefined) return cause.causationId;
  if (after.status === 'recall-failed') return after.last_event_id;
  return after.retry_count > 0
    ? retryActionId(after.tenant_id, after.order_id, after.retry_count)
    : after.last_event_id;
}

function dataOf(type: StatusEventType, after: ChangedRow): StatusEventData {
  if (type === STATUS_EVENT.shipped && after.shipment_id !== null) return { shipmentId: after.shipment_id };
  if (type === STATUS_EVENT.cancelled) return { cancelledBeforePlacement: after.placed_at === null };
  if (type === STATUS_EVENT.reopened) return { retry: after.retry_count };
  if (type === STATUS_EVENT.needsAttention)
    return { attention: 'recall-refused', recallRefusals: after.recall_failures };
  return {};
}

/** The event of a change of `type` to `after`, made by `cause`. */
export function buildStatusEvent(type: StatusEventType, after: ChangedRow, cause: ChangeContext): StatusEvent {
  const causationId = causationOf(cause, after);
  return {
    eventId: statusEventId(after.tenant_id, type, cause.claimKey),
    type,
    schemaVersion: STATUS_EVENT_SCHEMA_VERSION,
    occurredAt: after.updated_at.toISOString(),
    tenantId: after.tenant_id,
    orderId: after.order_id,
    orderVersion: after.order_version,
    status: after.status,
    causationId,
    correlationId: cause.correlationId ?? after.correlation_id ?? causationId,
    data: dataOf(type, after),
  };
}

/** The record key of an order's events: every event of one order lands on one partition, in order. */
export function statusEventKey(tenantId: string, orderId: string): string {
  return `${tenantId}/${orderId}`;
}
