/**
 * Sends the wake-ups of released waiting orders (src/adapters/store/shipment-waits.ts releaseWaitingOrders): a
 * resumeShipment signal to each order's run, one after another. A failed signal does not end the batch: that order is
 * handed back (unreleased) for the next round and the others are still woken. Should even the hand-back fail (the store
 * gone too, the process killed), the release's lease runs out and the order is released again (migration 009): a
 * wake-up lasts until it lands. Used by the workers' shipment resumers and by `fulfilment shipping resume --rate`.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { orderWorkflowId, resumeShipmentSignal } from '../../../workflows/api.js';
import type { Db } from '../../adapters/store/db.js';
import type { Logger } from '../../base/log.js';
import {
  markWaitingOrderRunGone,
  unreleaseWaitingOrder,
  type WaitingOrder,
} from '../../adapters/store/shipment-waits.js';

/** What a batch of wake-ups came to. */
export interface WakeTally {
  /** Orders whose run received the signal. */
  woken: WaitingOrder[];
  /**
   * Orders with no run to wake (terminated or deleted by hand): set aside in the store, so no round releases them again
   * until a run of theirs waits again (`fulfilment order retry` starts one from the store) or they leave pending.
   */
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
        await setAside(deps, order);
        continue;
      }
      tally.failed.push(order);
      tally.error ??= (err as Error).message;
      await handBack(deps, order);
    }
  }
  return tally;
}

/**
 * Sets aside an order whose run is gone, so it is not released every lease for ever; if the store refuses, its lease
 * brings it back to the next round, which tries again.
 */
async function setAside(deps: WakeDeps, order: WaitingOrder): Promise<void> {
  const fields = { tenantId: order.tenantId, orderId: order.orderId };
  try {
    await markWaitingOrderRunGone(deps.db, order);
    deps.logger.warn(
      fields,
      "a waiting order's run is gone: it is set aside (fulfilment_orders_waiting_run_gone) until an operator repairs it with `fulfilment order retry`",
    );
  } catch (err) {
    deps.logger.warn(
      { ...fields, err: (err as Error).message },
      "a waiting order's run is gone and could not be set aside; it is released again once its lease runs out",
    );
  }
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
