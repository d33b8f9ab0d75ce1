/**
 * One workflow per order (id from orderWorkflowId). Every event for the order arrives on the one
 * orderEvent signal, so Temporal serialises them across partitions and bridge instances; the pure state
 * machine (order-state.ts) decides what each means, and activities apply it to PostgreSQL.
 *
 * Rules a reader must not break:
 * - no I/O, clocks or randomness but Temporal's (this file is replayed);
 * - events are handled one at a time, in signal order, by the main loop — handlers only enqueue;
 * - a cancellation that can stop a shipment in flight cancels the shipment first, then is recorded, then the
 *   shipment is recalled: the warehouse burns the key, so nothing ships after the recall;
 * - changes to this logic go through patched() and keep the checked-in histories replaying.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { OrderActivities } from '../activities/index.js';
import {
  OrderStatusAttribute,
  TenantIdAttribute,
  orderEventSignal,
  orderStatusQuery,
  shipmentKey,
  type OrderEvent,
  type OrderView,
  type OrderWorkflowInput,
} from './api.js';
import {
  applyStored,
  cancelsShipment,
  decide,
  expireTombstone,
  initialOrderState,
  isSettled,
  markFailed,
  markShipped,
  noteDecision,
  toView,
  withNote,
  type OrderState,
  type StoredOrder,
} from './order-state.js';

/** Error types no retry can fix; Temporal fails these at once. */
const NON_RETRYABLE = ['UnstorableEventError', 'InvalidRequestError', 'WarehouseRejectedError', 'ShipmentRecalled', 'MalformedEventError'];

/**
 * Change ids for patched(): each names a change to this workflow's commands, so runs recorded before it replay
 * the old path (see README "Changing the workflow").
 */
const DEAD_LETTER_REFUSED_EVENTS = 'dead-letter-refused-events';

/** Short effects (PostgreSQL, the DLQ topic): retried through a dependency restart (about 15 minutes in all). */
const shortEffectPolicy = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 35,
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
} as const;

/** PostgreSQL effects. */
const store = proxyActivities<OrderActivities>(shortEffectPolicy);

/** Dead-lettering a refused event onto the DLQ topic. */
const deadLetters = proxyActivities<OrderActivities>(shortEffectPolicy);

/** The warehouse call: long-running, heartbeating, bounded retries; exhausted attempts hold the order as failed. */
const warehouse = proxyActivities<OrderActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '20 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 8,
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
});

/** Outcome reporting (log + metrics) is a local activity: cheap, and recorded in history as a marker. */
const reporting = proxyLocalActivities<OrderActivities>({
  startToCloseTimeout: '5 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '2 seconds', maximumAttempts: 3 },
});

export async function orderFulfilment(input: OrderWorkflowInput): Promise<OrderView> {
  const { settings } = input;
  let state: OrderState = (input.carried?.state as OrderState | undefined) ?? initialOrderState(input.tenantId, input.orderId);
  const inbox: OrderEvent[] = [...(input.carried?.inbox ?? [])];
  setHandler(orderEventSignal, (event) => {
    inbox.push(event);
  });
  setHandler(orderStatusQuery, () => toView(state));

  // Only a run the starter indexed (TenantId set) publishes its status, so servers without these attributes work.
  const indexed = workflowInfo().typedSearchAttributes.get(TenantIdAttribute) !== undefined;
  let publishedStatus: string | undefined;
  const publishStatus = () => {
    if (indexed && publishedStatus !== state.status) {
      upsertSearchAttributes([{ key: OrderStatusAttribute, value: state.status }]);
      publishedStatus = state.status;
    }
  };

  async function report(event: OrderEvent, outcome: 'applied' | 'duplicate' | 'stale' | 'refused', layer: 'workflow' | 'store', detail?: string) {
    await reporting.reportOutcome({ event, outcome, layer, detail }).catch(() => undefined);
  }

  async function handle(event: OrderEvent): Promise<void> {
    const decision = decide(state, event);
    if (decision.kind === 'duplicate' || decision.kind === 'stale' || decision.kind === 'foreign') {
      state = noteDecision(state, event, decision, settings.rememberEventIds);
      const detail = decision.kind === 'stale' ? decision.reason : decision.kind === 'foreign' ? 'event names another order' : undefined;
      return report(event, decision.kind === 'duplicate' ? 'duplicate' : 'stale', 'workflow', detail);
    }
    let stored: StoredOrder;
    try {
      stored = await durably(`record ${event.eventId}`, () => store.recordOrderEvent(event));
    } catch (err) {
      // The store refused the event for good (a value it cannot hold, a business refusal): the order goes on
      // without it, and the event joins the DLQ with the reason, where operators see every unprocessable event.
      state = withNote(noteDecision(state, event, { kind: 'stale', reason: 'refused' }, settings.rememberEventIds), `refused ${event.eventId}: ${failureReason(err)}`);
      if (!patched(DEAD_LETTER_REFUSED_EVENTS)) return report(event, 'refused', 'store', failureReason(err));
      const error = { name: failureType(err), message: failureReason(err) };
      const refusedAt = new Date(Date.now()).toISOString();
      try {
        await durably(`dead-letter ${event.eventId}`, () => deadLetters.deadLetterEvent({ event, error, refusedAt }));
      } catch (dlqErr) {
        state = withNote(state, `dead-letter ${event.eventId} refused: ${failureReason(dlqErr)}`);
        return report(event, 'refused', 'store', failureReason(err));
      }
      return;
    }
    state = applyStored(noteDecision(state, event, decision, settings.rememberEventIds), event, stored);
    if (state.status === 'awaiting-placement' && state.graceEndsAt === undefined) {
      state = { ...state, graceEndsAt: Date.now() + settings.cancelGraceSeconds * 1000 };
    }
    publishStatus();
    await report(event, stored.outcome, 'store');
  }

  /**
   * Runs a store or warehouse effect whose own retry policy gave up on a transient failure: the order is held
   * (a note says why) and the effect is tried again after a pause, for as long as it takes. Business refusals
   * (non-retryable failures) are thrown to the caller.
   */
  async function durably<T>(what: string, effect: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await effect();
      } catch (err) {
        if (isNonRetryable(err) || isCancellation(err)) throw err;
        state = withNote(state, `${what}: gave up for now (${failureReason(err)}); trying again in 5 minutes`);
        await sleep('5 minutes');
      }
    }
  }

  async function drainInbox(): Promise<void> {
    while (inbox.length > 0) await handle(inbox.shift()!);
  }

  /** Waits until an event arrives or `deadline` (workflow time, ms) passes; true when an event arrived. */
  async function waitForEvent(deadline?: number): Promise<boolean> {
    if (deadline === undefined) {
      await condition(() => inbox.length > 0);
      return true;
    }
    const remaining = deadline - Date.now();
    return remaining > 0 && (await condition(() => inbox.length > 0, remaining));
  }

  async function ship(): Promise<void> {
    const placement = state.placement!;
    const key = shipmentKey(state.tenantId, state.orderId);
    const scope = new CancellationScope();
    let settled = false;
    let shipmentId: string | undefined;
    let failure: unknown;
    const shipping = scope
      .run(() =>
        warehouse.shipOrder({
          tenantId: state.tenantId,
          orderId: state.orderId,
          key,
          lines: placement.lines,
          shippingAddress: placement.shippingAddress,
          correlationId: state.correlationId,
        }),
      )
      .then(
        (id) => void (shipmentId = id),
        (err: unknown) => void (failure = err),
      )
      .finally(() => void (settled = true));

    // While the shipment is in flight, events that cannot stop it are handled; a cancellation stops it.
    let cancelledBy: OrderEvent | undefined;
    while (!settled && !cancelledBy) {
      await condition(() => settled || inbox.length > 0);
      while (!settled && inbox.length > 0) {
        if (cancelsShipment(state, inbox[0]!)) {
          cancelledBy = inbox.shift();
          scope.cancel();
          break;
        }
        await handle(inbox.shift()!);
      }
    }
    await shipping;

    if (cancelledBy) {
      await handle(cancelledBy);
      await compensate(key);
      return;
    }
    if (shipmentId !== undefined) {
      const id = shipmentId;
      const stored = await durably('mark shipped', () => store.markOrderShipped({ tenantId: state.tenantId, orderId: state.orderId, shipmentId: id }));
      if (stored.status === 'shipped') state = markShipped(state, id);
      else {
        // The store refused (the order was cancelled underneath us): the store wins, the shipment is recalled.
        state = { ...state, status: stored.status === 'pending' ? 'cancelled' : stored.status };
        await compensate(key);
      }
    } else if (!isCancellation(failure)) {
      const reason = failureReason(failure);
      await durably('mark failed', () => store.markOrderFailed({ tenantId: state.tenantId, orderId: state.orderId, reason }));
      state = markFailed(state, reason);
    }
    publishStatus();
  }

  async function compensate(key: string): Promise<void> {
    const existed = await durably('recall shipment', () => warehouse.recallShipment({ key }));
    state = withNote(state, existed ? `compensated: shipment ${key} recalled` : `compensated: shipment ${key} blocked before it shipped`);
  }

  for (;;) {
    await drainInbox();
    if (state.status === 'new') {
      await waitForEvent();
    } else if (state.status === 'awaiting-placement') {
      if (!(await waitForEvent(state.graceEndsAt))) {
        state = expireTombstone(state);
        publishStatus();
      }
    } else if (state.status === 'pending') {
      await ship();
    } else if (isSettled(state)) {
      state.lingerEndsAt ??= Date.now() + settings.lingerSeconds * 1000;
      if (!(await waitForEvent(state.lingerEndsAt))) break;
    }
    if (workflowInfo().continueAsNewSuggested && inbox.length === 0) {
      await continueAsNew<typeof orderFulfilment>({ ...input, carried: { state, inbox } });
    }
  }
  return toView(state);
}

function isNonRetryable(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.nonRetryable === true;
}

/** The error type an activity failed with (the ApplicationFailure's type), else the error's name. */
function failureType(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type) return err.cause.type;
  return err instanceof Error ? err.name : 'Error';
}

function failureReason(err: unknown): string {
  let e: unknown = err;
  const parts: string[] = [];
  while (e instanceof Error && parts.length < 4) {
    parts.push(e.message);
    e = (e as Error & { cause?: unknown }).cause;
  }
  return parts.filter(Boolean).join(': ') || 'unknown failure';
}
