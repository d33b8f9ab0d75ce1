/**
 * Sends the wake-ups of released waiting orders (src/store/shipment-waits.ts releaseWaitingOrders): a resumeShipment
 * signal to each order's run, one after another. A failed signal does not end the batch: that order is handed back
 * (unreleased) for the next round and the others are still woken. Should even the hand-back fail (the store gone
 * too, the process killed), the release's lease runs out and the order is released again (migration 009): a wake-up
 * lasts until it lands. Used by the workers' shipment resumers and by `fulfilment shipping resume --rate`.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { orderWorkflowId, resumeShipmentSignal } from '../../workflows/api.js';
import type { Db } from '../db.js';
import type { Logger } from '../log.js';
import { unreleaseWaitingOrder, type WaitingOrder } from '../store/shipment-waits.js';

/** What a batch of wake-ups came to. */
export interface WakeTally {
  /** Orders whose run received the signal. */
  woken: WaitingOrder[];
  /** Orders with no run to wake (terminated by hand): they stay waiting until an operator acts (`order show`). */
  gone: WaitingOrder[];
  /** Orders whose signal failed, each handed back (or left to its lease); the first failure's message. */
  failed: WaitingOrder[];
  error?: string;
}

export interface WakeDeps {
  client: Pick<Client, 'workflow'>;
  db: Db;
  logger: Logger;
}

/** Signals each order in turn; `onWoken` is told of each one woken (for counting and logging). */
export async function wakeReleased(
  deps: WakeDeps,
  orders: readonly WaitingOrder[],
  onWoken: (order: WaitingOrder) => void = () => undefined,
): Promise<WakeTally> {
  const tally: WakeTally = { woken: [], gone: [], failed: [] };
  for (const order of orders) {
    try {
      await deps.client.workflow.getHandle(orderWorkflowId(order.tenantId, order.orderId)).signal(resumeShipmentSignal);
      tally.woken.push(order);
      onWoken(order);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        tally.gone.push(order);
        deps.logger.warn(
          { tenantId: order.tenantId, orderId: order.orderId },
          "a waiting order's run is gone; it stays waiting until an operator acts (fulfilment order show)",
        );
        continue;
      }
      tally.failed.push(order);
      tally.error ??= (err as Error).message;
      await handBack(deps, order);
    }
  }
  return tally;
}

/** Unreleases an order whose signal failed; if the store refuses too, its lease brings it back. */
async function handBack(deps: WakeDeps, order: WaitingOrder): Promise<void> {
  try {
    await unreleaseWaitingOrder(deps.db, order);
  } catch (err) {
    deps.logger.warn(
      { tenantId: order.tenantId, orderId: order.orderId, err: (err as Error).message },
      "could not hand back an order whose wake-up failed; it is woken again once its release's lease runs out",
    );
  }
}
