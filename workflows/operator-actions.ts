/**
 * An operator's requests to an order's run (workflows/operator-requests.ts), as orderFulfilmentV2 takes them: the
 * validators, which refuse without a trace in the history, and the appliers, which the run's main loop calls between
 * events. The store is the truth in both: an applier records first and the run follows the row the store returned,
 * so a request that raced an event (a late cancellation) is refused by the store rather than acted on. The actions
 * call the run and the shipment (a recall), never the other way. Deterministic code only (bundled into the sandbox).
 */
import { ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import {
  resolveRecallUpdate,
  retryShipmentUpdate,
  type ResolveRecallRequest,
  type ResolveRecallResult,
  type RetryShipmentRequest,
  type RetryShipmentResult,
} from './api.js';
import {
  FailureType,
  RECALL_RESOLUTIONS,
  operatorProblem,
  retryReasonProblem,
  shipmentKey,
  type OrderStatus,
  type StoredOrder,
} from '../src/vocabulary/order.js';
import { failureReason, notFailed } from './activity-failures.js';
import {
  recallFailuresOf,
  reopenForRetry,
  resolveRecalled,
  retriesOf,
  withNote,
  type OrderState,
} from './order-state.js';
import { storeEffect } from './store-effects.js';
import type { OrderRun, PendingRequest } from './order-run.js';
import type { Shipment } from './order-shipment.js';

/** What the validators need to know besides the state. */
export interface ValidationContext {
  /** A repair run whose order is not loaded from the store yet: the status is checked once it is. */
  loading: boolean;
  /** Requests accepted and not yet applied. */
  queued: number;
}

function requestProblem(request: { reason?: unknown; by?: unknown } | undefined): string | undefined {
  return retryReasonProblem(request?.reason) ?? operatorProblem(request?.by);
}

/** retryShipment's validator: a refusal here is returned to the caller and leaves no trace in the history. */
export function validateRetry(state: OrderState, request: RetryShipmentRequest, ctx: ValidationContext): void {
  const { tenantId, orderId, status } = state;
  const problem = requestProblem(request as Partial<RetryShipmentRequest> | undefined);
  if (problem) throw new Error(`retry of order ${tenantId}/${orderId} refused: ${problem}`);
  if (!ctx.loading && status !== 'failed') throw new Error(notFailed(tenantId, orderId, status));
  if (ctx.queued > 0) throw new Error(`order ${tenantId}/${orderId} already has an operator's request being applied`);
}

/** resolveRecall's validator. */
export function validateResolve(state: OrderState, request: ResolveRecallRequest, ctx: ValidationContext): void {
  const { tenantId, orderId, status } = state;
  const problem = requestProblem(request as Partial<ResolveRecallRequest> | undefined);
  if (problem) throw new Error(`resolution of order ${tenantId}/${orderId} refused: ${problem}`);
  const action = (request as Partial<ResolveRecallRequest> | undefined)?.action;
  if (!RECALL_RESOLUTIONS.includes(action as ResolveRecallRequest['action'])) {
    throw new Error(
      `resolution of order ${tenantId}/${orderId} refused: action must be one of ${RECALL_RESOLUTIONS.join(', ')}, not ${JSON.stringify(action)}`,
    );
  }
  if (!ctx.loading && status !== 'recall-failed') throw new Error(notRecallFailed(tenantId, orderId, status));
  if (ctx.queued > 0) throw new Error(`order ${tenantId}/${orderId} already has an operator's request being applied`);
}

/** Why an order that is not recall-failed cannot be resolved. */
export function notRecallFailed(tenantId: string, orderId: string, status: string): string {
  return `order ${tenantId}/${orderId} is ${status}, not recall-failed: only an order whose recall the warehouse refused is resolved`;
}

const now = (): string => new Date(Date.now()).toISOString();

/** The operator's requests to the run: their handlers, and the appliers the main loop calls between events. */
export class OperatorActions {
  constructor(
    private readonly run: OrderRun,
    private readonly shipment: Shipment,
  ) {}

  /**
   * Sets the run's handlers of an operator's updates (retryShipment, resolveRecall): the validator refuses without a
   * trace, an accepted request is queued for the main loop, and the handler answers once it was applied. `loading`:
   * a repair run has not read the store yet, so the status is checked once it has.
   */
  setHandlers(loading: () => boolean): void {
    const { run } = this;
    // Handlers only enqueue: the main loop applies a request between events, and the handler returns its answer.
    const ctx = () => ({ loading: loading(), queued: run.requests.length });
    setHandler(
      retryShipmentUpdate,
      (request) => this.queue<RetryShipmentResult>({ kind: 'retry', request }, FailureType.retryRefused),
      { validator: (request) => validateRetry(run.state, request, ctx()) },
    );
    setHandler(
      resolveRecallUpdate,
      (request) => this.queue<ResolveRecallResult>({ kind: 'resolve', request }, FailureType.resolveRefused),
      { validator: (request) => validateResolve(run.state, request, ctx()) },
    );
  }

  /** Applies the oldest accepted request, then lets its handler answer. */
  async applyNext(): Promise<void> {
    const next = this.run.requests[0]!;
    await (next.kind === 'retry' ? this.applyRetry(next) : this.applyResolve(next));
    this.run.requests.shift();
  }

  /** Queues an accepted request for the main loop and waits for its answer (a refusal fails the update). */
  private async queue<R>(pending: PendingRequest, refusedType: string): Promise<R> {
    this.run.requests.push(pending);
    await condition(() => pending.result !== undefined || pending.refusal !== undefined);
    if (pending.refusal !== undefined)
      throw ApplicationFailure.create({ type: refusedType, message: pending.refusal, nonRetryable: true });
    return pending.result as R;
  }

  /**
   * Applies an accepted retry: the store moves the order failed → pending (it is the truth: a row it no longer holds as
   * failed refuses the retry), then the run follows, and its next step ships again under the same key.
   */
  private async applyRetry(pending: Extract<PendingRequest, { kind: 'retry' }>): Promise<void> {
    const { run } = this;
    const { tenantId, orderId, status } = run.state;
    if (status !== 'failed') {
      pending.refusal = notFailed(tenantId, orderId, status);
      return;
    }
    const retry = retriesOf(run.state) + 1;
    const { reason, by } = pending.request;
    const retriedAt = now();
    const stored = await this.recordOrRefuse(pending, `retry ${retry}`, () =>
      run.durably(`retry ${retry}`, () =>
        storeEffect('reopenFailedOrder', `reopen for retry ${retry}`, {
          tenantId,
          orderId,
          retry,
          reason,
          ...(by !== undefined ? { by } : {}),
        }),
      ),
    );
    if (!stored || !this.followStore(pending, stored, 'pending', `retry ${retry}`, 'failed')) return;
    const clearedFailure = run.state.failureReason;
    run.state = reopenForRetry(run.state, retry, reason, by);
    run.publishStatus();
    pending.result = {
      tenantId,
      orderId,
      retry,
      status: 'pending',
      clearedFailure,
      reason,
      ...(by !== undefined ? { by } : {}),
      retriedAt,
      shipmentKey: shipmentKey(tenantId, orderId),
    };
  }

  /**
   * Applies an accepted resolution of a recall-failed order: a retried recall asks the warehouse again (refused again,
   * the order stays recall-failed with the new reason); a recall that succeeded, or one done by hand, is recorded and
   * the order is cancelled.
   */
  private async applyResolve(pending: Extract<PendingRequest, { kind: 'resolve' }>): Promise<void> {
    const { run } = this;
    const { tenantId, orderId, status } = run.state;
    if (status !== 'recall-failed') {
      pending.refusal = notRecallFailed(tenantId, orderId, status);
      return;
    }
    const { action, reason, by } = pending.request;
    const answer = { tenantId, orderId, action, reason, ...(by !== undefined ? { by } : {}) };
    if (action === 'retry-recall') {
      const refusal = await this.shipment.recall(shipmentKey(tenantId, orderId));
      if (refusal !== undefined) {
        await this.shipment.holdRecallFailed(refusal);
        pending.result = { ...answer, status: run.state.status, refusal, resolvedAt: now() };
        return;
      }
    }
    const failures = recallFailuresOf(run.state);
    const stored = await this.recordOrRefuse(pending, `resolution of recall refusal ${failures}`, () =>
      run.durably(`resolve ${failures}`, () =>
        storeEffect('resolveRecallFailed', `resolve recall refusal ${failures} (${action})`, {
          tenantId,
          orderId,
          failures,
          action,
          reason,
          ...(by !== undefined ? { by } : {}),
        }),
      ),
    );
    if (!stored || !this.followStore(pending, stored, 'cancelled', `resolution ${failures}`, 'recall-failed')) return;
    run.state = resolveRecalled(run.state, `resolved (${action})${by ? ` by ${by}` : ''}: ${reason}`);
    run.publishStatus();
    pending.result = { ...answer, status: 'cancelled', resolvedAt: now() };
  }

  /** The store's answer to a request's effect, or undefined (the request refused with the store's reason). */
  private async recordOrRefuse(
    pending: PendingRequest,
    what: string,
    effect: () => Promise<StoredOrder>,
  ): Promise<StoredOrder | undefined> {
    const { run } = this;
    try {
      return await effect();
    } catch (err) {
      pending.refusal = `the store refused ${what} of order ${run.state.tenantId}/${run.state.orderId}: ${failureReason(err)}`;
      run.state = withNote(run.state, `${what} refused: ${failureReason(err)}`);
      return undefined;
    }
  }

  /** True when the store holds the order as `expected` after the effect; else the run adopts the store's status and refuses. */
  private followStore(
    pending: PendingRequest,
    stored: StoredOrder,
    expected: OrderStatus,
    what: string,
    needed: OrderStatus,
  ): boolean {
    if (stored.status === expected) return true;
    const { run } = this;
    const { tenantId, orderId } = run.state;
    run.state = withNote(
      { ...run.state, status: stored.status },
      `${what} refused: the store holds the order as ${stored.status}`,
    );
    run.publishStatus();
    pending.refusal = `order ${tenantId}/${orderId} is ${stored.status} in the store, not ${needed}: nothing to do`;
    return false;
  }
}
