/**
 * The earlier order workflow type, `orderFulfilment` (ORDER_WORKFLOW_TYPE_V1): runs started before
 * orderFulfilmentV2 (order-fulfilment.ts) finish here, on the code and in the shape they were recorded with. Nothing
 * starts it any more. Change nothing here that changes its commands; remove it once no run of it is open.
 *
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
 *
 * Re-driving a held order (`fulfilment order retry`): an order held as `failed` lingers ORDER_LINGER_SECONDS like
 * any settled order, and while its run is open an operator may send the `retryShipment` update (api.ts). Its
 * validator refuses, recording nothing, unless the order is `failed` (the message names the status it is in); an
 * accepted retry is queued like an event and applied by the main loop: the store moves the order failed → pending
 * (activity reopenFailedOrder, claim `retry/<tenant>/<order>/<n>`), the workflow follows, notes the reason, and ships
 * again under the same key `ship/<tenant>/<order>` — the warehouse's idempotency still allows one shipment at most.
 * A failure after retry n is claimed as `failed/<tenant>/<order>/<n>`, so the order can be held again. Temporal
 * applies one update id once per run. A closed run is not reopened: the CLI says so and what an operator can do.
 * These paths sit behind patched(RETRY_FAILED_ORDERS); a run that never sees the update makes the same commands
 * as before.
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { OrderActivities, RecordedShipment } from '../activities/index.js';
import { HOLD_BEFORE_RETRYING, REPORTING_LOCAL_ACTIVITY, WAREHOUSE_ACTIVITY } from './activity-options.js';
import {
  OrderStatusAttribute,
  TenantIdAttribute,
  orderEventSignal,
  orderStatusQuery,
  retryShipmentUpdate,
  signalledEvents,
  type OrderSinks,
  type OrderView,
  type OrderWorkflowInput,
  type RetryShipmentRequest,
  type RetryShipmentResult,
} from './api.js';
import {
  FailureType,
  NON_RETRYABLE_FAILURES,
  retryReasonProblem,
  shipmentKey,
  type OrderEvent,
  type OutcomeReport,
  type StoredOrder,
} from '../src/order.js';
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
  reopenForRetry,
  retriesOf,
  toView,
  withNote,
  type OrderState,
} from './order-state.js';
import { failureReason, failureType, isNonRetryable, notFailed, unrecordedShipmentId } from './failures.js';
import { store, storeEffect, type StoreEffect } from './store-effects.js';

/** Error types no retry can fix; Temporal fails these at once. */
const NON_RETRYABLE = [...NON_RETRYABLE_FAILURES];

/**
 * Change ids for patched(): each names a change to this workflow's commands, so runs recorded before it replay
 * the old path (see docs/changing-the-workflow.md).
 */
const DEAD_LETTER_REFUSED_EVENTS = 'dead-letter-refused-events';
/** An operator's retryShipment re-drives a failed order; failures after a retry are claimed per retry. */
const RETRY_FAILED_ORDERS = 'retry-failed-orders';
/**
 * Continue as new as soon as the inbox is drained, before waiting again. Before it, the check came only after a
 * step, when a settled order's wait had just been ended by an event still in the inbox, so it never ran.
 */
const CONTINUE_AS_NEW_WHEN_DRAINED = 'continue-as-new-when-drained';
/**
 * The cheaper shape of an order (one marker per run for the whole change): store effects run as local activities
 * (a marker each, no workflow-task round trip), falling back to the activity when their few quick attempts give
 * up; the shipment and its record are one activity; outcomes are reported by the recording activity or through
 * the `outcomes` sink instead of a local activity; the first shipment's `pending` is not published (only what
 * an operator looks for: settled statuses, the tombstone, a retried order); and the grace and linger windows are
 * one timer each, not one per event that arrives while they run.
 */
const CHEAPER_ORDERS = 'cheaper-orders';

/** What the Web UI's Event History says for each timer (user metadata). */
const GRACE_WINDOW = 'cancellation grace window';
const LINGER = 'linger for late events';
const HOLD = 'hold before retrying';

/** Outcomes the workflow decides itself (duplicate, stale, foreign), reported outside the history (cheaper-orders). */
const { outcomes } = proxySinks<OrderSinks>();

/** Dead-lettering a refused event onto the DLQ topic (under the store's policy). */
const deadLetters = store;

/** The warehouse call: long-running, heartbeating, bounded retries; exhausted attempts hold the order as failed. */
const warehousePolicy = {
  ...WAREHOUSE_ACTIVITY,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { ...WAREHOUSE_ACTIVITY.retry, nonRetryableErrorTypes: NON_RETRYABLE },
};
const warehouse = proxyActivities<OrderActivities>(warehousePolicy);

/** Outcome reporting (log + metrics) is a local activity: cheap, and recorded in history as a marker. */
const reporting = proxyLocalActivities<OrderActivities>(REPORTING_LOCAL_ACTIVITY);

/**
 * The workflow: one order from its first event until it settles and lingers out. Each pass handles what has
 * arrived, then takes the step the order's status calls for; long runs continue as new with their state.
 */
export async function orderFulfilment(input: OrderWorkflowInput): Promise<OrderView> {
  const run = new OrderRun(input);
  const carryOn = () =>
    continueAsNew<typeof orderFulfilment>({ ...input, carried: { state: run.state, inbox: run.inbox } });
  for (;;) {
    await run.drainInbox();
    if (run.readyToContinueAsNew() && patched(CONTINUE_AS_NEW_WHEN_DRAINED)) await carryOn();
    if ((await run.step()) === 'done') break;
    if (run.readyToContinueAsNew()) await carryOn();
  }
  return toView(run.state);
}

type EventOutcomeReport = 'applied' | 'duplicate' | 'stale' | 'refused';

/** A retryShipment request the validator accepted, waiting for the main loop; its handler waits for the answer. */
interface PendingRetry {
  request: RetryShipmentRequest;
  result?: RetryShipmentResult;
  refusal?: string;
}

/** One run of an order's workflow: its state, its inbox of events, and one method per step. */
class OrderRun {
  state: OrderState;
  readonly inbox: OrderEvent[];
  /** Accepted retryShipment requests, oldest first; the head stays until applied. Never carried (handlers wait). */
  readonly retries: PendingRetry[] = [];
  private readonly settings: OrderWorkflowInput['settings'];
  /** Only a run the starter indexed (TenantId set) publishes its status, so servers without these attributes work. */
  private readonly indexed = workflowInfo().typedSearchAttributes.get(TenantIdAttribute) !== undefined;
  private publishedStatus: string | undefined;
  /** Whether this run takes the cheaper shape; decided once, where its first changed command is issued. */
  private cheapShape: boolean | undefined;
  /** The one timer of the grace or linger window in progress (cheaper-orders), kept while events arrive. */
  private window?: { deadline: number; summary: string; scope: CancellationScope; passed: boolean };

  constructor(input: OrderWorkflowInput) {
    this.settings = input.settings;
    this.state = (input.carried?.state as OrderState | undefined) ?? initialOrderState(input.tenantId, input.orderId);
    this.inbox = [...(input.carried?.inbox ?? [])];
    // One event, or several of the order (oldest first); a list reaches the earlier type too (a handler is no command).
    setHandler(orderEventSignal, (arg) => {
      this.inbox.push(...signalledEvents(arg));
    });
    setHandler(orderStatusQuery, () => toView(this.state));
    // Handlers only enqueue: the main loop applies the retry between events, and the handler returns its answer.
    setHandler(
      retryShipmentUpdate,
      async (request) => {
        const pending: PendingRetry = { request };
        this.retries.push(pending);
        await condition(() => pending.result !== undefined || pending.refusal !== undefined);
        if (pending.refusal !== undefined)
          throw ApplicationFailure.create({
            type: FailureType.retryRefused,
            message: pending.refusal,
            nonRetryable: true,
          });
        return pending.result!;
      },
      { validator: (request) => this.validateRetry(request) },
    );
  }

  /**
   * True when the history should be cut — Temporal suggests it, or it reached `continueAsNewAfterEvents` — and
   * nothing is waiting to be handled. Issues no command, so a run without that setting behaves as before it existed.
   */
  readyToContinueAsNew(): boolean {
    const { continueAsNewSuggested, historyLength } = workflowInfo();
    const limit = this.settings.continueAsNewAfterEvents;
    const long = continueAsNewSuggested || (limit !== undefined && historyLength >= limit);
    return long && this.inbox.length === 0 && this.retries.length === 0;
  }

  /** Handles every event that has arrived, one at a time, in signal order; then any accepted retry. */
  async drainInbox(): Promise<void> {
    while (this.inbox.length > 0 || this.retries.length > 0) {
      if (this.inbox.length > 0) {
        await this.handle(this.inbox.shift()!);
      } else {
        await this.applyRetry(this.retries[0]!);
        this.retries.shift();
      }
    }
  }

  /** retryShipment's validator: a refusal here is returned to the caller and leaves no trace in the history. */
  private validateRetry(request: RetryShipmentRequest): void {
    const { tenantId, orderId, status } = this.state;
    const problem = retryReasonProblem((request as Partial<RetryShipmentRequest> | undefined)?.reason);
    if (problem) throw new Error(`retry of order ${tenantId}/${orderId} refused: ${problem}`);
    if (status !== 'failed') throw new Error(notFailed(tenantId, orderId, status));
    if (this.retries.length > 0) throw new Error(`order ${tenantId}/${orderId} already has a retry being applied`);
  }

  /**
   * Applies an accepted retry: the store moves the order failed → pending (it is the truth: a row it no longer
   * holds as failed refuses the retry), then the workflow follows, and the next step ships again.
   */
  private async applyRetry(pending: PendingRetry): Promise<void> {
    const { tenantId, orderId, status } = this.state;
    if (status !== 'failed') {
      pending.refusal = notFailed(tenantId, orderId, status);
      return;
    }
    if (!patched(RETRY_FAILED_ORDERS)) {
      pending.refusal = `order ${tenantId}/${orderId}: this run's history predates retries`;
      return;
    }
    const retry = retriesOf(this.state) + 1;
    const { reason } = pending.request;
    const retriedAt = new Date(Date.now()).toISOString();
    let stored: StoredOrder;
    try {
      stored = await this.durably(`retry ${retry}`, () =>
        this.storeEffect('reopenFailedOrder', `reopen for retry ${retry}`, [{ tenantId, orderId, retry, reason }]),
      );
    } catch (err) {
      pending.refusal = `the store refused retry ${retry} of order ${tenantId}/${orderId}: ${failureReason(err)}`;
      this.state = withNote(this.state, `retry ${retry} refused: ${failureReason(err)}`);
      return;
    }
    if (stored.status !== 'pending') {
      this.state = withNote(
        { ...this.state, status: stored.status },
        `retry ${retry} refused: the store holds the order as ${stored.status}`,
      );
      this.publishStatus();
      pending.refusal = `order ${tenantId}/${orderId} is ${stored.status} in the store, not failed: nothing to retry`;
      return;
    }
    const clearedFailure = this.state.failureReason;
    this.state = reopenForRetry(this.state, retry, reason);
    this.publishStatus();
    pending.result = {
      tenantId,
      orderId,
      retry,
      status: 'pending',
      clearedFailure,
      reason,
      retriedAt,
      shipmentKey: shipmentKey(tenantId, orderId),
    };
  }

  /** True when this run takes the cheaper shape (CHEAPER_ORDERS); the first call decides, and writes its marker. */
  private get cheap(): boolean {
    return (this.cheapShape ??= patched(CHEAPER_ORDERS));
  }

  /** The step the order's status calls for; 'done' once a settled order lingered without a new event. */
  async step(): Promise<'continue' | 'done'> {
    const { state } = this;
    if (state.status === 'new') {
      await this.waitForEvent();
    } else if (state.status === 'awaiting-placement') {
      if (!(await this.waitForEvent(state.graceEndsAt, GRACE_WINDOW))) {
        this.state = expireTombstone(state);
        this.publishStatus();
      }
    } else if (state.status === 'pending') {
      this.closeWindow();
      await this.ship();
    } else if (isSettled(state)) {
      state.lingerEndsAt ??= Date.now() + this.settings.lingerSeconds * 1000;
      if (!(await this.waitForEvent(state.lingerEndsAt, LINGER))) return 'done';
    }
    return 'continue';
  }

  /** Decides what one event means and records it through the store, whose answer becomes the state. */
  async handle(event: OrderEvent): Promise<void> {
    const decision = decide(this.state, event);
    const remember = this.settings.rememberEventIds;
    if (decision.kind === 'duplicate' || decision.kind === 'stale' || decision.kind === 'foreign') {
      this.state = noteDecision(this.state, event, decision, remember);
      const detail =
        decision.kind === 'stale'
          ? decision.reason
          : decision.kind === 'foreign'
            ? 'event names another order'
            : undefined;
      return this.report(event, decision.kind === 'duplicate' ? 'duplicate' : 'stale', 'workflow', detail);
    }
    let stored: StoredOrder;
    try {
      stored = await this.durably(`record ${event.eventId}`, () => this.recordEvent(event));
    } catch (err) {
      this.state = withNote(
        noteDecision(this.state, event, { kind: 'stale', reason: 'refused' }, remember),
        `refused ${event.eventId}: ${failureReason(err)}`,
      );
      return this.refuse(event, err);
    }
    this.state = applyStored(noteDecision(this.state, event, decision, remember), event, stored);
    if (this.state.status === 'awaiting-placement' && this.state.graceEndsAt === undefined) {
      this.state = { ...this.state, graceEndsAt: Date.now() + this.settings.cancelGraceSeconds * 1000 };
    }
    this.publishStatus();
    // In the cheaper shape the recording activity reported the store's outcome itself.
    if (!this.cheap) await this.report(event, stored.outcome, 'store');
  }

  /** Records one event through the store: an activity, or (cheaper-orders) a local activity that reports its outcome. */
  private recordEvent(event: OrderEvent): Promise<StoredOrder> {
    const summary = `record event ${event.type.replace(/^orders\./, '')} v${event.orderVersion}`;
    return this.storeEffect('recordOrderEvent', summary, [event, { reportOutcome: true }], [event]);
  }

  /**
   * A store effect in this run's shape — the one place the two shapes part: cheaper-orders runs it as a local
   * activity first (store-effects.ts), the earlier shape as an activity, with `earlierArgs` when they differ.
   */
  private storeEffect<K extends StoreEffect>(
    name: K,
    summary: string,
    args: Parameters<OrderActivities[K]>,
    earlierArgs: readonly unknown[] = args,
  ): Promise<Awaited<ReturnType<OrderActivities[K]>>> {
    if (this.cheap) return storeEffect(name, summary, ...args);
    return (store[name] as unknown as (...a: unknown[]) => Promise<Awaited<ReturnType<OrderActivities[K]>>>)(
      ...earlierArgs,
    );
  }

  /**
   * The store refused the event for good (a value it cannot hold, a business refusal): the order goes on without
   * it, and the event joins the DLQ with the reason, where operators see every unprocessable event.
   */
  private async refuse(event: OrderEvent, err: unknown): Promise<void> {
    if (!patched(DEAD_LETTER_REFUSED_EVENTS)) return this.report(event, 'refused', 'store', failureReason(err));
    const error = { name: failureType(err), message: failureReason(err) };
    const refusedAt = new Date(Date.now()).toISOString();
    try {
      await this.durably(`dead-letter ${event.eventId}`, () =>
        deadLetters.deadLetterEvent({ event, error, refusedAt }),
      );
    } catch (dlqErr) {
      this.state = withNote(this.state, `dead-letter ${event.eventId} refused: ${failureReason(dlqErr)}`);
      return this.report(event, 'refused', 'store', failureReason(err));
    }
  }

  /**
   * Ships the order through the warehouse. While the shipment is in flight, events that cannot stop it are
   * handled; a cancellation stops it (the activity is cancelled), is recorded, and the shipment is recalled.
   */
  async ship(): Promise<void> {
    const { state } = this;
    const placement = state.placement!;
    const key = shipmentKey(state.tenantId, state.orderId);
    const scope = new CancellationScope();
    let settled = false;
    let shipmentId: string | undefined;
    let recorded: RecordedShipment | undefined;
    let failure: unknown;
    const input = {
      tenantId: state.tenantId,
      orderId: state.orderId,
      key,
      lines: placement.lines,
      shippingAddress: placement.shippingAddress,
      correlationId: state.correlationId,
    };
    // The cheaper shape ships and records the shipment in one activity (a PostgreSQL failure after the warehouse
    // shipped hands the record back to the store path below).
    const cheap = this.cheap;
    const shipping = scope
      .run(async () => {
        if (cheap)
          recorded = await warehouse.shipAndRecordOrder.executeWithOptions(
            { ...warehousePolicy, summary: 'ship via warehouse' },
            [input],
          );
        else shipmentId = await warehouse.shipOrder(input);
      })
      .catch((err: unknown) => void (failure = err))
      .finally(() => void (settled = true));

    let cancelledBy: OrderEvent | undefined;
    while (!settled && !cancelledBy) {
      await condition(() => settled || this.inbox.length > 0);
      while (!settled && this.inbox.length > 0) {
        if (cancelsShipment(this.state, this.inbox[0]!)) {
          cancelledBy = this.inbox.shift();
          scope.cancel();
          break;
        }
        await this.handle(this.inbox.shift()!);
      }
    }
    await shipping;
    if (cheap) return this.settleShipment(key, cancelledBy, recorded, failure);

    if (cancelledBy) {
      await this.handle(cancelledBy);
      await this.compensate(key);
      return;
    }
    if (shipmentId !== undefined) await this.markShipped(shipmentId, key);
    else if (!isCancellation(failure)) await this.markFailed(failureReason(failure));
    this.publishStatus();
  }

  /**
   * What the one shipping activity left (cheaper-orders). Recorded as shipped: the order is shipped, and a
   * cancellation that arrived meanwhile is a late one, recorded and refused by the store like any other. Otherwise
   * as before: a cancellation is recorded and the shipment recalled; a store that holds the order otherwise wins
   * and the shipment is recalled; a shipment the store has not recorded yet is recorded through the store path; a
   * warehouse that gave up holds the order as failed.
   */
  private async settleShipment(
    key: string,
    cancelledBy: OrderEvent | undefined,
    recorded: RecordedShipment | undefined,
    failure: unknown,
  ): Promise<void> {
    if (recorded?.stored.status === 'shipped') {
      this.state = markShipped(this.state, recorded.shipmentId);
      this.publishStatus();
      if (cancelledBy) await this.handle(cancelledBy);
      return;
    }
    if (cancelledBy) {
      await this.handle(cancelledBy);
      await this.compensate(key);
      return;
    }
    const unrecorded = unrecordedShipmentId(failure);
    if (recorded) {
      this.state = {
        ...this.state,
        status: recorded.stored.status === 'pending' ? 'cancelled' : recorded.stored.status,
      };
      await this.compensate(key);
    } else if (unrecorded !== undefined) await this.markShipped(unrecorded, key);
    else if (!isCancellation(failure)) await this.markFailed(failureReason(failure));
    this.publishStatus();
  }

  /** Records the shipment; when the store refuses (cancelled underneath us) the store wins and it is recalled. */
  private async markShipped(shipmentId: string, key: string): Promise<void> {
    const { tenantId, orderId } = this.state;
    const stored = await this.durably('mark shipped', () =>
      this.storeEffect('markOrderShipped', 'record shipped', [{ tenantId, orderId, shipmentId }]),
    );
    if (stored.status === 'shipped') {
      this.state = markShipped(this.state, shipmentId);
      return;
    }
    this.state = { ...this.state, status: stored.status === 'pending' ? 'cancelled' : stored.status };
    await this.compensate(key);
  }

  /** Holds the order as failed with the reason once the warehouse gave up; after retry n the claim is per retry. */
  private async markFailed(reason: string): Promise<void> {
    const { tenantId, orderId } = this.state;
    const retry = retriesOf(this.state);
    const input =
      retry > 0 && patched(RETRY_FAILED_ORDERS) ? { tenantId, orderId, reason, retry } : { tenantId, orderId, reason };
    await this.durably('mark failed', () => this.storeEffect('markOrderFailed', 'record failed', [input]));
    this.state = markFailed(this.state, reason);
  }

  /** Compensation: recalls the shipment made under `key`; the warehouse burns the key, so nothing ships after. */
  async compensate(key: string): Promise<void> {
    const existed = await this.durably('recall shipment', () =>
      warehouse.recallShipment.executeWithOptions({ ...warehousePolicy, summary: 'recall shipment' }, [{ key }]),
    );
    this.state = withNote(
      this.state,
      existed ? `compensated: shipment ${key} recalled` : `compensated: shipment ${key} blocked before it shipped`,
    );
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
   * Publishes the order's status as the OrderStatus search attribute when it changed. In the cheaper shape the
   * first shipment's `pending` is not published (it lasts as long as the shipment; the attribute says `new` until
   * the order settles); a retried order's is.
   */
  publishStatus(): void {
    if (this.state.status === 'pending' && !this.state.retries && this.cheap) return;
    if (this.indexed && this.publishedStatus !== this.state.status) {
      upsertSearchAttributes([{ key: OrderStatusAttribute, value: this.state.status }]);
      this.publishedStatus = this.state.status;
    }
  }

  /**
   * Waits until an event (or an accepted retry) arrives or `deadline` (workflow time, ms) passes; true when one
   * arrived. In the cheaper shape the window's one timer keeps running across the events that arrive in it.
   */
  private async waitForEvent(deadline?: number, summary?: string): Promise<boolean> {
    const arrived = () => this.inbox.length > 0 || this.retries.length > 0;
    if (deadline === undefined) {
      await condition(arrived);
      return true;
    }
    const remaining = deadline - Date.now();
    if (!this.cheap) return remaining > 0 && (await condition(arrived, remaining, { summary }));
    if (this.window?.deadline !== deadline || this.window.summary !== summary) {
      this.closeWindow();
      if (remaining <= 0) return false;
      const window = { deadline, summary: summary ?? 'wait', scope: new CancellationScope(), passed: false };
      window.scope
        .run(() => sleep(remaining, { summary }))
        .then(
          () => void (window.passed = true),
          () => undefined,
        );
      this.window = window;
    }
    const window = this.window!;
    await condition(() => arrived() || window.passed);
    if (arrived()) return true;
    this.window = undefined;
    return false;
  }

  /** Cancels the window's timer when the order left the status it was for (cheaper-orders). */
  private closeWindow(): void {
    if (this.window && !this.window.passed) this.window.scope.cancel();
    this.window = undefined;
  }

  private async report(
    event: OrderEvent,
    outcome: EventOutcomeReport,
    layer: 'workflow' | 'store',
    detail?: string,
  ): Promise<void> {
    if (this.cheap) {
      const { eventId, type, tenantId, orderId, orderVersion, correlationId, occurredAt } = event;
      outcomes.report({
        event: { eventId, type, tenantId, orderId, orderVersion, correlationId, occurredAt },
        outcome,
        layer,
        detail,
      } satisfies OutcomeReport);
      return;
    }
    await reporting.reportOutcome({ event, outcome, layer, detail }).catch(() => undefined);
  }
}
