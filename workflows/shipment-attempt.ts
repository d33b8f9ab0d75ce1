/**
 * One attempt at an order's shipment (order-shipment.ts): the warehouse call in a cancellation scope of its own, in
 * flight while the run's main loop handles the events that arrive meanwhile, and stopped by a cancellation — waiting
 * until the activity has stopped, so nothing records the shipment behind it. Deterministic code only (bundled into
 * the sandbox).
 */
import { CancellationScope } from '@temporalio/workflow';
import type { RecordedShipment } from '../activities/index.js';
import type { OrderEvent } from '../src/vocabulary/order.js';

/** A shipment under way: the quick attempt, then the heartbeating activity; what it recorded, or why it failed. */
export class ShipmentAttempt {
  /** The shipment recorded by the attempt, when it made one. */
  recorded?: RecordedShipment;
  /** Why the attempt ended without a recorded shipment. */
  failure: unknown;
  /** The cancellation that stopped the attempt. */
  cancelledBy?: OrderEvent;
  /** Settles once the attempt has stopped (a cancellation waits until the activity has). */
  readonly done: Promise<void>;
  private settled = false;
  private readonly scope = new CancellationScope();

  constructor(
    readonly key: string,
    attempt: () => Promise<RecordedShipment>,
  ) {
    this.done = this.scope
      .run(async () => {
        this.recorded = await attempt();
      })
      .catch((err: unknown) => void (this.failure = err))
      .finally(() => void (this.settled = true));
  }

  /** True while the attempt runs and no cancellation stopped it. */
  inFlight(): boolean {
    return !this.settled && this.cancelledBy === undefined;
  }

  /** True once the attempt has come back (shipped, failed or stopped). */
  hasStopped(): boolean {
    return this.settled;
  }

  /** True when the attempt recorded the shipment as shipped (a cancellation meanwhile came too late). */
  shipped(): boolean {
    return this.recorded?.stored.status === 'shipped';
  }

  /** Stops the attempt for `event`, which cancels the order. */
  cancel(event: OrderEvent): void {
    this.cancelledBy = event;
    this.scope.cancel();
  }
}
