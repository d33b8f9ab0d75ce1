/**
 * The warehouse half of an order's run (orderFulfilmentV2, order-fulfilment.ts): the shipment — the placement's quick
 * path, the heartbeating activity, what the shipment left — the wait for a warehouse down for everyone (or shipping
 * paused), and the recall that compensates a shipment a cancellation overtook. Like the operator's actions
 * (operator-actions.ts), each step is a function over the run (ShipmentRunPort), taken by its main loop. The steps
 * issue the run's commands: a change here is a change of the workflow, held by the replay gate like one in
 * order-fulfilment.ts (docs/changing-the-workflow.md). Deterministic code only (bundled into the sandbox).
 */
import {
  ActivityCancellationType,
  CancellationScope,
  condition,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import type { OrderActivities, PlacedAndShipped, RecordedShipment, ShipInput } from '../activities/index.js';
import { QUICK_SHIPMENT, WAREHOUSE_ACTIVITY } from './activity-options.js';
import type { OrderWorkflowInput } from './api.js';
import {
  NON_RETRYABLE_FAILURES,
  ORDER_PLACED,
  shipmentKey,
  type OrderEvent,
  type OrderPlacedData,
  type ShipmentWaitDetails,
} from '../src/vocabulary/order.js';
import {
  cancelsShipment,
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
  type OrderState,
} from './order-state.js';
import { failureReason, isNonRetryable, quickThenDurable, shipmentWait, unrecordedShipmentId } from './failures.js';
import { storeEffect } from './store-effects.js';

/** What the warehouse steps need of the run. */
export interface ShipmentRunPort {
  state: OrderState;
  readonly inbox: OrderEvent[];
  readonly settings: OrderWorkflowInput['settings'];
  /** What the placement's quick path (placeAndShip) did about the shipment, for the next ship(). */
  quickShipment?: RecordedShipment | 'tried';
  /** A resumeShipment signal arrived since the current shipment attempt began. */
  resumeRequested: boolean;
  /** Decides what one event means and records it (an event that arrives while the shipment is in flight). */
  handle(event: OrderEvent): Promise<void>;
  durably<T>(what: string, effect: () => Promise<T>): Promise<T>;
  publishStatus(): void;
  /** Waits until an event, a request or `woken` arrives, or `deadline` passes; true when one arrived. */
  waitForEvent(deadline?: number, summary?: string, woken?: () => boolean): Promise<boolean>;
  /** Cancels the grace or linger window's timer. */
  closeWindow(): void;
}

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

/**
 * The shipment met the warehouse down for everyone, or shipping paused: the order waits, without spending its
 * attempts, until the resumer (or an operator's resume) wakes it, an event moves it, it checks again by itself
 * (nothing woke it for the recheck time), or its shipment deadline passes. The deadline and the recheck time are
 * the worker's that met the wait (its details), else this run's settings. A wait for an outage found past the
 * deadline — the order's one more try at the deadline found the warehouse still down — holds the order as failed.
 */
export function waitFor(run: ShipmentRunPort, wait: ShipmentWaitDetails): void {
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
export async function waitForWarehouse(run: ShipmentRunPort): Promise<void> {
  const waiting = run.state.waiting!;
  if (metPastDeadline(run.state)) {
    await holdFailed(
      run,
      `waited for the warehouse since ${new Date(waiting.since).toISOString()}, past the order's shipment deadline (${new Date(run.state.shipmentDeadline!).toISOString()}): ${waiting.reason}`,
    );
    return run.publishStatus();
  }
  const wakeAt = [waiting.deadline, waiting.recheckAt].filter((t): t is number => t !== undefined);
  const at = wakeAt.length > 0 ? Math.min(...wakeAt) : undefined;
  const arrived = await run.waitForEvent(at, WAREHOUSE_WAIT, () => run.resumeRequested);
  if (run.resumeRequested) {
    run.closeWindow();
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
 * refusal of the record is thrown; when the quick attempt gave up otherwise (a slow warehouse, a store restart), the
 * answer is undefined and the order takes the durable path: the record as an activity if need be, then ship().
 */
export async function placeAndShip(
  run: ShipmentRunPort,
  event: Extract<OrderEvent, { type: typeof ORDER_PLACED }>,
): Promise<PlacedAndShipped | undefined> {
  const input = shipInput(run, event.data, event.correlationId);
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
function shipInput(run: ShipmentRunPort, placement: OrderPlacedData, correlationId: string | undefined): ShipInput {
  const { tenantId, orderId } = run.state;
  const waits = run.settings.shipmentDeadlineSeconds !== undefined ? { waitOnOutage: true as const } : {};
  const since = run.state.waitingSince;
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
 * Ships the order and records the shipment: the quick local attempt first, the heartbeating activity when it gave
 * up. While the activity is in flight, events that cannot stop it are handled; a cancellation stops it (waiting
 * until it has stopped), is recorded, and the shipment is recalled.
 */
export async function ship(run: ShipmentRunPort): Promise<void> {
  const input = shipInput(run, run.state.placement!, run.state.correlationId);
  const { key } = input;
  // Shipped and recorded already by the placement's quick path (placeAndShip): settled from its answer.
  const quick = run.quickShipment;
  run.quickShipment = undefined;
  if (quick !== undefined && quick !== 'tried') return settleShipment(run, key, undefined, quick, undefined);
  run.resumeRequested = false;
  const scope = new CancellationScope();
  let settled = false;
  let recorded: RecordedShipment | undefined;
  let failure: unknown;
  const shipping = scope
    .run(async () => {
      const durable = () =>
        warehouse.shipAndRecordOrder.executeWithOptions({ ...warehousePolicy, summary: 'ship via warehouse' }, [input]);
      recorded =
        quick === 'tried'
          ? await durable()
          : await quickThenDurable(
              () =>
                quickWarehouse.shipAndRecordOrder.executeWithOptions(
                  { ...quickShipPolicy, summary: 'ship via warehouse' },
                  [input],
                ),
              durable,
            );
    })
    .catch((err: unknown) => void (failure = err))
    .finally(() => void (settled = true));

  let cancelledBy: OrderEvent | undefined;
  while (!settled && !cancelledBy) {
    await condition(() => settled || run.inbox.length > 0);
    while (!settled && run.inbox.length > 0) {
      if (cancelsShipment(run.state, run.inbox[0]!)) {
        cancelledBy = run.inbox.shift();
        scope.cancel();
        break;
      }
      await run.handle(run.inbox.shift()!);
    }
  }
  await shipping;
  await settleShipment(run, key, cancelledBy, recorded, failure);
}

/**
 * What the shipment left. Recorded as shipped: the order is shipped, and a cancellation that arrived meanwhile is
 * a late one, recorded and refused by the store like any other. A cancellation otherwise is recorded and the
 * shipment recalled; a store that holds the order otherwise wins and the shipment is recalled; a shipment the
 * store did not record is recorded through the store's own policy; a warehouse that gave up holds the order as
 * failed.
 */
async function settleShipment(
  run: ShipmentRunPort,
  key: string,
  cancelledBy: OrderEvent | undefined,
  recorded: RecordedShipment | undefined,
  failure: unknown,
): Promise<void> {
  if (recorded?.stored.status === 'shipped') {
    settleShipped(run, recorded);
    if (cancelledBy) await run.handle(cancelledBy);
    return;
  }
  if (cancelledBy) {
    await run.handle(cancelledBy);
    await compensate(run, key);
    return;
  }
  const unrecorded = unrecordedShipmentId(failure);
  const wait = shipmentWait(failure);
  if (wait) {
    waitFor(run, wait);
    return;
  }
  if (recorded) {
    run.state = {
      ...run.state,
      status: recorded.stored.status === 'pending' ? 'cancelled' : recorded.stored.status,
    };
    await compensate(run, key);
  } else if (unrecorded !== undefined) await recordShipped(run, unrecorded, key);
  else if (!isCancellation(failure)) await holdFailed(run, failureReason(failure));
  run.publishStatus();
}

/** The shipment recorded as shipped: the order is shipped. */
export function settleShipped(run: ShipmentRunPort, recorded: RecordedShipment): void {
  run.state = markShipped(run.state, recorded.shipmentId);
  run.publishStatus();
}

/** Records the shipment; when the store refuses (cancelled underneath us) the store wins and it is recalled. */
async function recordShipped(run: ShipmentRunPort, shipmentId: string, key: string): Promise<void> {
  const { tenantId, orderId } = run.state;
  const stored = await run.durably('mark shipped', () =>
    storeEffect('markOrderShipped', 'record shipped', { tenantId, orderId, shipmentId }),
  );
  if (stored.status === 'shipped') {
    run.state = markShipped(run.state, shipmentId);
    return;
  }
  run.state = { ...run.state, status: stored.status === 'pending' ? 'cancelled' : stored.status };
  await compensate(run, key);
}

/** Holds the order as failed with the reason once the warehouse gave up; after retry n the claim is per retry. */
async function holdFailed(run: ShipmentRunPort, reason: string): Promise<void> {
  const { tenantId, orderId } = run.state;
  const retry = retriesOf(run.state);
  await run.durably('mark failed', () =>
    storeEffect('markOrderFailed', 'record failed', { tenantId, orderId, reason, ...(retry > 0 ? { retry } : {}) }),
  );
  run.state = markFailed(run.state, reason);
}

/**
 * Compensation: recalls the shipment made under `key`; the warehouse burns the key, so nothing ships after. A recall
 * the warehouse refuses for good holds the order as recall-failed, for a person to resolve.
 */
export async function compensate(run: ShipmentRunPort, key: string): Promise<void> {
  const refusal = await recall(run, key);
  if (refusal !== undefined) await holdRecallFailed(run, refusal);
}

/** Recalls the shipment under `key`: undefined when done, else the warehouse's refusal (a non-retryable failure). */
export async function recall(run: ShipmentRunPort, key: string): Promise<string | undefined> {
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
export async function holdRecallFailed(run: ShipmentRunPort, reason: string): Promise<void> {
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
