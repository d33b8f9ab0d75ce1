/**
 * The warehouse half of an order's run (orderFulfilmentV2, order-fulfilment.ts): the shipment — the placement's quick
 * path, the heartbeating activity, what the shipment left — the wait for a warehouse down for everyone (or shipping
 * paused), and the recall that compensates a shipment a cancellation overtook. The shipment owns what it knows of
 * its attempts (what the quick path did, a wake-up that came while one was failing, an attempt a replaced run may
 * have left in flight); the event handling, the operator's actions and the main loop call it, and it calls only the
 * run and the event window. Its steps issue the run's commands: a change here is a change of the workflow, held by
 * the replay gate like one in order-fulfilment.ts (docs/changing-the-workflow.md). Deterministic code only (bundled
 * into the sandbox).
 */
import { ActivityCancellationType, isCancellation, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { OrderActivities, PlacedAndShipped, RecordedShipment, ShipInput } from '../activities/index.js';
import { QUICK_SHIPMENT, WAREHOUSE_ACTIVITY } from './activity-options.js';
import {
  NON_RETRYABLE_FAILURES,
  ORDER_PLACED,
  shipmentKey,
  type OrderEvent,
  type OrderPlacedData,
  type ShipmentWaitDetails,
  type StoredOrder,
} from '../src/vocabulary/order.js';
import {
  endWait,
  markFailed,
  markRecallFailed,
  markShipped,
  markWaiting,
  metPastDeadline,
  recallFailuresOf,
  retriesOf,
  waitDeadline,
  withNote,
} from './order-state.js';
import {
  failureReason,
  isNonRetryable,
  quickThenDurable,
  shipmentWait,
  unrecordedShipmentId,
} from './activity-failures.js';
import { storeEffect } from './store-effects.js';
import type { OrderRun } from './order-run.js';
import type { EventWindow } from './event-window.js';
import { ShipmentAttempt } from './shipment-attempt.js';

const nonRetryable = { nonRetryableErrorTypes: [...NON_RETRYABLE_FAILURES] };

/**
 * The warehouse call as an activity: long-running, heartbeating, bounded retries; exhausted attempts hold the order
 * as failed. A cancellation waits until the activity has stopped, so nothing records the shipment behind it.
 */
const warehousePolicy = {
  ...WAREHOUSE_ACTIVITY,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { ...WAREHOUSE_ACTIVITY.retry, ...nonRetryable },
};
const warehouse = proxyActivities<OrderActivities>(warehousePolicy);

/** The quick shipment: the same activity, local, inside the workflow task, for as long as QUICK_SHIPMENT allows. */
const quickShipPolicy = {
  ...QUICK_SHIPMENT,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: { ...QUICK_SHIPMENT.retry, ...nonRetryable },
};
const quickWarehouse = proxyLocalActivities<OrderActivities>(quickShipPolicy);
/** The placement and the shipment as one local activity (placeAndShip), under the quick shipment's policy. */
const quickPlacement = quickWarehouse;

/** What the Web UI's Event History says for the timer of a wait for the warehouse (user metadata). */
const WAREHOUSE_WAIT = 'wait for the warehouse';
/** How long a waiting order waits for a wake-up before it tries again by itself, when its wait did not say (seconds). */
const DEFAULT_RECHECK_SECONDS = 300;

/** The order's shipment: its attempts, the waits for the warehouse, and the recall. */
export class Shipment {
  /**
   * What the placement's quick path (placeAndShip) did about the shipment, for the next ship(): the shipment it made
   * and recorded, to settle from; or 'tried' when it asked the warehouse and did not ship, so ship() goes straight to
   * the heartbeating activity.
   */
  private quick?: RecordedShipment | 'tried';
  /**
   * A resumeShipment signal arrived since the current shipment attempt began: an attempt that comes back waiting
   * tries again at once (the resumer woke the order while the attempt was failing, or to probe the warehouse).
   */
  private resumeRequested = false;
  /**
   * A repair run that found the order pending: an attempt of the run it replaces may still reach the warehouse, so a
   * cancellation it records recalls the key, as one over the first run's own abandoned attempt does.
   */
  private inheritedAttempt = false;

  constructor(
    private readonly run: OrderRun,
    private readonly window: EventWindow,
  ) {}

  /** The resumeShipment signal: the resumer (or an operator's resume) woke the order. */
  wake(): void {
    this.resumeRequested = true;
  }

  /** A repair run found the order pending: the run it replaces may have left a shipment attempt in flight. */
  inheritAttempt(): void {
    this.inheritedAttempt = true;
  }

  /**
   * What the placement's quick path did, for the next ship(): shipped with it; or tried and not shipped, or not known
   * (it ran out of time, most likely on a slow warehouse) — the quick attempt is spent, and ship() goes to the
   * heartbeating activity.
   */
  noteQuickPath(placed: PlacedAndShipped | undefined, stored: StoredOrder): void {
    this.quick = placed?.shipped ?? (stored.status === 'pending' && stored.placed ? 'tried' : undefined);
  }

  /**
   * True when a cancellation recorded now may have overtaken a shipment attempt the run no longer follows — the
   * order was held as failed (the store says `recall`), the placement's quick attempt gave up without knowing
   * whether the warehouse shipped (before ship() took over), the order was waiting for the warehouse (`waited`: only
   * runs that wait, so no earlier history meets it), or a repair run found the order pending (the replaced run's
   * attempt may be in flight). The key must then be recalled (burnt), or an attempt that lands afterwards would ship
   * a cancelled order; the quick path's answer is forgotten.
   */
  overtakenByCancellation(stored: StoredOrder, waited: boolean): boolean {
    // A waiting order's attempts may have reached the warehouse before it judged itself down (its runs all recall).
    if (waited) {
      this.quick = undefined;
      return true;
    }
    const abandoned = stored.recall === true || this.quick === 'tried' || this.inheritedAttempt;
    if (!abandoned) return false;
    this.quick = undefined;
    return true;
  }

  /**
   * The step a pending order takes when the placement's quick path shipped it and the store recorded the shipment,
   * taken without an async call; false when that is not the case.
   */
  settleFromQuickPath(): boolean {
    const { quick } = this;
    const { state } = this.run;
    if (state.status !== 'pending' || state.waiting || quick === undefined || quick === 'tried') return false;
    if (quick.stored.status !== 'shipped') return false;
    this.window.close();
    this.quick = undefined;
    this.settleShipped(quick);
    return true;
  }

  /**
   * The shipment met the warehouse down for everyone, or shipping paused: the order waits, without spending its
   * attempts, until the resumer (or an operator's resume) wakes it, an event moves it, it checks again by itself
   * (nothing woke it for the recheck time), or its shipment deadline passes. The deadline and the recheck time are
   * the worker's that met the wait (its details), else this run's settings. A wait for an outage found past the
   * deadline — the order's one more try at the deadline found the warehouse still down — holds the order as failed.
   */
  waitFor(wait: ShipmentWaitDetails): void {
    const { run } = this;
    const now = Date.now();
    const since = Date.parse(wait.since);
    const deadlineSeconds = wait.deadlineSeconds ?? run.settings.shipmentDeadlineSeconds ?? 0;
    // Spread: orders that began to wait together check again apart (Math.random is the workflow's seeded one).
    const recheckMs = (wait.recheckSeconds ?? DEFAULT_RECHECK_SECONDS) * 1000 * (0.8 + 0.4 * Math.random());
    run.state = markWaiting(run.state, {
      since: Number.isNaN(since) ? now : since,
      reason: wait.unrecorded ? `${wait.reason} (wait not recorded: ${wait.unrecorded})` : wait.reason,
      for: wait.for ?? 'outage',
      deadline: waitDeadline(now, deadlineSeconds),
      recheckAt: now + Math.round(recheckMs),
      metAt: now,
    });
    run.publishStatus();
  }

  /**
   * A waiting order: waits for a resumeShipment signal (then tries the warehouse again), an event or an operator's
   * request (handled next; a cancellation wins at once), its recheck time (then it tries again by itself), or its
   * shipment deadline (then it tries once more, and is held as failed if the warehouse is still down).
   */
  async waitForWarehouse(): Promise<void> {
    const { run } = this;
    const waiting = run.state.waiting!;
    if (metPastDeadline(run.state)) {
      await this.holdFailed(
        `waited for the warehouse since ${new Date(waiting.since).toISOString()}, past the order's shipment deadline (${new Date(run.state.shipmentDeadline!).toISOString()}): ${waiting.reason}`,
      );
      return run.publishStatus();
    }
    const wakeAt = [waiting.deadline, waiting.recheckAt].filter((t): t is number => t !== undefined);
    const at = wakeAt.length > 0 ? Math.min(...wakeAt) : undefined;
    const arrived = await this.window.waitForEvent(at, WAREHOUSE_WAIT, () => this.resumeRequested);
    if (this.resumeRequested) {
      this.window.close();
      run.state = endWait(run.state, 'woken: trying the warehouse again');
      return;
    }
    if (arrived) return;
    const pastDeadline = waiting.deadline !== undefined && Date.now() >= waiting.deadline;
    run.state = endWait(
      run.state,
      pastDeadline
        ? 'the shipment deadline passed: trying the warehouse once more'
        : 'nothing woke it: trying the warehouse again by itself',
    );
  }

  /**
   * The quick path of an order's first placement: placeAndShip as a local activity, which records the placement and,
   * when the store holds the order pending, ships it and records the shipment — the whole order in one marker. A
   * refusal of the record is thrown; when the quick attempt gave up otherwise (a slow warehouse, a store restart),
   * the answer is undefined and the order takes the durable path: the record as an activity if need be, then ship().
   */
  async placeAndShip(event: Extract<OrderEvent, { type: typeof ORDER_PLACED }>): Promise<PlacedAndShipped | undefined> {
    const input = this.shipInput(event.data, event.correlationId);
    try {
      return await quickPlacement.placeAndShip.executeWithOptions(
        {
          ...quickShipPolicy,
          summary: `record event ${event.type.replace(/^orders\./, '')} v${event.orderVersion} and ship via warehouse`,
        },
        [event, input],
      );
    } catch (err) {
      if (isNonRetryable(err) || isCancellation(err)) throw err;
      return undefined;
    }
  }

  /** What the warehouse is asked to ship for this order (the placement's lines and address, under the order's key). */
  private shipInput(placement: OrderPlacedData, correlationId: string | undefined): ShipInput {
    const { state, settings } = this.run;
    const { tenantId, orderId } = state;
    const waits = settings.shipmentDeadlineSeconds !== undefined ? { waitOnOutage: true as const } : {};
    const since = state.waitingSince;
    return {
      tenantId,
      orderId,
      key: shipmentKey(tenantId, orderId),
      lines: placement.lines,
      shippingAddress: placement.shippingAddress,
      correlationId,
      ...waits,
      ...(since !== undefined ? { waitingSince: new Date(since).toISOString() } : {}),
    };
  }

  /**
   * Begins shipping the order: settled at once from the answer of the placement's quick path when it made the
   * shipment (undefined is returned), else an attempt — the quick local attempt first, the heartbeating activity
   * when it gave up — which the main loop follows while it handles the events that cannot stop it, then settles.
   */
  async begin(): Promise<ShipmentAttempt | undefined> {
    const input = this.shipInput(this.run.state.placement!, this.run.state.correlationId);
    const { key } = input;
    const { quick } = this;
    this.quick = undefined;
    if (quick !== undefined && quick !== 'tried') {
      await this.settleShipment(key, quick, undefined);
      return undefined;
    }
    this.resumeRequested = false;
    const durable = () =>
      warehouse.shipAndRecordOrder.executeWithOptions({ ...warehousePolicy, summary: 'ship via warehouse' }, [input]);
    return new ShipmentAttempt(key, () =>
      quick === 'tried'
        ? durable()
        : quickThenDurable(
            () =>
              quickWarehouse.shipAndRecordOrder.executeWithOptions(
                { ...quickShipPolicy, summary: 'ship via warehouse' },
                [input],
              ),
            durable,
          ),
    );
  }

  /**
   * What an attempt that no cancellation stopped left — or one that recorded the shipment anyway, a cancellation
   * meanwhile being then a late one, for the caller to handle. Recorded as shipped: the order is shipped. A store that
   * holds the order otherwise wins and the shipment is recalled; a shipment the store did not record is recorded
   * through the store's own policy; a warehouse that gave up holds the order as failed.
   */
  settle(attempt: ShipmentAttempt): Promise<void> {
    return this.settleShipment(attempt.key, attempt.recorded, attempt.failure);
  }

  private async settleShipment(key: string, recorded: RecordedShipment | undefined, failure: unknown): Promise<void> {
    const { run } = this;
    if (recorded?.stored.status === 'shipped') return this.settleShipped(recorded);
    const unrecorded = unrecordedShipmentId(failure);
    const wait = shipmentWait(failure);
    if (wait) {
      this.waitFor(wait);
      return;
    }
    if (recorded) {
      run.state = {
        ...run.state,
        status: recorded.stored.status === 'pending' ? 'cancelled' : recorded.stored.status,
      };
      await this.compensate(key);
    } else if (unrecorded !== undefined) await this.recordShipped(unrecorded, key);
    else if (!isCancellation(failure)) await this.holdFailed(failureReason(failure));
    run.publishStatus();
  }

  /** The shipment recorded as shipped: the order is shipped. */
  private settleShipped(recorded: RecordedShipment): void {
    this.run.state = markShipped(this.run.state, recorded.shipmentId);
    this.run.publishStatus();
  }

  /** Records the shipment; when the store refuses (cancelled underneath us) the store wins and it is recalled. */
  private async recordShipped(shipmentId: string, key: string): Promise<void> {
    const { run } = this;
    const { tenantId, orderId } = run.state;
    const stored = await run.durably('mark shipped', () =>
      storeEffect('markOrderShipped', 'record shipped', { tenantId, orderId, shipmentId }),
    );
    if (stored.status === 'shipped') {
      run.state = markShipped(run.state, shipmentId);
      return;
    }
    run.state = { ...run.state, status: stored.status === 'pending' ? 'cancelled' : stored.status };
    await this.compensate(key);
  }

  /** Holds the order as failed with the reason once the warehouse gave up; after retry n the claim is per retry. */
  private async holdFailed(reason: string): Promise<void> {
    const { run } = this;
    const { tenantId, orderId } = run.state;
    const retry = retriesOf(run.state);
    await run.durably('mark failed', () =>
      storeEffect('markOrderFailed', 'record failed', { tenantId, orderId, reason, ...(retry > 0 ? { retry } : {}) }),
    );
    run.state = markFailed(run.state, reason);
  }

  /**
   * Compensation: recalls the shipment made under `key`; the warehouse burns the key, so nothing ships after. A
   * recall the warehouse refuses for good holds the order as recall-failed, for a person to resolve.
   */
  async compensate(key: string): Promise<void> {
    const refusal = await this.recall(key);
    if (refusal !== undefined) await this.holdRecallFailed(refusal);
  }

  /** Recalls the shipment under `key`: undefined when done, else the warehouse's refusal (a non-retryable failure). */
  async recall(key: string): Promise<string | undefined> {
    const { run } = this;
    let existed: boolean;
    try {
      existed = await run.durably('recall shipment', () =>
        warehouse.recallShipment.executeWithOptions({ ...warehousePolicy, summary: 'recall shipment' }, [{ key }]),
      );
    } catch (err) {
      if (!isNonRetryable(err)) throw err;
      return failureReason(err);
    }
    run.state = withNote(
      run.state,
      existed ? `compensated: shipment ${key} recalled` : `compensated: shipment ${key} blocked before it shipped`,
    );
    return undefined;
  }

  /** Records the order recall-failed with the warehouse's refusal (claim per refusal); the store's answer wins. */
  async holdRecallFailed(reason: string): Promise<void> {
    const { run } = this;
    const { tenantId, orderId } = run.state;
    const attempt = recallFailuresOf(run.state) + 1;
    const stored = await run.durably('record recall refused', () =>
      storeEffect('markRecallFailed', 'record recall refused', { tenantId, orderId, reason, attempt }),
    );
    run.state =
      stored.status === 'recall-failed'
        ? markRecallFailed(run.state, reason, attempt)
        : withNote(
            { ...run.state, status: stored.status },
            `recall refused (${reason}); the store holds the order as ${stored.status}`,
          );
    run.publishStatus();
  }
}
