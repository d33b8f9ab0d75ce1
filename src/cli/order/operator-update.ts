/**
 * Sends an operator's request — a Temporal update of the order's workflow (workflows/operator-requests.ts) — to the
 * order's run, whether it is open or has closed: update-with-start, conflict policy USE_EXISTING.
 *
 * - An open run (one that lingers, or a repair already under way) takes the update as it is.
 * - A closed run is followed by a repair run (OrderWorkflowInput.repair): it loads the order from the store before
 *   anything else and applies the update to what the store holds. The caller starts one only for an order the store
 *   holds for a person (failed, recall-failed): the reuse policy ALLOW_DUPLICATE then lets the id start again whatever
 *   the last run ended as — including a run of the earlier type that completed with the order failed. The order's
 *   guarantees hold in the repair run as in any other: the shipment goes out under the order's one warehouse key (the
 *   warehouse returns the first shipment for it), the store moves a row only from the status the request needs (a
 *   late cancellation recorded meanwhile makes it refuse), and the ledger still holds every event id the order ever
 *   recorded, so a redelivered past event is a duplicate there.
 *
 * The update id makes a repeated command one request: Temporal applies an id once per run, and the store's claim for
 * the n-th retry or resolution applies once whatever run sends it.
 */
import { ServiceError, WithStartWorkflowOperation, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import {
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  type UpdateDefinition,
} from '@temporalio/common';
import type { Config } from '../../base/config.js';
import type { CliContext } from '../context.js';
import { workflowSettings } from '../../domain/workflow-settings.js';
import { orderPriority } from '../../base/tenants/fairness.js';
import { tenantWeights } from '../../base/tenants/weights.js';
import {
  ORDER_WORKFLOW_TYPE,
  OrderIdAttribute,
  OrderStatusAttribute,
  TenantIdAttribute,
  orderWorkflowId,
  type OrderWorkflowInput,
} from '../../../workflows/api.js';
import type { orderFulfilmentV2 } from '../../../workflows/order-fulfilment.js';

/** The order and what the store holds it as. */
export interface HeldOrderRef {
  tenantId: string;
  orderId: string;
  /** The status the store holds (failed, recall-failed): the repair run's OrderStatus until it publishes its own. */
  status: string;
}

/** Refused by the workflow: its validator, or its store, said no. The message says why. */
export class OperatorRequestRefusedError extends Error {
  override name = 'OperatorRequestRefusedError';
}

export interface UpdateOutcome<Ret> {
  result: Ret;
  /** `open run`: the run that was open took it; `repair run`: a repair run was started for it. */
  via: 'open run' | 'repair run';
  runId: string;
}

/**
 * Sends `update` with `args` under `updateId` to the order's run, starting a repair run when none is open; `what`
 * names the command in the repair run's metadata (Web UI) and `by` who asked.
 */
export async function updateOrderRun<Ret, Args extends [unknown]>(
  client: Client,
  config: Config,
  order: HeldOrderRef,
  request: { update: UpdateDefinition<Ret, Args>; args: Args; updateId: string; what: string; by: string },
): Promise<UpdateOutcome<Ret>> {
  const { tenantId, orderId } = order;
  const before = (await latestRun(client, order))?.runId;
  const start = new WithStartWorkflowOperation<typeof orderFulfilmentV2>(
    ORDER_WORKFLOW_TYPE,
    repairRunOptions(config, order, [
      `Repair run of order \`${tenantId}/${orderId}\`, started by \`fulfilment ${request.what}\` (by ${request.by}) after its run closed.`,
      `It loads the order from the store (held as ${order.status}) and applies the operator's request to it.`,
    ]),
  );
  try {
    const result = await client.workflow.executeUpdateWithStart(request.update, {
      args: request.args,
      updateId: request.updateId,
      startWorkflowOperation: start,
    });
    const { runId } = await (await start.workflowHandle()).describe();
    return { result, via: before !== undefined && runId === before ? 'open run' : 'repair run', runId };
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      throw new OperatorRequestRefusedError(
        `${request.what} of ${tenantId}/${orderId} refused: ${err.cause?.message ?? err.message}`,
        { cause: err },
      );
    }
    throw err;
  }
}

/** The order's latest run as Temporal describes it, or undefined when it has none. */
async function latestRun(client: Client, order: { tenantId: string; orderId: string }) {
  return client.workflow
    .getHandle(orderWorkflowId(order.tenantId, order.orderId))
    .describe()
    .catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
}

/** How a repair run of `order` is started: from the store, under the order's workflow id, with `details` for the Web UI. */
function repairRunOptions(config: Config, order: HeldOrderRef, details: string[]) {
  const { tenantId, orderId } = order;
  const input: OrderWorkflowInput = { tenantId, orderId, settings: workflowSettings(config), repair: true };
  return {
    workflowId: orderWorkflowId(tenantId, orderId),
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    args: [input] as [OrderWorkflowInput],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    staticSummary: `order ${tenantId}/${orderId} (repair)`,
    staticDetails: details.join('\n'),
    // Dispatched beside the tenant's other orders, as the bridge starts them (src/base/tenants/fairness.ts).
    priority: orderPriority(tenantId, tenantWeights(config)),
    typedSearchAttributes: [
      { key: TenantIdAttribute, value: tenantId },
      { key: OrderIdAttribute, value: orderId },
      { key: OrderStatusAttribute, value: order.status },
    ],
  };
}

/**
 * Starts a repair run for a `pending` order whose run is gone (terminated or deleted by hand while it waited): the run
 * loads the order from the store and ships it under its one key. An open run is left as it is (`open run`): it owns
 * the order. The run id that holds the order now is returned.
 */
export async function restartPendingOrder(
  client: Client,
  config: Config,
  order: HeldOrderRef,
  by: string,
): Promise<{ via: UpdateOutcome<unknown>['via']; runId: string }> {
  const open = await latestRun(client, order);
  if (open?.status.name === 'RUNNING') return { via: 'open run', runId: open.runId };
  const handle = await client.workflow.start<typeof orderFulfilmentV2>(
    ORDER_WORKFLOW_TYPE,
    repairRunOptions(config, order, [
      `Repair run of order \`${order.tenantId}/${order.orderId}\`, started by \`fulfilment order retry\` (by ${by}): the store holds it pending and no run of it was open.`,
      'It loads the order from the store and ships it under its one warehouse key.',
    ]),
  );
  return { via: 'repair run', runId: handle.firstExecutionRunId };
}

/**
 * Sends `update` to the order's run only if one is open (no repair run): for an order the store does not hold for a
 * person, so that a repeated request id is answered by the run that applied it, and anything else is refused by its
 * validator naming the status. A closed run is refused with `closedRefusal`.
 */
export async function updateOpenRun<Ret, Args extends [unknown]>(
  client: Client,
  order: { tenantId: string; orderId: string },
  request: { update: UpdateDefinition<Ret, Args>; args: Args; updateId: string; what: string },
  closedRefusal: string,
): Promise<UpdateOutcome<Ret>> {
  const handle = client.workflow.getHandle(orderWorkflowId(order.tenantId, order.orderId));
  const description = await latestRun(client, order);
  if (description?.status.name !== 'RUNNING') throw new OperatorRequestRefusedError(closedRefusal);
  try {
    const result = await handle.executeUpdate(request.update, { args: request.args, updateId: request.updateId });
    return { result, via: 'open run', runId: description.runId };
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      throw new OperatorRequestRefusedError(
        `${request.what} of ${order.tenantId}/${order.orderId} refused: ${err.cause?.message ?? err.message}`,
        { cause: err },
      );
    }
    throw err;
  }
}

/**
 * `within(what, fn)`: runs `fn` on `client` with a deadline of `timeoutMs` (and the command's interrupt), and turns
 * the client's errors into messages that say where to look: no answer in time most likely means no worker polls the
 * task queue; the server's own reason when the client's message hides it.
 */
export function answerWithin(
  ctx: CliContext,
  client: Client,
  timeoutMs: number,
): <T>(what: string, fn: () => Promise<T>) => Promise<T> {
  const { config } = ctx;
  return (what, fn) => {
    const signal = ctx.signal
      ? AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)])
      : AbortSignal.timeout(timeoutMs);
    return client.withAbortSignal(signal, fn).catch((err: unknown) => {
      if (
        err instanceof OperatorRequestRefusedError ||
        err instanceof WorkflowUpdateFailedError ||
        err instanceof WorkflowNotFoundError
      )
        throw err;
      if (!signal.aborted) {
        const cause = (err as { cause?: { details?: string; message?: string } }).cause;
        if (err instanceof ServiceError && cause) {
          throw new Error(
            `${err.message} (${what}): ${cause.details ?? cause.message} (task queue ${config.TEMPORAL_TASK_QUEUE}, TEMPORAL_TASK_QUEUE)`,
            { cause: err },
          );
        }
        throw err;
      }
      throw new Error(
        `no answer ${what} within ${timeoutMs / 1000} s: is a worker polling task queue ${config.TEMPORAL_TASK_QUEUE} (TEMPORAL_TASK_QUEUE)? ` +
          'A request that was sent may still be applied; run the same command again to find out: it applies at most once',
        { cause: err },
      );
    });
  };
}
