/**
 * Starts the order's workflow or signals the running one — one call, signal-with-start, carrying the whole event on
 * the orderEvent signal, or several events of the order queued together as a list on the same signal. The event id is
 * the dedupe token inside the workflow; the workflow id is the order's. A completed run (a shipped or cancelled order)
 * is never reopened: a late redelivery is reported as such; a failed one's id may start again
 * (ALLOW_DUPLICATE_FAILED_ONLY), so a late cancellation of a failed order reaches the store.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy, WorkflowNotFoundError } from '@temporalio/common';
import {
  ORDER_WORKFLOW_TYPE,
  OrderIdAttribute,
  OrderStatusAttribute,
  TenantIdAttribute,
  orderEventSignal,
  orderWorkflowId,
  orderWorkflowMetadata,
  type OrderEvent,
  type OrderWorkflowInput,
  type OrderWorkflowSettings,
} from '../../workflows/api.js';
import type { orderFulfilmentV2 } from '../../workflows/order-fulfilment.js';
import { classifyDeliveryFailure as classify } from './delivery-failures.js';

export { EventRejectedByTemporalError } from './delivery-failures.js';

export type StartOutcome = 'accepted' | 'order-closed';

export interface OrderStarter {
  /** Hands one order's events (at least one, oldest first) to its workflow in one call. */
  deliver(events: readonly OrderEvent[]): Promise<StartOutcome>;
}

export interface OrderStarterOptions {
  /**
   * Deadline of one signal-with-start call, milliseconds (default 15000). A call that runs out is a transient
   * failure like any other: retried, and absorbed by the workflow's dedupe if it did land.
   */
  callTimeoutMs?: number;
  /**
   * Eager workflow start (the client must be built on the worker's own NativeConnection, in the same process): an
   * order's run is started with workflow.start and its events in the input, and Temporal hands the first workflow
   * task straight back to this process's worker instead of through a task queue poll. When the run exists already,
   * the events are signalled to it (a second call). Default false: one signal-with-start call.
   */
  eager?: boolean;
}

export function createOrderStarter(client: Client, taskQueue: string, settings: OrderWorkflowSettings, opts: OrderStarterOptions = {}): OrderStarter {
  const callTimeoutMs = opts.callTimeoutMs ?? 15_000;
  const within = <T>(call: () => Promise<T>) => client.connection.withDeadline(Date.now() + callTimeoutMs, call);
  /** What every start of an order's run carries, whichever call starts it. */
  const startOptions = (event: OrderEvent) => ({
    workflowId: orderWorkflowId(event.tenantId, event.orderId),
    taskQueue,
    // A shipped or cancelled order's closed run is never reopened; a failed order's run ends failed, and a late event
    // for it starts a new run that records it (a cancellation must reach the store before any repair).
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    ...orderWorkflowMetadata(event),
    typedSearchAttributes: [
      { key: TenantIdAttribute, value: event.tenantId },
      { key: OrderIdAttribute, value: event.orderId },
      { key: OrderStatusAttribute, value: 'new' },
    ],
  });
  // One event is signalled as itself, which workers of every version read; several as a list (upgrade workers first).
  const signalArg = (events: readonly OrderEvent[]): OrderEvent | readonly OrderEvent[] => (events.length === 1 ? events[0]! : events);

  /** One call: starts the run with the events signalled, or signals the running one; a closed run refuses. */
  async function signalWithStart(events: readonly OrderEvent[]): Promise<StartOutcome> {
    const event = events[0]!;
    const input: OrderWorkflowInput = { tenantId: event.tenantId, orderId: event.orderId, settings };
    try {
      await within(() => client.workflow.signalWithStart<typeof orderFulfilmentV2, [OrderEvent | readonly OrderEvent[]]>(ORDER_WORKFLOW_TYPE, { ...startOptions(event), args: [input], signal: orderEventSignal, signalArgs: [signalArg(events)] }));
      return 'accepted';
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return 'order-closed';
      throw classify(err);
    }
  }

  /**
   * An eager start with the events in the input; when a run of the order exists (running: FAIL, completed: the reuse
   * policy), the events are signalled to it, and a run that has closed refuses them.
   */
  async function eagerStart(events: readonly OrderEvent[]): Promise<StartOutcome> {
    const event = events[0]!;
    const input: OrderWorkflowInput = { tenantId: event.tenantId, orderId: event.orderId, settings, events: [...events] };
    try {
      await within(() =>
        client.workflow.start<typeof orderFulfilmentV2>(ORDER_WORKFLOW_TYPE, { ...startOptions(event), args: [input], requestEagerStart: true, workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL }),
      );
      return 'accepted';
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw classify(err);
    }
    try {
      await within(() => client.workflow.getHandle(startOptions(event).workflowId).signal(orderEventSignal, signalArg(events)));
      return 'accepted';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'order-closed';
      throw classify(err);
    }
  }

  return { deliver: opts.eager ? eagerStart : signalWithStart };
}
