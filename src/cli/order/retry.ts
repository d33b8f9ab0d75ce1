/**
 * `fulfilment order retry <tenant>/<order> --reason <text>`: re-drives an order held as `failed` through the
 * `retryShipment` update of its running workflow (workflows/api.ts). The workflow's validator refuses unless the
 * order is failed, naming its status; an accepted retry moves it back to pending in the store and the workflow,
 * notes the reason, and ships again under the same warehouse key, so at most one shipment is ever made.
 *
 *   1. describe the run     — none: not found; closed: refused with what an operator can do (a closed run is
 *                             never reopened: ORDER_LINGER_SECONDS is the window in which a failed order can be retried)
 *   2. read the order       — the `status` query: its status and how many retries it has had
 *   3. send the update      — id `--request-id`, or `retry-<n>-<sha256(reason)>` for retry n: the same command
 *                             run twice is one update, which Temporal applies once per run
 *
 * Needs the order's worker to be running (the update and the query are answered by it).
 */
import { createHash } from 'node:crypto';
import { ServiceError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError, type Client, type WorkflowHandle } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import {
  OrderStatusAttribute,
  orderStatusQuery,
  orderWorkflowId,
  retryShipmentUpdate,
  type OrderView,
  type RetryShipmentResult,
} from '../../../workflows/api.js';
import type { CliContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { println } from '../output.js';
import { cliTemporalClient } from '../temporal-client.js';
import { checkRetryOptions, DEFAULT_RETRY_TIMEOUT_SECONDS, type RetryOptions } from './options.js';

export { checkRetryOptions, type RetryOptions } from './options.js';

export interface RetrySummary {
  workflowId: string;
  tenantId: string;
  orderId: string;
  /** `retried`: this command applied the retry; `already-applied`: the update id had been applied before. */
  outcome: 'retried' | 'already-applied';
  updateId: string;
  /** Which retry of the order it was, from 1. */
  retry: number;
  /** The order's status right after the retry: pending (the shipment is being tried again). */
  status: string;
  reason: string;
  clearedFailure: string | null;
  retriedAt: string;
  shipmentKey: string;
}

/** The retry was refused: the order is not failed, or its run has closed. The message says why and what to do. */
export class RetryRefusedError extends Error {
  override name = 'RetryRefusedError';
}

/** The update id a retry is sent with when --request-id is not given: the same reason for the same retry is one update. */
export function derivedUpdateId(retry: number, reason: string): string {
  return `retry-${retry}-${createHash('sha256').update(reason).digest('hex').slice(0, 12)}`;
}

export async function orderRetry(ctx: CliContext, opts: RetryOptions): Promise<RetrySummary> {
  checkRetryOptions(opts);
  const { config, out } = ctx;
  const { tenantId, orderId } = opts;
  const workflowId = orderWorkflowId(tenantId, orderId);
  const timeoutMs = (opts.timeoutSeconds ?? DEFAULT_RETRY_TIMEOUT_SECONDS) * 1000;
  let client: Client | undefined;
  try {
    client = await cliTemporalClient(config);
    const c = client;
    const within = <T>(what: string, fn: () => Promise<T>): Promise<T> => {
      const signal = ctx.signal ? AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
      return c.withAbortSignal(signal, fn).catch((err: unknown) => {
        if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowNotFoundError) throw err;
        if (!signal.aborted) {
          // The client's own message ("Failed to query Workflow") hides the server's reason, e.g. no worker polling.
          const cause = (err as { cause?: { details?: string; message?: string } }).cause;
          if (err instanceof ServiceError && cause) {
            throw new Error(`${err.message} ${workflowId}: ${cause.details ?? cause.message} (task queue ${config.TEMPORAL_TASK_QUEUE}, TEMPORAL_TASK_QUEUE)`, { cause: err });
          }
          throw err;
        }
        throw new Error(
          `no answer ${what} within ${timeoutMs / 1000} s: is a worker polling task queue ${config.TEMPORAL_TASK_QUEUE} (TEMPORAL_TASK_QUEUE)? ` +
            'A retry that was sent may still be applied; run the same command again to find out: it applies at most once',
          { cause: err },
        );
      });
    };
    const handle = c.workflow.getHandle(workflowId);

    await refuseUnlessRunning(handle, workflowId, opts, ctx);
    const before = await within(`from the workflow ${workflowId} to the status query`, () => handle.query(orderStatusQuery)).catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return refuseClosed(workflowId, opts, ctx, undefined);
      throw err;
    });
    const retriesBefore = before.retries ?? 0;
    const updateId = opts.requestId ?? derivedUpdateId(retriesBefore + 1, opts.reason);
    const result = await within(`from the workflow ${workflowId} to the retryShipment update`, () =>
      handle.executeUpdate(retryShipmentUpdate, { args: [{ reason: opts.reason }], updateId }),
    ).catch(async (err: unknown): Promise<RetryShipmentResult> => {
      if (err instanceof WorkflowUpdateFailedError) {
        throw new RetryRefusedError(`retry of ${tenantId}/${orderId} refused: ${err.cause?.message ?? err.message}`, { cause: err });
      }
      if (err instanceof WorkflowNotFoundError) return refuseClosed(workflowId, opts, ctx, before);
      if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) throw new Error(`Temporal did not confirm the retry: ${err.message}`, { cause: err });
      throw err;
    });

    const summary: RetrySummary = {
      workflowId,
      tenantId,
      orderId,
      outcome: result.retry <= retriesBefore ? 'already-applied' : 'retried',
      updateId,
      retry: result.retry,
      status: result.status,
      reason: result.reason,
      clearedFailure: result.clearedFailure ?? null,
      retriedAt: result.retriedAt,
      shipmentKey: result.shipmentKey,
    };
    if (opts.json) println(out, JSON.stringify(summary));
    else for (const line of describeSummary(summary)) println(out, line);
    return summary;
  } finally {
    await client?.connection.close().catch(() => undefined);
  }
}

/** The run must be open: a missing run is not found, a closed one is refused with what an operator can do. */
async function refuseUnlessRunning(handle: WorkflowHandle, workflowId: string, opts: RetryOptions, ctx: CliContext): Promise<void> {
  let description: Awaited<ReturnType<WorkflowHandle['describe']>>;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      throw new NotFoundError(`no workflow ${workflowId} in namespace ${ctx.config.TEMPORAL_NAMESPACE}: the order was never seen here, or its closed run is past the namespace's retention`);
    }
    throw err;
  }
  if (description.status.name === 'RUNNING') return;
  const status = description.typedSearchAttributes.get(OrderStatusAttribute);
  const closed = `its run closed${description.closeTime ? ` at ${description.closeTime.toISOString()}` : ''} (${description.status.name.toLowerCase()}${status ? `, order ${status}` : ''})`;
  refuseClosed(workflowId, opts, ctx, undefined, closed);
}

function refuseClosed(workflowId: string, opts: RetryOptions, ctx: CliContext, view: OrderView | undefined, closed = 'its run has closed'): never {
  const { tenantId, orderId } = opts;
  const { config } = ctx;
  const ui = `${config.TEMPORAL_UI_URL}/namespaces/${config.TEMPORAL_NAMESPACE}/workflows/${encodeURIComponent(workflowId)}`;
  throw new RetryRefusedError(
    [
      `order ${tenantId}/${orderId} cannot be retried: ${closed}${view ? `, order ${view.status}` : ''}; a closed run is never reopened, so nothing was changed.`,
      'What you can do:',
      `  - see why it failed: failure_reason in fulfilments (status stays failed), and the run's history: ${ui}`,
      `  - ship it by hand through the warehouse under key ship/${tenantId}/${orderId} (its idempotency keeps it to one shipment; the store keeps the order failed), or have it placed again upstream under a new order id`,
      `  - retry failed orders before their run closes: a settled order's run stays open ORDER_LINGER_SECONDS (now ${config.ORDER_LINGER_SECONDS} s); a longer value applies to runs started after the change`,
    ].join('\n'),
  );
}

function describeSummary(s: RetrySummary): string[] {
  const head =
    s.outcome === 'retried'
      ? `retried ${s.tenantId}/${s.orderId} (retry ${s.retry}): failed → ${s.status}; shipping again under ${s.shipmentKey}`
      : `already applied: request ${s.updateId} was retry ${s.retry} of ${s.tenantId}/${s.orderId} at ${s.retriedAt}; nothing changed now`;
  return [
    head,
    `  reason    ${s.reason}`,
    `  cleared   ${s.clearedFailure ?? '-'}`,
    `  at        ${s.retriedAt}`,
    `  update    ${s.updateId} (sending it again applies nothing)`,
  ];
}
