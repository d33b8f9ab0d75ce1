/**
 * The handling of one event by an order's run (orderFulfilmentV2, order-fulfilment.ts): the pure state machine
 * (order-state.ts) decides what it means; a duplicate, stale or foreign event is noted and reported; any other is
 * recorded through the store — the placement's first event with its shipment in one local activity (placeAndShip,
 * order-shipment.ts) — and the store's answer becomes the state. A cancellation over a shipment attempt the run no
 * longer follows recalls the key; an event the store refuses for good joins the DLQ. Like the warehouse half and the
 * operator's actions, each step is a function over the run (EventRunPort), and issues the run's commands: a change
 * here is a change of the workflow, held by the replay gate (docs/changing-the-workflow.md). Deterministic code only
 * (bundled into the sandbox).
 */
import { proxySinks } from '@temporalio/workflow';
import type { PlacedAndShipped, RecordedShipment } from '../activities/index.js';
import type { OrderSinks, OrderWorkflowInput } from './api.js';
import { cancelsOrder } from '../src/vocabulary/order-rules.js';
import {
  ORDER_PLACED,
  shipmentKey,
  type OrderEvent,
  type OrderEventOf,
  type ShipmentWaitDetails,
  type StoredOrder,
} from '../src/vocabulary/order.js';
import { applyStored, decide, noteDecision, withNote, type OrderState } from './order-state.js';
import { failureReason, failureType } from './failures.js';
import { store, storeEffect } from './store-effects.js';

/** What the handling of an event needs of the run. */
export interface EventRunPort {
  state: OrderState;
  readonly settings: OrderWorkflowInput['settings'];
  /** What the placement's quick path (placeAndShip) did about the shipment, for the next ship(). */
  quickShipment?: RecordedShipment | 'tried';
  /** A repair run that found the order pending: an attempt of the run it replaces may still reach the warehouse. */
  readonly inheritedAttempt: boolean;
  /** True when an event or an accepted operator's request waits to be handled. */
  hasWork(): boolean;
  /** The quick path of an order's first placement: its record and shipment in one local activity. */
  placeAndShip(event: Extract<OrderEvent, { type: typeof ORDER_PLACED }>): Promise<PlacedAndShipped | undefined>;
  /** The shipment met the warehouse down for everyone, or shipping paused: the order waits. */
  waitFor(wait: ShipmentWaitDetails): void;
  /** Recalls the shipment made under `key`; a recall refused for good holds the order as recall-failed. */
  compensate(key: string): Promise<void>;
  durably<T>(what: string, effect: () => Promise<T>): Promise<T>;
  publishStatus(): void;
}

/** Outcomes the workflow decides itself (duplicate, stale, foreign), reported outside the history. */
const { outcomes } = proxySinks<OrderSinks>();

/** Decides what one event means and records it through the store, whose answer becomes the state. */
export async function handle(run: EventRunPort, event: OrderEvent): Promise<void> {
  const decision = decide(run.state, event);
  const remember = run.settings.rememberEventIds;
  if (decision.kind === 'duplicate' || decision.kind === 'stale' || decision.kind === 'foreign') {
    run.state = noteDecision(run.state, event, decision, remember);
    const detail =
      decision.kind === 'stale'
        ? decision.reason
        : decision.kind === 'foreign'
          ? 'event names another order'
          : undefined;
    return report(event, decision.kind === 'duplicate' ? 'duplicate' : 'stale', detail);
  }
  let stored: StoredOrder;
  const waited = run.state.waiting !== undefined;
  try {
    const summary = `record event ${event.type.replace(/^orders\./, '')} v${event.orderVersion}`;
    // An order's first placement with nothing behind it: recorded and shipped in one local activity (placeAndShip).
    // The rules give `place` to a placement only (src/vocabulary/order-rules.ts).
    const quick = decision.transition === 'place' && !run.hasWork();
    const placed = quick ? await run.placeAndShip(event as OrderEventOf<typeof ORDER_PLACED>) : undefined;
    // The recording activity reports the store's outcome itself, once its transaction committed.
    stored =
      placed?.stored ??
      (await run.durably(`record ${event.eventId}`, () =>
        storeEffect('recordOrderEvent', summary, event, { reportOutcome: true }),
      ));
    // Shipped with it; or tried and not shipped, or not known (it ran out of time, most likely on a slow warehouse):
    // the quick attempt is spent, and ship() goes to the heartbeating activity.
    if (quick)
      run.quickShipment = placed?.shipped ?? (stored.status === 'pending' && stored.placed ? 'tried' : undefined);
    if (placed?.waiting) run.waitFor(placed.waiting);
  } catch (err) {
    run.state = withNote(
      noteDecision(run.state, event, { kind: 'stale', reason: 'refused' }, remember),
      `refused ${event.eventId}: ${failureReason(err)}`,
    );
    return refuse(run, event, err);
  }
  run.state = applyStored(noteDecision(run.state, event, decision, remember), event, stored);
  if (run.state.status === 'awaiting-placement' && run.state.graceEndsAt === undefined) {
    run.state = { ...run.state, graceEndsAt: Date.now() + run.settings.cancelGraceSeconds * 1000 };
  }
  run.publishStatus();
  if (cancelledOverAnAttempt(run, event, stored, waited))
    await run.compensate(shipmentKey(run.state.tenantId, run.state.orderId));
}

/**
 * True when `event` cancelled the order while a shipment attempt it no longer follows may have reached the warehouse:
 * the order was held as failed (the store says `recall`), the placement's quick attempt gave up without knowing
 * whether the warehouse shipped (`quickShipment` 'tried', before ship() took over), or the order was waiting for
 * the warehouse (`waited`: only runs that wait, so no earlier history meets it), or a repair run found the order
 * pending (`inheritedAttempt`: the replaced run's attempt may be in flight). The key must then be recalled
 * (burnt), or an attempt that lands afterwards would ship a cancelled order.
 */
function cancelledOverAnAttempt(run: EventRunPort, event: OrderEvent, stored: StoredOrder, waited: boolean): boolean {
  if (!cancelsOrder(event.type) || stored.outcome !== 'applied' || run.state.status !== 'cancelled') return false;
  // A waiting order's attempts may have reached the warehouse before it judged itself down (its runs all recall).
  if (waited) {
    run.quickShipment = undefined;
    return true;
  }
  const abandoned = stored.recall === true || run.quickShipment === 'tried' || run.inheritedAttempt;
  if (!abandoned) return false;
  run.quickShipment = undefined;
  return true;
}

/**
 * The store refused the event for good (a value it cannot hold, a business refusal): the order goes on without
 * it, and the event joins the DLQ with the reason, where operators see every unprocessable event.
 */
async function refuse(run: EventRunPort, event: OrderEvent, err: unknown): Promise<void> {
  const error = { name: failureType(err), message: failureReason(err) };
  const refusedAt = new Date(Date.now()).toISOString();
  try {
    await run.durably(`dead-letter ${event.eventId}`, () => store.deadLetterEvent({ event, error, refusedAt }));
  } catch (dlqErr) {
    run.state = withNote(run.state, `dead-letter ${event.eventId} refused: ${failureReason(dlqErr)}`);
    return report(event, 'refused', failureReason(err));
  }
}

/** Logs and counts an outcome the workflow decided itself, through the worker's sink (not again on replay). */
function report(event: OrderEvent, outcome: 'duplicate' | 'stale' | 'refused', detail?: string): void {
  const { eventId, type, tenantId, orderId, orderVersion, correlationId, occurredAt } = event;
  outcomes.report({
    event: { eventId, type, tenantId, orderId, orderVersion, correlationId, occurredAt },
    outcome,
    layer: 'workflow',
    detail,
  });
}
