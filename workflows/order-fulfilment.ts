/**
 * One workflow per order (id from orderWorkflowId, type ORDER_WORKFLOW_TYPE). Every event for the order arrives on
 * the orderEvent signal, one or several at a time (or with the start itself, when it was started eagerly), so Temporal
 * serialises them across partitions and bridge instances; the pure state machine (order-state.ts) decides what each
 * means, and activities apply it to PostgreSQL and the warehouse.
 *
 * An order held for a person ends its run failed (FailureType.orderFailed), a shipped or cancelled one completes. No
 * event reopens a closed run (the bridge starts with REJECT_DUPLICATE): a late event is recorded through the store by
 * the bridge, or — where it leaves work for the order — handed to a run started from the store (input.repair), as is
 * an operator's repair.
 *
 * An order that goes well costs one workflow task: its placement is recorded and its shipment made and recorded by
 * local activities inside the task its first event started, the OrderStatus search attribute is upserted once when
 * it settles, and the run closes in that same task (ORDER_LINGER_SECONDS 0, the default) — eight history events in
 * all, seven when it was started eagerly (no signal event). Every step keeps its durable fallback: a store effect whose quick attempts give up runs as an activity under
 * the full policy; a shipment the warehouse does not make within the quick attempt runs as the heartbeating
 * activity, which a cancellation can stop.
 *
 * Rules a reader must not break:
 * - no I/O, clocks or randomness but Temporal's (this file is replayed);
 * - events are handled one at a time, in arrival order, by the main loop — handlers only enqueue;
 * - a cancellation the workflow sees before the shipment is recorded wins: it stops the shipment (waiting until
 *   the shipping activity has stopped), is recorded, and the shipment is recalled — the warehouse burns the key, so
 *   nothing ships after the recall. So is one recorded over a shipment attempt the workflow no longer follows (the
 *   quick attempt that ran out of time, a failed order's). One the workflow sees after the shipment was recorded is
 *   a late cancellation, recorded and refused by the store;
 * - the workflow is pinned: a running order finishes on the worker version (build) it started on, so a change here
 *   ships as a new version, with no patch; what crosses versions — the continue-as-new input (`carried`), signals,
 *   updates and queries — stays compatible (docs/changing-the-workflow.md). The replay gate replays the histories
 *   recorded on this code (test/histories/) and each earlier version's on its own code.
 *
 * Re-driving a held order (`fulfilment order retry`): to the run of an order held as `failed` while it is open (with a
 * linger), else to a repair run, an operator sends the `retryShipment` update (api.ts); its validator refuses,
 * recording nothing, unless the order is `failed`. An accepted retry is applied by the main loop: the store moves
 * the order failed → pending (claim `retry/<tenant>/<order>/<n>`), and the order ships again under the same key.
 */
import {
  ApplicationFailure,
  continueAsNew,
  isCancellation,
  makeContinueAsNewFunc,
  setHandler,
  setWorkflowOptions,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { PlacedAndShipped, RecordedShipment } from '../activities/index.js';
import { HOLD_BEFORE_RETRYING } from './activity-options.js';
import {
  OrderStatusAttribute,
  TenantIdAttribute,
  orderEventSignal,
  orderStatusQuery,
  resumeShipmentSignal,
  signalledEvents,
  type OrderView,
  type OrderWorkflowInput,
} from './api.js';
import { FailureType, ORDER_PLACED, type OrderEvent, type ShipmentWaitDetails } from '../src/vocabulary/order.js';
import {
  applyResolve,
  applyRetry,
  setRequestHandlers,
  type OperatorRunPort,
  type PendingRequest,
} from './operator-actions.js';
import {
  expireTombstone,
  fromStored,
  initialOrderState,
  isSettled,
  needsPerson,
  retriesOf,
  toView,
  withNote,
  type OrderState,
} from './order-state.js';
import { failureReason, isNonRetryable } from './failures.js';
import { storeEffect } from './store-effects.js';
import * as shipment from './order-shipment.js';
import type { ShipmentRunPort } from './order-shipment.js';
import * as events from './event-handling.js';
import type { EventRunPort } from './event-handling.js';
import * as eventWindow from './event-window.js';
import type { EventWindow, WindowRunPort } from './event-window.js';
import * as versionMove from './version-move.js';
import type { VersionMoveRunPort } from './version-move.js';

/** What the Web UI's Event History says for each timer (user metadata). */
const GRACE_WINDOW = 'cancellation grace window';
const LINGER = 'linger for late events';
const HOLD = 'hold before retrying';
/** The OrderStatus search attribute of an order whose shipment waits for the warehouse (not a status of the store). */
const WAITING_STATUS = 'waiting';

/**
 * The workflow: one order from its first event until it settles (and, with a linger, lingers out). Each pass handles
 * what has arrived, then takes the step the order's status calls for; long runs continue as new with their state.
 */
export async function orderFulfilmentV2(input: OrderWorkflowInput): Promise<OrderView> {
  const run = new OrderRun(input);
  // Each async call costs the SDK's promise hook a captured stack (docs/performance.md): the loop calls only what has
  // work, and decides a settled order's end without one.
  if (run.loading) await run.loadFromStore();
  for (;;) {
    if (run.hasWork()) await run.drainInbox();
    const { events: _delivered, ...rest } = input;
    const next = { ...rest, carried: { state: run.state, inbox: run.inbox } };
    // A newer version is current: a waiting order moves to it, carrying its state (upgrade on continue-as-new) — only
    // forward, never back to an older version (a rollback) or onto a ramp (src/adapters/deployment/move-rule.ts).
    if (run.readyToMoveToNewVersion() && (await run.mayMoveForward())) await upgradeAsNew(next);
    if (run.readyToContinueAsNew()) await continueAsNew<typeof orderFulfilmentV2>(next);
    if (run.closesNow()) break;
    if (!run.settledByQuickShipment() && (await run.step()) === 'done') break;
  }
  const view = toView(run.state);
  // An order that needs a person is not final (an operator may repair it, a late cancellation may settle it): its run
  // ends failed, so the Web UI and `temporal workflow list` tell it from a settled one. So does a repair run that found
  // no order in the store (its placement, arriving later, gets a run from the store).
  if (needsPerson(run.state) || view.status === 'new') {
    throw ApplicationFailure.create({
      type: FailureType.orderFailed,
      message: endedUnsettled(view),
      nonRetryable: true,
      details: [view],
    });
  }
  return view;
}

/**
 * Continues as new on the deployment's current version rather than this run's (the new run's first task goes to the
 * current version, and it is pinned there): the input's `carried` is the contract between versions.
 */
const upgradeAsNew = makeContinueAsNewFunc<typeof orderFulfilmentV2>({ initialVersioningBehavior: 'AUTO_UPGRADE' });

// Pinned: an order runs to its end on the worker version (the build) it started on, so a new version's changed commands
// never meet an old order's history; new orders start on the deployment's current version (docs/changing-the-workflow.md).
setWorkflowOptions({ versioningBehavior: 'PINNED' }, orderFulfilmentV2);

function endedUnsettled(view: OrderView): string {
  const order = `order ${view.tenantId}/${view.orderId}`;
  if (view.status === 'new') return `${order}: nothing to repair, the store holds no such order`;
  const held = view.status === 'failed' ? 'held as failed' : 'held as recall-failed (its shipment was not recalled)';
  return `${order} ${held}: ${view.failureReason ?? 'no reason recorded'}`;
}

/** One run of an order's workflow: its state, its inbox of events, and one method per step. */
class OrderRun implements OperatorRunPort, ShipmentRunPort, EventRunPort, VersionMoveRunPort, WindowRunPort {
  state: OrderState;
  readonly inbox: OrderEvent[];
  /** Accepted operator requests, oldest first; the head stays until applied. Never carried (handlers wait). */
  readonly requests: PendingRequest[] = [];
  readonly settings: OrderWorkflowInput['settings'];
  /** A repair run (input.repair): it starts from the store's row; `loading` until that is read. */
  private readonly repair: boolean;
  /** True until a repair run has read the store (loadFromStore). */
  loading: boolean;
  /**
   * A repair run that found the order pending: an attempt of the run it replaces may still reach the warehouse, so a
   * cancellation it records recalls the key, as one over the first run's own abandoned attempt does.
   */
  inheritedAttempt = false;
  /** When (workflow time) and why the worker last refused a version move (mayMoveForward). */
  moveRefusedAt?: number;
  moveRefusal?: string;
  /** Only a run the starter indexed (TenantId set) publishes its status, so servers without these attributes work. */
  private readonly indexed = workflowInfo().typedSearchAttributes.get(TenantIdAttribute) !== undefined;
  /** The status the search attribute holds: what the starter set (`new`; a repair, the stored status). */
  private publishedStatus: string = workflowInfo().typedSearchAttributes.get(OrderStatusAttribute) ?? 'new';
  /**
   * What the placement's quick path (placeAndShip) did about the shipment, for the next ship(): the shipment it made
   * and recorded, to settle from; or 'tried' when it asked the warehouse and did not ship, so ship() goes straight to
   * the heartbeating activity.
   */
  quickShipment?: RecordedShipment | 'tried';
  /** The settled status the linger deadline was counted for (lingerDeadline). */
  private lingerFor?: string;
  /**
   * A resumeShipment signal arrived since the current shipment attempt began: an attempt that comes back waiting
   * tries again at once (the resumer woke the order while the attempt was failing, or to probe the warehouse).
   */
  resumeRequested = false;
  /** The one timer of the grace or linger window in progress, kept while events arrive. */
  window?: EventWindow;

  constructor(input: OrderWorkflowInput) {
    this.settings = input.settings;
    this.repair = input.repair === true;
    this.loading = this.repair && input.carried === undefined;
    this.state = (input.carried?.state as OrderState | undefined) ?? initialOrderState(input.tenantId, input.orderId);
    this.inbox = [...(input.carried?.inbox ?? []), ...(input.events ?? [])];
    // A settled order carried across continue-as-new keeps its linger deadline.
    if (isSettled(this.state) && this.state.lingerEndsAt !== undefined) this.lingerFor = this.state.status;
    // One event, or several of the order (oldest first); a list reaches the earlier type too (a handler is no command).
    setHandler(orderEventSignal, (arg) => {
      this.inbox.push(...signalledEvents(arg));
    });
    setHandler(orderStatusQuery, () => toView(this.state));
    setHandler(resumeShipmentSignal, () => void (this.resumeRequested = true));
    // The operator's updates (operator-actions.ts): validated, then queued for the main loop.
    setRequestHandlers(this);
  }

  /** A repair run reads the order from the store first; the operator's request then meets what the store holds. */
  async loadFromStore(): Promise<void> {
    const { tenantId, orderId } = this.state;
    const detail = await this.durably('load the order', () =>
      storeEffect('loadOrder', 'load the order from the store', { tenantId, orderId }),
    );
    if (detail) this.state = fromStored(this.state, detail);
    else this.state = withNote(this.state, 'loaded from the store: no such order');
    // The run this one repairs may have left a shipment attempt in flight (a terminated run's activity runs on).
    this.inheritedAttempt = this.state.status === 'pending' && this.state.placement !== undefined;
    this.loading = false;
  }

  /**
   * True when the history should be cut — Temporal suggests it, or it reached `continueAsNewAfterEvents` — and
   * nothing is waiting to be handled.
   */
  readyToContinueAsNew(): boolean {
    const { continueAsNewSuggested, historyLength } = workflowInfo();
    const limit = this.settings.continueAsNewAfterEvents;
    const long = continueAsNewSuggested || (limit !== undefined && historyLength >= limit);
    return long && !this.hasWork();
  }

  /** True when a newer worker version is current and nothing is waiting to be handled (version-move.ts). */
  readyToMoveToNewVersion(): boolean {
    return versionMove.readyToMoveToNewVersion(this);
  }

  /** Asks the worker whether the move Temporal offers goes forward; a definite refusal is noted (version-move.ts). */
  mayMoveForward(): Promise<boolean> {
    return versionMove.mayMoveForward(this);
  }

  /** True when an event or an accepted operator's request waits to be handled (drainInbox). */
  hasWork(): boolean {
    return this.inbox.length > 0 || this.requests.length > 0;
  }

  /** Handles every event that has arrived, one at a time, in arrival order; then any accepted operator's request. */
  async drainInbox(): Promise<void> {
    while (this.hasWork()) {
      if (this.inbox.length > 0) {
        await this.handle(this.inbox.shift()!);
      } else {
        const next = this.requests[0]!;
        await (next.kind === 'retry' ? applyRetry(this, next) : applyResolve(this, next));
        this.requests.shift();
      }
    }
  }

  /** True when the run ends at once: its order settled with no linger (the step a settled order takes, without one). */
  closesNow(): boolean {
    return isSettled(this.state) && this.lingerDeadline() === undefined;
  }

  /**
   * The step a pending order takes when the placement's quick path shipped it and the store recorded the shipment
   * (ship() settling from placeAndShip's answer), taken without an async call; false when that is not the case.
   */
  settledByQuickShipment(): boolean {
    const quick = this.quickShipment;
    if (this.state.status !== 'pending' || this.state.waiting || quick === undefined || quick === 'tried') return false;
    if (quick.stored.status !== 'shipped') return false;
    this.closeWindow();
    this.quickShipment = undefined;
    shipment.settleShipped(this, quick);
    return true;
  }

  /** The step the order's status calls for; 'done' once a settled order lingered (or not at all) without a new event. */
  async step(): Promise<'continue' | 'done'> {
    const { state } = this;
    // Out of a settled status (a retry reopened it): its next settling lingers anew.
    if (!isSettled(state)) this.lingerFor = undefined;
    if (state.status === 'new') {
      // A repair run that found no order ends (failed: the id stays free) once nothing is left to handle.
      if (this.repair) return 'done';
      await this.waitForEvent();
    } else if (state.status === 'awaiting-placement') {
      if (!(await this.waitForEvent(state.graceEndsAt, GRACE_WINDOW))) {
        this.state = expireTombstone(state);
        this.publishStatus();
      }
    } else if (state.status === 'pending' && state.waiting) {
      await shipment.waitForWarehouse(this);
    } else if (state.status === 'pending') {
      this.closeWindow();
      await shipment.ship(this);
    } else if (isSettled(state)) {
      const deadline = this.lingerDeadline();
      if (deadline === undefined || !(await this.waitForEvent(deadline, LINGER))) return 'done';
    }
    return 'continue';
  }

  /**
   * When a settled order's run closes (workflow time, ms), undefined for at once (`lingerSeconds` 0, the default).
   * Counted from when the order took the status it settled in, so a failed order that a late cancellation settles
   * as cancelled lingers anew.
   */
  private lingerDeadline(): number | undefined {
    const { status } = this.state;
    if (this.lingerFor !== status) {
      this.lingerFor = status;
      const seconds = this.settings.lingerSeconds;
      this.state = { ...this.state, lingerEndsAt: seconds > 0 ? Date.now() + seconds * 1000 : undefined };
    }
    return this.state.lingerEndsAt;
  }

  /** Decides what one event means and records it through the store, whose answer is the state (event-handling.ts). */
  handle(event: OrderEvent): Promise<void> {
    return events.handle(this, event);
  }

  // The warehouse steps (order-shipment.ts) that handle() takes, and the operator's appliers (OperatorRunPort).

  /** The quick path of an order's first placement: its record and shipment in one local activity. */
  placeAndShip(event: Extract<OrderEvent, { type: typeof ORDER_PLACED }>): Promise<PlacedAndShipped | undefined> {
    return shipment.placeAndShip(this, event);
  }

  /** The shipment met the warehouse down for everyone, or shipping paused: the order waits. */
  waitFor(wait: ShipmentWaitDetails): void {
    shipment.waitFor(this, wait);
  }

  /** Recalls the shipment made under `key`; a recall refused for good holds the order as recall-failed. */
  compensate(key: string): Promise<void> {
    return shipment.compensate(this, key);
  }

  /** Recalls the shipment under `key`: undefined when done, else the warehouse's refusal. */
  recall(key: string): Promise<string | undefined> {
    return shipment.recall(this, key);
  }

  /** Records the order recall-failed with the warehouse's refusal. */
  holdRecallFailed(reason: string): Promise<void> {
    return shipment.holdRecallFailed(this, reason);
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

  /** Waits until an event or an accepted request arrives or `deadline` passes; true when one did (event-window.ts). */
  waitForEvent(deadline?: number, summary?: string, woken?: () => boolean): Promise<boolean> {
    return eventWindow.waitForEvent(this, deadline, summary, woken);
  }

  /** Cancels the window's timer when the order left the status it was for. */
  closeWindow(): void {
    eventWindow.closeWindow(this);
  }
}
