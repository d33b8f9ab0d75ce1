/**
 * Hands an order's events to its workflow: starts the order's run or signals the running one — one call,
 * signal-with-start, carrying the whole event on the orderEvent signal, or several events of the order queued together
 * as a list on the same signal (or, eagerly, a start with the events in its input). The event id is the dedupe token
 * inside the workflow; the workflow id is the order's.
 *
 * A closed run is never reopened by an event (REJECT_DUPLICATE): an event whose order's run has closed — shipped,
 * cancelled, failed, terminated — is recorded through the store as a run would record it (the late path,
 * src/adapters/store/order-events.ts), unless it leaves work for the order (a pending order to ship, a failed order's
 * shipment to recall): then a run is started from the store (a repair run) with the events. Past the namespace
 * retention Temporal has forgotten the closed run, the start succeeds, and the new run records the event through the
 * same store: every event gets the same recorded outcome, whatever became of its run.
 *
 * Every start carries the order's priority (src/base/tenants/fairness.ts): its tenant as the fairness key, the tenant's
 * weight, so that a Temporal dispatching fairly shares its workers between the tenants with work waiting.
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
  type OrderWorkflowInput,
  type OrderWorkflowSettings,
} from '../../../workflows/api.js';
import { type OrderEvent } from '../../vocabulary/order.js';
import type { orderFulfilmentV2 } from '../../../workflows/order-fulfilment.js';
import type { LateBatch } from '../../adapters/store/order-events.js';
import { orderPriority } from '../../base/tenants/fairness.js';
import type { TenantWeightOf } from '../../base/tenants/weights.js';
import { classifyDeliveryFailure as classify } from './delivery-failures.js';

export { EventRejectedByTemporalError } from './delivery-failures.js';

/**
 * What became of the events: `accepted` by a run of the order (open, new, or started from the store for them);
 * `recorded-late` through the store, their order's run having closed.
 */
export type StartOutcome = 'accepted' | 'recorded-late';

export interface OrderStarter {
  /** Hands one order's events (at least one, oldest first) to its workflow in one call. */
  deliver(events: readonly OrderEvent[]): Promise<StartOutcome>;
}

/**
 * Records events of one order whose run has closed (oldest first) in one store transaction
 * (src/adapters/store/order-events.ts recordLateEvents, each outcome logged and counted), up to the first that needs a
 * run.
 */
export type LateEventRecorder = (events: readonly OrderEvent[]) => Promise<LateBatch>;

export interface OrderStarterOptions {
  /** Each tenant's weight (src/base/tenants/weights.ts tenantWeights): the fairness weight its orders' runs start with. */
  weightOf: TenantWeightOf;
  /**
   * Deadline of one signal-with-start call, milliseconds (default 15000). A call that runs out is a transient
   * failure like any other: retried, and absorbed by the workflow's dedupe if it did land.
   */
  callTimeoutMs?: number;
  /**
   * Eager workflow start (the client must be built on the worker's own NativeConnection, in the same process): an
   * order's run is started with workflow.start and its events in the input, and Temporal hands the first workflow
   * task straight back to this process's worker instead of through a task queue poll. When the run exists already,
   * the events are signalled to it (a second call). Default false: one signal-with-start call. A function is asked at
   * each hand-over: the worker beside it takes eager starts only while its version takes every new run (current, no
   * ramp), since an eager task is run by that worker whatever Temporal's routing says.
   */
  eager?: boolean | (() => boolean);
}

/** Why an attempt to hand the events to an open or new run found the order's run closed. */
type Handed = 'accepted' | 'run-closed';

/**
 * Over 80 lines: a factory whose deliver() and its ways to hand events over (signal-with-start, eager start, the
 * late path) share one closure's state — the client, the settings, the recorder — each inner function a named step.
 */
export function createOrderStarter(
  client: Client,
  taskQueue: string,
  settings: OrderWorkflowSettings,
  late: LateEventRecorder,
  opts: OrderStarterOptions,
): OrderStarter {
  const callTimeoutMs = opts.callTimeoutMs ?? 15_000;
  const within = <T>(call: () => Promise<T>) => client.connection.withDeadline(Date.now() + callTimeoutMs, call);
  /** What every start of an order's run carries, whichever call starts it. */
  const startOptions = (event: OrderEvent) => ({
    workflowId: orderWorkflowId(event.tenantId, event.orderId),
    taskQueue,
    // A closed run is never reopened by an event: the late path records it (a run from the store where work is left).
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    ...orderWorkflowMetadata(event),
    priority: orderPriority(event.tenantId, opts.weightOf),
    typedSearchAttributes: [
      { key: TenantIdAttribute, value: event.tenantId },
      { key: OrderIdAttribute, value: event.orderId },
      { key: OrderStatusAttribute, value: 'new' },
    ],
  });
  // One event is signalled as itself, which workers of every version read; several as a list (upgrade workers first).
  const signalArg = (events: readonly OrderEvent[]): OrderEvent | readonly OrderEvent[] =>
    events.length === 1 ? events[0]! : events;

  /** One call: starts the run with the events signalled, or signals the running one; a closed run refuses. */
  async function signalWithStart(events: readonly OrderEvent[]): Promise<Handed> {
    const event = events[0]!;
    const input: OrderWorkflowInput = { tenantId: event.tenantId, orderId: event.orderId, settings };
    try {
      await within(() =>
        client.workflow.signalWithStart<typeof orderFulfilmentV2, [OrderEvent | readonly OrderEvent[]]>(
          ORDER_WORKFLOW_TYPE,
          { ...startOptions(event), args: [input], signal: orderEventSignal, signalArgs: [signalArg(events)] },
        ),
      );
      return 'accepted';
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return 'run-closed';
      throw classify(err);
    }
  }

  /**
   * An eager start with the events in the input; when a run of the order exists (running: FAIL, completed: the reuse
   * policy), the events are signalled to it; a run that has closed meanwhile (between the two calls) refuses them.
   */
  async function eagerStart(events: readonly OrderEvent[]): Promise<Handed> {
    const event = events[0]!;
    const input: OrderWorkflowInput = {
      tenantId: event.tenantId,
      orderId: event.orderId,
      settings,
      events: [...events],
    };
    try {
      await within(() =>
        client.workflow.start<typeof orderFulfilmentV2>(ORDER_WORKFLOW_TYPE, {
          ...startOptions(event),
          args: [input],
          requestEagerStart: true,
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
        }),
      );
      return 'accepted';
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw classify(err);
    }
    try {
      await within(() =>
        client.workflow.getHandle(startOptions(event).workflowId).signal(orderEventSignal, signalArg(events)),
      );
      return 'accepted';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'run-closed';
      throw classify(err);
    }
  }

  /**
   * A run of the order started from the store (a repair run: it loads the order, then handles the events), or the
   * events signalled to a run that opened meanwhile. Only for events the late path left for a run.
   */
  async function startFromStore(events: readonly OrderEvent[], reason: string): Promise<void> {
    const event = events[0]!;
    const input: OrderWorkflowInput = { tenantId: event.tenantId, orderId: event.orderId, settings, repair: true };
    const metadata = orderWorkflowMetadata(event);
    try {
      await within(() =>
        client.workflow.signalWithStart<typeof orderFulfilmentV2, [OrderEvent | readonly OrderEvent[]]>(
          ORDER_WORKFLOW_TYPE,
          {
            ...startOptions(event),
            workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
            staticSummary: `${metadata.staticSummary} (from the store)`,
            staticDetails: `${metadata.staticDetails}\n\nStarted from the store after the order's run had closed: ${reason}.`,
            args: [input],
            signal: orderEventSignal,
            signalArgs: [signalArg(events)],
          },
        ),
      );
    } catch (err) {
      throw classify(err);
    }
  }

  /**
   * The late path: the events recorded through the store in one transaction, in order, until one needs a run; it and
   * the rest go to one.
   */
  async function recordLate(events: readonly OrderEvent[]): Promise<StartOutcome> {
    const { recorded, needsRun } = await late(events);
    if (needsRun === undefined) return 'recorded-late';
    await startFromStore(events.slice(recorded.length), needsRun);
    return 'accepted';
  }

  const eager = typeof opts.eager === 'function' ? opts.eager : () => opts.eager === true;
  return {
    async deliver(events) {
      const handOver = eager() ? eagerStart : signalWithStart;
      return (await handOver(events)) === 'accepted' ? 'accepted' : recordLate(events);
    },
  };
}
