/**
 * What every concern of an order's run shares (orderFulfilmentV2, order-fulfilment.ts): the order's state, what waits
 * to be handled (events, accepted operator's requests), the run's settings, the hold that keeps a failing effect
 * trying, and the status the Web UI shows. Each concern — the wait for an event (event-window.ts), the handling of an
 * event (event-handling.ts), the shipment (order-shipment.ts), the operator's requests (operator-actions.ts), the move
 * to a newer version (version-move.ts) — is an object that owns its own state and is given this one. Deterministic
 * code only (bundled into the sandbox).
 */
import { isCancellation, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { HOLD_BEFORE_RETRYING } from './activity-options.js';
import { OrderStatusAttribute, TenantIdAttribute, type OrderWorkflowInput } from './api.js';
import type { OrderEvent } from '../src/vocabulary/order.js';
import type {
  ResolveRecallRequest,
  ResolveRecallResult,
  RetryShipmentRequest,
  RetryShipmentResult,
} from './operator-requests.js';
import { initialOrderState, isSettled, retriesOf, withNote, type OrderState } from './order-state.js';
import { failureReason, isNonRetryable } from './activity-failures.js';

/** What the Web UI's Event History says for the hold's timer (user metadata). */
const HOLD = 'hold before retrying';
/** The OrderStatus search attribute of an order whose shipment waits for the warehouse (not a status of the store). */
const WAITING_STATUS = 'waiting';

/** An operator's request the validator accepted, waiting for the main loop; its handler waits for the answer. */
export type PendingRequest =
  | { kind: 'retry'; request: RetryShipmentRequest; result?: RetryShipmentResult; refusal?: string }
  | { kind: 'resolve'; request: ResolveRecallRequest; result?: ResolveRecallResult; refusal?: string };

/** One run of an order: its state, what waits to be handled, its settings, and the two effects every concern uses. */
export class OrderRun {
  state: OrderState;
  /** Events not yet handled, oldest first (carried across continue-as-new). */
  readonly inbox: OrderEvent[];
  /** Accepted operator requests, oldest first; the head stays until applied. Never carried (handlers wait). */
  readonly requests: PendingRequest[] = [];
  readonly settings: OrderWorkflowInput['settings'];
  /** Only a run the starter indexed (TenantId set) publishes its status, so servers without these attributes work. */
  private readonly indexed = workflowInfo().typedSearchAttributes.get(TenantIdAttribute) !== undefined;
  /** The status the search attribute holds: what the starter set (`new`; a repair, the stored status). */
  private publishedStatus: string = workflowInfo().typedSearchAttributes.get(OrderStatusAttribute) ?? 'new';

  constructor(input: OrderWorkflowInput) {
    this.settings = input.settings;
    this.state = (input.carried?.state as OrderState | undefined) ?? initialOrderState(input.tenantId, input.orderId);
    this.inbox = [...(input.carried?.inbox ?? []), ...(input.events ?? [])];
  }

  /** True when an event or an accepted operator's request waits to be handled. */
  hasWork(): boolean {
    return this.inbox.length > 0 || this.requests.length > 0;
  }

  /**
   * Runs a store or warehouse effect whose own retry policy gave up on a transient failure: the order is held
   * (a note says why) and the effect is tried again after a pause, for as long as it takes. Business refusals
   * (non-retryable failures) are thrown to the caller.
   */
  async durably<T>(what: string, effect: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await effect();
      } catch (err) {
        if (isNonRetryable(err) || isCancellation(err)) throw err;
        this.state = withNote(
          this.state,
          `${what}: gave up for now (${failureReason(err)}); trying again in 5 minutes`,
        );
        await sleep(HOLD_BEFORE_RETRYING, { summary: HOLD });
      }
    }
  }

  /**
   * Publishes the order's status as the OrderStatus search attribute when it settled (shipped, cancelled, failed)
   * or was reopened for a retry: at most once per settling, so an order that goes well upserts once. The starter set
   * `new`; the status query has every state in between.
   */
  publishStatus(): void {
    // A waiting order shows as `waiting` in the Web UI (OrderStatus = "waiting") until it settles.
    const status = this.state.waiting ? WAITING_STATUS : this.state.status;
    const worthPublishing =
      isSettled(this.state) || this.state.waiting !== undefined || (status === 'pending' && retriesOf(this.state) > 0);
    if (!worthPublishing || !this.indexed || this.publishedStatus === status) return;
    upsertSearchAttributes([{ key: OrderStatusAttribute, value: status }]);
    this.publishedStatus = status;
  }
}
