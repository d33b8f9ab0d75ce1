/**
 * The handling of one event by an order's run (orderFulfilmentV2, order-fulfilment.ts): the pure state machine
 * (order-state.ts) decides what it means; a duplicate, stale or foreign event is noted and reported; any other is
 * recorded through the store — the placement's first event with its shipment in one local activity (placeAndShip,
 * order-shipment.ts) — and the store's answer becomes the state. A cancellation over a shipment attempt the run no
 * longer follows recalls the key; an event the store refuses for good joins the DLQ. The handling calls the run and
 * the shipment, never the other way, and issues the run's commands: a change here is a change of the workflow, held
 * by the replay gate (docs/changing-the-workflow.md). Deterministic code only (bundled into the sandbox).
 */
import { proxySinks } from '@temporalio/workflow';
import type { OrderSinks } from './api.js';
import { cancelsOrder } from '../src/vocabulary/order-rules.js';
import {
  ORDER_PLACED,
  shipmentKey,
  type OrderEvent,
  type OrderEventOf,
  type StoredOrder,
} from '../src/vocabulary/order.js';
import { applyStored, decide, noteDecision, withNote } from './order-state.js';
import { failureReason, failureType } from './activity-failures.js';
import { store, storeEffect } from './store-effects.js';
import type { OrderRun } from './order-run.js';
import type { Shipment } from './order-shipment.js';

/** Outcomes the workflow decides itself (duplicate, stale, foreign), reported outside the history. */
const { outcomes } = proxySinks<OrderSinks>();

/** The run's handling of its events, one at a time. */
export class EventHandling {
  constructor(
    private readonly run: OrderRun,
    private readonly shipment: Shipment,
  ) {}

  /** Decides what one event means and records it through the store, whose answer becomes the state. */
  async handle(event: OrderEvent): Promise<void> {
    const { run, shipment } = this;
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
      const placed = quick ? await shipment.placeAndShip(event as OrderEventOf<typeof ORDER_PLACED>) : undefined;
      // The recording activity reports the store's outcome itself, once its transaction committed.
      stored =
        placed?.stored ??
        (await run.durably(`record ${event.eventId}`, () =>
          storeEffect('recordOrderEvent', summary, event, { reportOutcome: true }),
        ));
      if (quick) shipment.noteQuickPath(placed, stored);
      if (placed?.waiting) shipment.waitFor(placed.waiting);
    } catch (err) {
      run.state = withNote(
        noteDecision(run.state, event, { kind: 'stale', reason: 'refused' }, remember),
        `refused ${event.eventId}: ${failureReason(err)}`,
      );
      return this.refuse(event, err);
    }
    run.state = applyStored(noteDecision(run.state, event, decision, remember), event, stored);
    if (run.state.status === 'awaiting-placement' && run.state.graceEndsAt === undefined) {
      run.state = { ...run.state, graceEndsAt: Date.now() + run.settings.cancelGraceSeconds * 1000 };
    }
    run.publishStatus();
    // A cancellation over a shipment attempt the run no longer follows: the key is recalled (Shipment).
    const cancelled = cancelsOrder(event.type) && stored.outcome === 'applied' && run.state.status === 'cancelled';
    if (cancelled && shipment.overtakenByCancellation(stored, waited))
      await shipment.compensate(shipmentKey(run.state.tenantId, run.state.orderId));
  }

  /**
   * The store refused the event for good (a value it cannot hold, a business refusal): the order goes on without
   * it, and the event joins the DLQ with the reason, where operators see every unprocessable event.
   */
  private async refuse(event: OrderEvent, err: unknown): Promise<void> {
    const error = { name: failureType(err), message: failureReason(err) };
    const refusedAt = new Date(Date.now()).toISOString();
    try {
      await this.run.durably(`dead-letter ${event.eventId}`, () => store.deadLetterEvent({ event, error, refusedAt }));
    } catch (dlqErr) {
      this.run.state = withNote(this.run.state, `dead-letter ${event.eventId} refused: ${failureReason(dlqErr)}`);
      return report(event, 'refused', failureReason(err));
    }
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
