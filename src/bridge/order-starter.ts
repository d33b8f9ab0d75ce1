/**
 * Starts the order's workflow or signals the running one — one call, signal-with-start, carrying the whole
 * event on the one orderEvent signal. The event id is the dedupe token inside the workflow; the workflow id
 * is the order's. A closed run is never reopened (REJECT_DUPLICATE): a late redelivery is reported as such.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
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
import { DependencyUnavailableError, PermanentError } from '../errors.js';
import type { orderFulfilment } from '../../workflows/order-fulfilment.js';

/** Thrown when Temporal refuses the event itself (e.g. too large); retrying cannot help. */
export class EventRejectedByTemporalError extends PermanentError {}

export type StartOutcome = 'accepted' | 'order-closed';

export interface OrderStarter {
  deliver(event: OrderEvent): Promise<StartOutcome>;
}

export interface OrderStarterOptions {
  /**
   * Deadline of one signal-with-start call, milliseconds (default 15000). A call that runs out is a transient
   * failure like any other: retried, and absorbed by the workflow's dedupe if it did land.
   */
  callTimeoutMs?: number;
}

export function createOrderStarter(client: Client, taskQueue: string, settings: OrderWorkflowSettings, opts: OrderStarterOptions = {}): OrderStarter {
  const callTimeoutMs = opts.callTimeoutMs ?? 15_000;
  return {
    async deliver(event) {
      const input: OrderWorkflowInput = { tenantId: event.tenantId, orderId: event.orderId, settings };
      try {
        await client.connection.withDeadline(Date.now() + callTimeoutMs, () => client.workflow.signalWithStart<typeof orderFulfilment, [OrderEvent]>(ORDER_WORKFLOW_TYPE, {
          workflowId: orderWorkflowId(event.tenantId, event.orderId),
          taskQueue,
          args: [input],
          signal: orderEventSignal,
          signalArgs: [event],
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          ...orderWorkflowMetadata(event),
          typedSearchAttributes: [
            { key: TenantIdAttribute, value: event.tenantId },
            { key: OrderIdAttribute, value: event.orderId },
            { key: OrderStatusAttribute, value: 'new' },
          ],
        }));
        return 'accepted';
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return 'order-closed';
        throw classify(err);
      }
    },
  };
}

/** gRPC status code 3. */
const GRPC_INVALID_ARGUMENT = 3;

/** Temporal errors: INVALID_ARGUMENT is the event's fault (permanent); everything else may pass (transient). */
function classify(err: unknown): Error {
  const code = grpcCode(err);
  if (code === GRPC_INVALID_ARGUMENT) {
    return new EventRejectedByTemporalError(`Temporal rejected the event: ${(err as Error).message}`, { cause: err });
  }
  const cause = (err as { cause?: { message?: string } })?.cause?.message;
  return new DependencyUnavailableError(`Temporal unavailable: ${(err as Error)?.message ?? String(err)}${cause ? ` (${cause})` : ''}`, { cause: err });
}

function grpcCode(err: unknown): number | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
