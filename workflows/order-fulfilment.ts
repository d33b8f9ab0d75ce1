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
  condition,
  continueAsNew,
  makeContinueAsNewFunc,
  setHandler,
  setWorkflowOptions,
  workflowInfo,
} from '@temporalio/workflow';
import {
  orderEventSignal,
  orderStatusQuery,
  resumeShipmentSignal,
  signalledEvents,
  type OrderView,
  type OrderWorkflowInput,
} from './api.js';
import { FailureType } from '../src/vocabulary/order.js';
import {
  cancelsShipment,
  expireTombstone,
  fromStored,
  isSettled,
  needsPerson,
  toView,
  withNote,
} from './order-state.js';
import { storeEffect } from './store-effects.js';
import { OrderRun } from './order-run.js';
import { EventWindow } from './event-window.js';
import { Shipment } from './order-shipment.js';
import { EventHandling } from './event-handling.js';
import { OperatorActions } from './operator-actions.js';
import { VersionMove } from './version-move.js';

/** What the Web UI's Event History says for each timer (user metadata). */
const GRACE_WINDOW = 'cancellation grace window';
const LINGER = 'linger for late events';

/**
 * The workflow: one order from its first event until it settles (and, with a linger, lingers out). Each pass handles
 * what has arrived, then takes the step the order's status calls for; long runs continue as new with their state.
 */
export async function orderFulfilmentV2(input: OrderWorkflowInput): Promise<OrderView> {
  const order = new OrderFulfilment(input);
  const { run } = order;
  // Each async call costs the SDK's promise hook a captured stack (docs/performance.md): the loop calls only what has
  // work, and decides a settled order's end without one.
  if (order.loading) await order.loadFromStore();
  for (;;) {
    if (run.hasWork()) await order.drainInbox();
    const { events: _delivered, ...rest } = input;
    const next = { ...rest, carried: { state: run.state, inbox: run.inbox } };
    // A newer version is current: a waiting order moves to it, carrying its state (upgrade on continue-as-new) — only
    // forward, never back to an older version (a rollback) or onto a ramp (src/adapters/deployment/move-rule.ts).
    if (order.versionMove.ready() && (await order.versionMove.mayMoveForward())) await upgradeAsNew(next);
    if (order.readyToContinueAsNew()) await continueAsNew<typeof orderFulfilmentV2>(next);
    if (order.closesNow()) break;
    if (!order.shipment.settleFromQuickPath() && (await order.step()) === 'done') break;
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

/**
 * One run of an order's workflow, composed of its concerns, each owning its state: the run (order-run.ts), the wait
 * for an event, the shipment, the handling of events, the operator's requests and the version move. Its own state is
 * what the main loop needs between steps: the repair's load and the linger.
 */
class OrderFulfilment {
  readonly run: OrderRun;
  readonly window: EventWindow;
  readonly shipment: Shipment;
  readonly events: EventHandling;
  readonly operator: OperatorActions;
  readonly versionMove: VersionMove;
  /** A repair run (input.repair): it starts from the store's row; `loading` until that is read. */
  private readonly repair: boolean;
  /** True until a repair run has read the store (loadFromStore). */
  loading: boolean;
  /** The settled status the linger deadline was counted for (lingerDeadline). */
  private lingerFor?: string;

  constructor(input: OrderWorkflowInput) {
    const run = new OrderRun(input);
    this.run = run;
    this.window = new EventWindow(run);
    this.shipment = new Shipment(run, this.window);
    this.events = new EventHandling(run, this.shipment);
    this.operator = new OperatorActions(run, this.shipment);
    this.versionMove = new VersionMove(run);
    this.repair = input.repair === true;
    this.loading = this.repair && input.carried === undefined;
    // A settled order carried across continue-as-new keeps its linger deadline.
    if (isSettled(run.state) && run.state.lingerEndsAt !== undefined) this.lingerFor = run.state.status;
    // One event, or several of the order (oldest first); a list reaches the earlier type too (a handler is no command).
    setHandler(orderEventSignal, (arg) => {
      run.inbox.push(...signalledEvents(arg));
    });
    setHandler(orderStatusQuery, () => toView(run.state));
    setHandler(resumeShipmentSignal, () => this.shipment.wake());
    // The operator's updates (operator-actions.ts): validated, then queued for the main loop.
    this.operator.setHandlers(() => this.loading);
  }

  /** A repair run reads the order from the store first; the operator's request then meets what the store holds. */
  async loadFromStore(): Promise<void> {
    const { run } = this;
    const { tenantId, orderId } = run.state;
    const detail = await run.durably('load the order', () =>
      storeEffect('loadOrder', 'load the order from the store', { tenantId, orderId }),
    );
    if (detail) run.state = fromStored(run.state, detail);
    else run.state = withNote(run.state, 'loaded from the store: no such order');
    // The run this one repairs may have left a shipment attempt in flight (a terminated run's activity runs on).
    if (run.state.status === 'pending' && run.state.placement !== undefined) this.shipment.inheritAttempt();
    this.loading = false;
  }

  /**
   * True when the history should be cut — Temporal suggests it, or it reached `continueAsNewAfterEvents` — and
   * nothing is waiting to be handled.
   */
  readyToContinueAsNew(): boolean {
    const { continueAsNewSuggested, historyLength } = workflowInfo();
    const limit = this.run.settings.continueAsNewAfterEvents;
    const long = continueAsNewSuggested || (limit !== undefined && historyLength >= limit);
    return long && !this.run.hasWork();
  }

  /** Handles every event that has arrived, one at a time, in arrival order; then any accepted operator's request. */
  async drainInbox(): Promise<void> {
    const { run } = this;
    while (run.hasWork()) {
      if (run.inbox.length > 0) await this.events.handle(run.inbox.shift()!);
      else await this.operator.applyNext();
    }
  }

  /** True when the run ends at once: its order settled with no linger (the step a settled order takes, without one). */
  closesNow(): boolean {
    return isSettled(this.run.state) && this.lingerDeadline() === undefined;
  }

  /** The step the order's status calls for; 'done' once a settled order lingered (or not at all) without a new event. */
  async step(): Promise<'continue' | 'done'> {
    const { run } = this;
    const { state } = run;
    // Out of a settled status (a retry reopened it): its next settling lingers anew.
    if (!isSettled(state)) this.lingerFor = undefined;
    if (state.status === 'new') {
      // A repair run that found no order ends (failed: the id stays free) once nothing is left to handle.
      if (this.repair) return 'done';
      await this.window.waitForEvent();
    } else if (state.status === 'awaiting-placement') {
      if (!(await this.window.waitForEvent(state.graceEndsAt, GRACE_WINDOW))) {
        run.state = expireTombstone(state);
        run.publishStatus();
      }
    } else if (state.status === 'pending' && state.waiting) {
      await this.shipment.waitForWarehouse();
    } else if (state.status === 'pending') {
      this.window.close();
      await this.ship();
    } else if (isSettled(state)) {
      const deadline = this.lingerDeadline();
      if (deadline === undefined || !(await this.window.waitForEvent(deadline, LINGER))) return 'done';
    }
    return 'continue';
  }

  /**
   * Ships the order and records the shipment (order-shipment.ts). While the attempt is in flight, events that cannot
   * stop it are handled; a cancellation stops it (waiting until it has stopped), is recorded, and the shipment is
   * recalled. One that came while the attempt recorded the shipment anyway is a late one, recorded and refused by the
   * store like any other.
   */
  private async ship(): Promise<void> {
    const { run } = this;
    const attempt = await this.shipment.begin();
    if (attempt === undefined) return;
    while (attempt.inFlight()) {
      await condition(() => attempt.hasStopped() || run.inbox.length > 0);
      while (!attempt.hasStopped() && run.inbox.length > 0) {
        if (cancelsShipment(run.state, run.inbox[0]!)) {
          attempt.cancel(run.inbox.shift()!);
          break;
        }
        await this.events.handle(run.inbox.shift()!);
      }
    }
    await attempt.done;
    const { cancelledBy } = attempt;
    if (cancelledBy !== undefined && !attempt.shipped()) {
      await this.events.handle(cancelledBy);
      await this.shipment.compensate(attempt.key);
      return;
    }
    await this.shipment.settle(attempt);
    if (cancelledBy !== undefined) await this.events.handle(cancelledBy);
  }

  /**
   * When a settled order's run closes (workflow time, ms), undefined for at once (`lingerSeconds` 0, the default).
   * Counted from when the order took the status it settled in, so a failed order that a late cancellation settles
   * as cancelled lingers anew.
   */
  private lingerDeadline(): number | undefined {
    const { run } = this;
    const { status } = run.state;
    if (this.lingerFor !== status) {
      this.lingerFor = status;
      const seconds = run.settings.lingerSeconds;
      run.state = { ...run.state, lingerEndsAt: seconds > 0 ? Date.now() + seconds * 1000 : undefined };
    }
    return run.state.lingerEndsAt;
  }
}
