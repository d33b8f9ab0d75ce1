/**
 * The order's vocabulary: its events and lines, its statuses, what the store holds of it, the failure types that cross
 * the activity boundary, an event's outcome, and the rules an id or an operator's words must meet. The bottom of the
 * product: the edge (src/adapters/events), the store, the warehouse client, the activities, the workflows and the CLI
 * all speak it, and it imports nothing — no Temporal, no I/O — so the workflow bundle and a command's option check can
 * both load it.
 */

/**
 * The event types the fulfilment consumer acts on, each with what its `data` holds; every other type is ignored and
 * counted. Adding a type starts here: the compiler then names each place that must handle it (docs/how-it-works.md,
 * "Adding an event type").
 */
export interface OrderEventData {
  'orders.OrderPlaced': OrderPlacedData;
  'orders.OrderCancelled': OrderCancelledData;
}
export type OrderEventType = keyof OrderEventData;
export const ORDER_PLACED = 'orders.OrderPlaced' satisfies OrderEventType;
export const ORDER_CANCELLED = 'orders.OrderCancelled' satisfies OrderEventType;

/** What each handled type is called in words (notes, reasons); also the set the edge looks a record's type up in. */
const EVENT_NOUNS = {
  [ORDER_PLACED]: 'placement',
  [ORDER_CANCELLED]: 'cancellation',
} satisfies Record<OrderEventType, string>;

/** The handled types, in the order they are listed above. */
export const ORDER_EVENT_TYPES = Object.keys(EVENT_NOUNS) as readonly OrderEventType[];

/** True when `type` names an event type this service acts on. */
export function isOrderEventType(type: unknown): type is OrderEventType {
  return typeof type === 'string' && Object.hasOwn(EVENT_NOUNS, type);
}

/** The handled type in words: `placement`, `cancellation`. */
export function eventNoun(type: OrderEventType): string {
  return EVENT_NOUNS[type];
}

/** Consumer name under which every effect is claimed in `processed_events`. */
export const CONSUMER_NAME = 'fulfilment';

export interface OrderLine {
  sku: string;
  quantity: number;
}

export interface OrderPlacedData {
  customerId: string;
  lines: OrderLine[];
  shippingAddress?: Record<string, unknown>;
}

export interface OrderCancelledData {
  reason?: string;
}

/** Where a record came from on Kafka; carried for logs and for the dead-letter headers. */
export interface EventOrigin {
  topic: string;
  partition: number;
  offset: string;
  /** Kafka timestamp of the record, epoch milliseconds as a string; absent on events recorded before it was carried. */
  timestamp?: string;
}

interface EventBase {
  eventId: string;
  schemaVersion: number;
  /** RFC 3339 timestamp of the fact at the producer. */
  occurredAt: string;
  tenantId: string;
  orderId: string;
  orderVersion: number;
  correlationId?: string;
  origin?: EventOrigin;
}

/** A validated event of one type. */
export type OrderEventOf<T extends OrderEventType> = EventBase & { type: T; data: OrderEventData[T] };

/** A validated order event as the bridge hands it to the workflow: unknown fields already dropped. */
export type OrderEvent = { [T in OrderEventType]: OrderEventOf<T> }[OrderEventType];

/** The ids every log line about an event carries (with its attempt): which event, of which order, in which chain. */
export function eventIds(
  event: Pick<OrderEvent, 'eventId' | 'type' | 'orderVersion' | 'correlationId' | 'tenantId' | 'orderId'>,
): { eventId: string; type: string; orderVersion: number; correlationId?: string; tenantId: string; orderId: string } {
  return {
    eventId: event.eventId,
    type: event.type,
    orderVersion: event.orderVersion,
    correlationId: event.correlationId,
    tenantId: event.tenantId,
    orderId: event.orderId,
  };
}

/**
 * Order status as stored in `fulfilments.status` and shown in the OrderStatus search attribute (which also says
 * `waiting` while a pending order's shipment waits for the warehouse).
 * `awaiting-placement` is the tombstone of a cancellation that arrived before its placement. `failed` (the warehouse
 * gave up) and `recall-failed` (cancelled, but the warehouse refused for good to recall its shipment) need a person:
 * `fulfilment order retry` and `fulfilment order resolve`.
 */
export type OrderStatus =
  'new' | 'awaiting-placement' | 'pending' | 'shipped' | 'cancelled' | 'failed' | 'recall-failed';

/** The warehouse idempotency key of an order's shipment: stable across runs, retries and redeliveries. */
export function shipmentKey(tenantId: string, orderId: string): string {
  return `ship/${tenantId}/${orderId}`;
}

/** The tenant of a shipment key made by shipmentKey (ids never hold `/`); undefined for a key of another form. */
export function shipmentKeyTenant(key: string): string | undefined {
  const parts = key.split('/');
  return parts.length === 3 && parts[0] === 'ship' && parts[1] !== '' ? parts[1] : undefined;
}

/** What the store answered about an order after an effect: the truth the workflow adopts. */
export interface StoredOrder {
  outcome: 'applied' | 'duplicate' | 'stale';
  status: StoredStatus;
  orderVersion: number;
  /** False for the tombstone row a cancellation leaves before its placement arrived. */
  placed: boolean;
  cancelRefused: boolean;
  /**
   * The placement as the store holds it after the change (customer, lines, address): what a shipment of the order
   * ships, whatever the event carried (a newer placement of an order that is not pending changes only its version).
   * Absent for a tombstone, and in answers recorded by builds before it was carried (a run then keeps what it had).
   */
  placement?: OrderPlacedData;
  /**
   * This change cancelled an order that was held as failed: its shipment was attempted and may have reached the
   * warehouse, so the run recalls (burns) the order's shipment key. Absent otherwise.
   */
  recall?: true;
}

/** The statuses a `fulfilments` row holds. */
export type StoredStatus = 'pending' | 'shipped' | 'cancelled' | 'failed' | 'recall-failed';

/** An order's row as the store holds it (`fulfilments`, one per tenant and order): what the store reads and returns. */
export interface FulfilmentRow {
  tenant_id: string;
  order_id: string;
  order_version: number;
  status: StoredStatus;
  customer_id: string | null;
  lines: unknown;
  shipping_address: unknown;
  placed_at: Date | null;
  cancelled_at: Date | null;
  cancelled_before_placement: boolean;
  cancel_refused_at: Date | null;
  shipment_id: string | null;
  failure_reason: string | null;
  last_event_id: string;
  created_at: Date;
  updated_at: Date;
  shipped_at: Date | null;
  /** Operator retries of a failed shipment (migration 003). */
  retry_count: number;
  last_retry_reason: string | null;
  last_retried_at: Date | null;
  /** Who asked for the last retry (migration 006). */
  last_retried_by: string | null;
  /** When the order was last held as failed or recall-failed (migration 006). */
  failed_at: Date | null;
  /** Recalls the warehouse refused for good, and the last resolution of one (migration 006). */
  recall_failures: number;
  resolution: string | null;
  resolved_by: string | null;
  resolved_at: Date | null;
  /** The order's correlation id: its placement's, else its first event's (migration 007); null on older rows. */
  correlation_id: string | null;
  /** A pending order waiting for the warehouse: since when, its last wait, why, and when a resumer last woke it (migration 008). */
  waiting_since: Date | null;
  waited_at: Date | null;
  waiting_reason: string | null;
  released_at: Date | null;
  waiting_task_queue: string | null;
}

/**
 * An order as the store holds it, for a run that starts from the store rather than from an event (a repair: see
 * OrderWorkflowInput.repair). No customer data but what the warehouse needs to ship again.
 */
export interface StoredOrderDetail {
  status: StoredStatus;
  orderVersion: number;
  placement?: OrderPlacedData;
  shipmentId?: string;
  failureReason?: string;
  retries: number;
  /** Times the warehouse refused the recall of this order's shipment for good (resolutions count them too). */
  recallFailures: number;
  cancelRefused: boolean;
}

/**
 * Failure types that cross the activity boundary (an ApplicationFailure's `type`): thrown by the activities and
 * read by the workflows, named here once. The error classes' names are the types of the permanent errors
 * (src/base/errors.ts); the others are the activities' own.
 */
export const FailureType = {
  /** PostgreSQL refused an event's values for good (UnstorableEventError). */
  unstorableEvent: 'UnstorableEventError',
  /** A request could not be built from the order's data (InvalidRequestError). */
  invalidRequest: 'InvalidRequestError',
  /** The warehouse refused a request for good (WarehouseRejectedError). */
  warehouseRejected: 'WarehouseRejectedError',
  /** An event the edge should have refused (MalformedEventError). */
  malformedEvent: 'MalformedEventError',
  /** The warehouse answered that the shipment under the key was recalled. */
  shipmentRecalled: 'ShipmentRecalled',
  /** The warehouse shipped but the store did not record it; the details carry the shipment id. */
  shipmentUnrecorded: 'ShipmentUnrecorded',
  /** The worker has no dead-letter topic configured. */
  deadLetterUnavailable: 'DeadLetterUnavailable',
  /**
   * The warehouse is down for everyone (its circuit open) or shipping is paused: the order's shipment waits. Thrown
   * non-retryable (no attempt is spent on it; the workflow waits instead); the details carry ShipmentWaitDetails.
   */
  warehouseWaiting: 'WarehouseWaiting',
  /** The workflow refused an operator's retry (the retryShipment update). */
  retryRefused: 'RetryRefused',
  /** The workflow refused an operator's resolution (the resolveRecall update). */
  resolveRefused: 'ResolveRefused',
  /**
   * An order's run (orderFulfilmentV2) ends with the order needing a person (failed, recall-failed) or, for a repair
   * run, not found in the store: the run fails with this type, its details the order's view.
   */
  orderFailed: 'OrderFailed',
} as const;

/**
 * What a WarehouseWaiting failure carries: when the store says the order began to wait (ISO 8601), and why; the
 * fields after those come from workers that wrote them (a run reads each as absent from an earlier worker).
 */
export interface ShipmentWaitDetails {
  since: string;
  reason: string;
  /** What the order waits for: the warehouse down for everyone (`outage`, also when absent) or a pause (`pause`). */
  for?: 'outage' | 'pause';
  /** The worker's ORDER_SHIPMENT_DEADLINE_SECONDS: how long the order may wait for a warehouse that is down. */
  deadlineSeconds?: number;
  /** Seconds after which the run tries again by itself if nothing woke it (ORDER_WAIT_RECHECK_SECONDS, or shorter). */
  recheckSeconds?: number;
  /** The store could not record the wait (no resumer knows of it): why. The run checks again by itself soon. */
  unrecorded?: string;
}

/** The failure types no retry can fix: Temporal fails these at once. */
export const NON_RETRYABLE_FAILURES = [
  FailureType.unstorableEvent,
  FailureType.invalidRequest,
  FailureType.warehouseRejected,
  FailureType.shipmentRecalled,
  FailureType.malformedEvent,
] as const;

/**
 * Outcome of one event as the worker decided it (fulfilment_events_processed_total): applied, recognised as
 * duplicate/stale, ignored, dead-lettered, or refused by the store (its event id belongs to another tenant).
 * (`accepted` is kept in the type for histories recorded before the split; the worker never reports it.)
 */
type EventOutcome = 'applied' | 'duplicate' | 'stale' | 'ignored' | 'dead-lettered' | 'accepted' | 'refused';

/** An event's outcome as the workflow or the bridge reports it for logs and metrics (the `outcomes` sink, `reportOutcome`). */
export interface OutcomeReport {
  event: Pick<
    OrderEvent,
    'eventId' | 'type' | 'tenantId' | 'orderId' | 'orderVersion' | 'correlationId' | 'occurredAt'
  >;
  outcome: EventOutcome;
  layer?: 'workflow' | 'store';
  detail?: string;
}

/** Tenant and order ids are restricted to this shape so the workflow id is unambiguous. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** Longest reason an operator may give for a retry (the same bound as a cancellation's reason). */
const RETRY_REASON_MAX_LENGTH = 1000;

/**
 * How an operator resolves an order whose shipment the warehouse refused to recall:
 * - `retry-recall`: ask the warehouse to recall it again (after the refusal's cause was fixed there);
 * - `recalled-by-hand`: the shipment was stopped or taken back outside this service; record the order cancelled.
 */
export type RecallResolution = 'retry-recall' | 'recalled-by-hand';
export const RECALL_RESOLUTIONS: readonly RecallResolution[] = ['retry-recall', 'recalled-by-hand'];

/** Longest name an operator may give as who asked (`--by`). */
export const OPERATOR_MAX_LENGTH = 200;

/** Why `reason` cannot be an operator's reason (a retry, a resolution), or undefined when it can (CLI and validators). */
export function retryReasonProblem(reason: unknown): string | undefined {
  if (typeof reason !== 'string' || reason.trim() === '') return 'a reason is required (what was fixed, who asked)';
  if (reason.length > RETRY_REASON_MAX_LENGTH)
    return `the reason is ${reason.length} characters: at most ${RETRY_REASON_MAX_LENGTH}`;
  return unstorableText(reason, 'the reason');
}

/** Why `by` cannot name who asked for an operator's action, or undefined when it can (absent is allowed). */
export function operatorProblem(by: unknown): string | undefined {
  if (by === undefined) return undefined;
  if (typeof by !== 'string' || by.trim() === '') return 'who asked (--by) must be a non-empty name';
  if (by.length > OPERATOR_MAX_LENGTH)
    return `who asked (--by) is ${by.length} characters: at most ${OPERATOR_MAX_LENGTH}`;
  return unstorableText(by, 'who asked (--by)');
}

/** PostgreSQL text holds no NUL, and a lone surrogate would be stored as U+FFFD. */
function unstorableText(text: string, what: string): string | undefined {
  if (text.includes('\u0000') || /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text)) {
    return `${what} holds a NUL or an unpaired surrogate, which the store cannot hold`;
  }
  return undefined;
}
