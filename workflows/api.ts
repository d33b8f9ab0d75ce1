/**
 * The order workflow's public surface, defined once and imported by the workflow, the bridge, the CLI and the
 * tests: its id and types, the signal that carries every order event, the status query and the view it answers, the
 * operator's updates (operator-requests.ts: retryShipment, resolveRecall), its input and settings, its sinks and the
 * search attributes. What it speaks of — events, statuses, stored rows, failure types — is the order's vocabulary
 * (src/vocabulary/order.ts). Deterministic code only (this file is bundled into the workflow sandbox).
 */
import { defineQuery, defineSignal, type Sinks } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { OrderEvent, OrderStatus, OutcomeReport } from '../src/vocabulary/order.js';

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
   * the bridge's for a late event that leaves work for the order (src/adapters/store/order-events.ts). It loads the
   * order from the store before anything else; the operator's request (update-with-start) or the events are applied to
   * it.
   */
  repair?: boolean;
}

/**
 * The workflow's sinks (registered by the worker, src/roles/worker/role.ts through src/domain/temporal.ts):
 * `outcomes.report` logs and counts an outcome the workflow decided itself, outside the history, and not again when the
 * workflow is replayed.
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
