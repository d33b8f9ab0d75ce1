/**
 * The order workflow's public surface, defined once and imported by the workflow, the bridge, the CLI and the
 * tests: identity, the signal that carries every order event, the status query, the operator's updates
 * (operator-requests.ts: retryShipment, resolveRecall) and the search attributes.
 * Deterministic code only (this file is bundled into the workflow sandbox).
 */
import { defineQuery, defineSignal, type Sinks } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { EventOutcome } from '../src/metrics.js';

/** Event types the fulfilment consumer acts on; every other type is ignored and counted. */
export const ORDER_PLACED = 'orders.OrderPlaced';
export const ORDER_CANCELLED = 'orders.OrderCancelled';
export type OrderEventType = typeof ORDER_PLACED | typeof ORDER_CANCELLED;

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

/** A validated order event as the bridge hands it to the workflow: unknown fields already dropped. */
export type OrderEvent =
  | (EventBase & { type: typeof ORDER_PLACED; data: OrderPlacedData })
  | (EventBase & { type: typeof ORDER_CANCELLED; data: OrderCancelledData });

/**
 * Order status as stored in `fulfilments.status` and shown in the OrderStatus search attribute (which also says
 * `waiting` while a pending order's shipment waits for the warehouse).
 * `awaiting-placement` is the tombstone of a cancellation that arrived before its placement. `failed` (the warehouse
 * gave up) and `recall-failed` (cancelled, but the warehouse refused for good to recall its shipment) need a person:
 * `fulfilment order retry` and `fulfilment order resolve`.
 */
export type OrderStatus =
  'new' | 'awaiting-placement' | 'pending' | 'shipped' | 'cancelled' | 'failed' | 'recall-failed';

export {
  ID_PATTERN,
  OPERATOR_MAX_LENGTH,
  RETRY_REASON_MAX_LENGTH,
  operatorProblem,
  retryReasonProblem,
} from './identity.js';

/** The ONE definition of an order's workflow id: readable in the Web UI, unique per (tenant, order). */
export function orderWorkflowId(tenantId: string, orderId: string): string {
  return `order/${tenantId}/${orderId}`;
}

/**
 * The order workflow's user metadata, shown by the Web UI and `temporal workflow describe`: a one-line summary, and
 * details saying which event started it (no customer data: ids, type and version only).
 */
export function orderWorkflowMetadata(
  event: Pick<OrderEvent, 'tenantId' | 'orderId' | 'type' | 'orderVersion' | 'eventId' | 'correlationId'>,
): { staticSummary: string; staticDetails: string } {
  return {
    staticSummary: `order ${event.tenantId}/${event.orderId}`,
    staticDetails: [
      `Fulfilment of order \`${event.tenantId}/${event.orderId}\`, one run per order.`,
      `Started by \`${event.type}\` v${event.orderVersion} (event \`${event.eventId}\`${event.correlationId ? `, correlation \`${event.correlationId}\`` : ''}).`,
    ].join('\n'),
  };
}

/** The warehouse idempotency key of an order's shipment: stable across runs, retries and redeliveries. */
export function shipmentKey(tenantId: string, orderId: string): string {
  return `ship/${tenantId}/${orderId}`;
}

/**
 * Every event of an order travels on this one signal — one event, or several of one order, oldest first, when the
 * bridge hands over events queued together (a burst costs one workflow task per signal, not per event). One signal
 * name on purpose: Temporal keeps signals in order, but a workflow registers its handlers one by one, and signals that
 * arrived before were dispatched per name as each handler appeared — two names would let a later event overtake an
 * earlier one. A list needs workers that read lists (this code): upgrade workers before bridges.
 */
export const orderEventSignal = defineSignal<[OrderEvent | readonly OrderEvent[]]>('orderEvent');

/** The events one orderEvent signal carries, oldest first. */
export function signalledEvents(arg: OrderEvent | readonly OrderEvent[]): readonly OrderEvent[] {
  return Array.isArray(arg) ? arg : [arg as OrderEvent];
}

/**
 * Wakes an order whose shipment waits for the warehouse, to try again now (the shipment resumer, when the warehouse
 * answers again or to probe it; an operator's `shipping resume`). An order that does not wait ignores it.
 */
export const resumeShipmentSignal = defineSignal('resumeShipment');

/** Answers with the order's current view; safe to call at any time, including on a closed run. */
export const orderStatusQuery = defineQuery<OrderView>('status');

export interface OrderView {
  tenantId: string;
  orderId: string;
  status: OrderStatus;
  orderVersion: number;
  shipmentId?: string;
  failureReason?: string;
  /** Operator retries of a failed shipment applied so far (retryShipment); absent before the first. */
  retries?: number;
  /** Recalls the warehouse refused for good (recall-failed); absent before the first. */
  recallFailures?: number;
  /** A pending order waiting for the warehouse (down for everyone, or shipping paused): since when (ISO 8601), and why. */
  waitingSince?: string;
  waitingReason?: string;
  cancelRefused: boolean;
  appliedEvents: number;
  duplicatesSuppressed: number;
  staleIgnored: number;
  notes: string[];
}

export * from './operator-requests.js';

/** What the store answered about an order after an effect: the truth the workflow adopts. */
export interface StoredOrder {
  outcome: 'applied' | 'duplicate' | 'stale';
  status: StoredStatus;
  orderVersion: number;
  /** False for the tombstone row a cancellation leaves before its placement arrived. */
  placed: boolean;
  cancelRefused: boolean;
  /**
   * This change cancelled an order that was held as failed: its shipment was attempted and may have reached the
   * warehouse, so the run recalls (burns) the order's shipment key. Absent otherwise.
   */
  recall?: true;
}

/** The statuses a `fulfilments` row holds. */
export type StoredStatus = 'pending' | 'shipped' | 'cancelled' | 'failed' | 'recall-failed';

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

/** Settings the starter passes so the workflow itself reads no environment. */
export interface OrderWorkflowSettings {
  /** How long a cancellation that arrived first waits for its placement, seconds. */
  cancelGraceSeconds: number;
  /** How long a settled order stays open to absorb late events before the run closes, seconds (0: none). */
  lingerSeconds: number;
  /** How many applied event ids the workflow remembers for deduplication. Default 1000. */
  rememberEventIds?: number;
  /** Continue as new once the history has this many events; absent, only when Temporal suggests it. */
  continueAsNewAfterEvents?: number;
  /**
   * How long an order's shipment may wait for the warehouse (down for everyone, or shipping paused) before it is held
   * as failed, seconds from its first wait (ORDER_SHIPMENT_DEADLINE_SECONDS). Absent — runs started before waits
   * existed — the shipment does not wait: its bounded attempts count through an outage, as they did.
   */
  shipmentDeadlineSeconds?: number;
}

export interface OrderWorkflowInput {
  tenantId: string;
  orderId: string;
  settings: OrderWorkflowSettings;
  /** Events delivered with the start itself (an eager start: workflow.start, no signal), oldest first. */
  events?: OrderEvent[];
  /** Carried across continue-as-new; absent on the first run. */
  carried?: { state: unknown; inbox: OrderEvent[] };
  /**
   * A run that starts from the store: a repair (`fulfilment order retry` or `resolve` after the order's run closed), or
   * the bridge's for a late event that leaves work for the order (src/store/order-events.ts). It loads the order from
   * the store before anything else; the operator's request (update-with-start) or the events are applied to it.
   */
  repair?: boolean;
}

/** An event's outcome as the workflow reports it for logs and metrics (`outcomes` sink, `reportOutcome`). */
export interface OutcomeReport {
  event: Pick<
    OrderEvent,
    'eventId' | 'type' | 'tenantId' | 'orderId' | 'orderVersion' | 'correlationId' | 'occurredAt'
  >;
  outcome: EventOutcome;
  layer?: 'workflow' | 'store';
  detail?: string;
}

/**
 * The workflow's sinks (registered by the worker, src/app.ts): `outcomes.report` logs and counts an outcome the
 * workflow decided itself, outside the history, and not again when the workflow is replayed.
 */
export interface OrderSinks extends Sinks {
  outcomes: { report(report: OutcomeReport): void };
}

export const TenantIdAttribute = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);
export const OrderIdAttribute = defineSearchAttributeKey('OrderId', SearchAttributeType.KEYWORD);
export const OrderStatusAttribute = defineSearchAttributeKey('OrderStatus', SearchAttributeType.KEYWORD);

/**
 * Workflow type of new orders (workflows/order-fulfilment.ts); starters pass it with
 * `signalWithStart<typeof orderFulfilmentV2, …>` so arguments are type-checked.
 */
export const ORDER_WORKFLOW_TYPE = 'orderFulfilmentV2';

/**
 * The earlier type (workflows/order-fulfilment-v1.ts): runs started before orderFulfilmentV2 finish on it. Nothing
 * starts it any more; remove it once no run of it is open (docs/changing-the-workflow.md).
 */
export const ORDER_WORKFLOW_TYPE_V1 = 'orderFulfilment';

/**
 * Failure types that cross the activity boundary (an ApplicationFailure's `type`): thrown by the activities and
 * read by the workflows, named here once. The error classes' names are the types of the permanent errors
 * (src/errors.ts); the others are the activities' own.
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

/** What a WarehouseWaiting failure carries: when the store says the order began to wait (ISO 8601), and why. */
export interface ShipmentWaitDetails {
  since: string;
  reason: string;
}

/** The failure types no retry can fix: Temporal fails these at once. */
export const NON_RETRYABLE_FAILURES = [
  FailureType.unstorableEvent,
  FailureType.invalidRequest,
  FailureType.warehouseRejected,
  FailureType.shipmentRecalled,
  FailureType.malformedEvent,
] as const;
