/**
 * `fulfilment order retry <tenant>/<order> --reason <text> [--by <name>]`: re-drives an order held as `failed` through
 * the `retryShipment` update (workflows/operator-requests.ts), whether its run is still open or has closed.
 *
 *   1. read the order     — its row, as the runtime role scoped to the tenant: none is not found; the store decides
 *   2. send the update    — failed: to the open run, or with a repair run when it has closed (operator-update.ts);
 *                           any other status: only to an open run (its validator names the status, or the run answers
 *                           a request id it applied already); a closed run of an order that is not failed is refused
 *   3. the update id      — `--request-id`, or `retry-<n>-<sha256(reason)>` for retry n (the store's retry_count + 1):
 *                           the same command run twice is one request
 *
 * An accepted retry moves the order failed → pending in the store (recording why, who and when) and ships it again
 * under the same warehouse key, so at most one shipment is ever made. Needs a worker polling the task queue.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import {
  orderWorkflowId,
  retryShipmentUpdate,
  type RetryShipmentRequest,
  type RetryShipmentResult,
} from '../../../workflows/api.js';
import type { Config } from '../../base/config.js';
import type { CliContext } from '../context.js';
import { NotFoundError } from '../cli-errors.js';
import { println } from '../output.js';
import { cliTemporalClient } from '../temporal-client.js';
import { readOrderRow, withStore } from './held-orders.js';
import {
  answerWithin,
  restartPendingOrder,
  updateOpenRun,
  updateOrderRun,
  type UpdateOutcome,
} from './operator-update.js';
import { checkRetryOptions, defaultOperator, DEFAULT_RETRY_TIMEOUT_SECONDS, type RetryOptions } from './options.js';
import { shipmentKey, type FulfilmentRow } from '../../vocabulary/order.js';

export { checkRetryOptions, type RetryOptions } from './options.js';
export { OperatorRequestRefusedError as RetryRefusedError } from './operator-update.js';

export interface RetrySummary {
  workflowId: string;
  tenantId: string;
  orderId: string;
  /**
   * `retried`: this command applied the retry; `already-applied`: the update id had been applied before; `restarted`:
   * the order is pending with no open run (terminated or deleted by hand), and a run from the store now ships it.
   */
  outcome: 'retried' | 'already-applied' | 'restarted';
  /** The run that applied it: the order's open run, or a repair run started because its run had closed. */
  via: UpdateOutcome<unknown>['via'];
  updateId: string;
  /** Which retry of the order it was, from 1. */
  retry: number;
  /** The order's status right after the retry: pending (the shipment is being tried again). */
  status: string;
  reason: string;
  by: string | null;
  clearedFailure: string | null;
  retriedAt: string;
  shipmentKey: string;
}

/** The update id a retry is sent with when --request-id is not given: the same reason for the same retry is one update. */
export function derivedUpdateId(retry: number, reason: string): string {
  return `retry-${retry}-${createHash('sha256').update(reason).digest('hex').slice(0, 12)}`;
}

export async function orderRetry(ctx: CliContext, opts: RetryOptions): Promise<RetrySummary> {
  checkRetryOptions(opts);
  const { tenantId, orderId } = opts;
  const request = { ...opts, by: opts.by ?? defaultOperator() };
  const row = await withStore(ctx, (db) => readOrderRow(db, tenantId, orderId));
  if (!row)
    throw new NotFoundError(
      `no order ${tenantId}/${orderId} in the store (fulfilments, read as the runtime role for tenant ${tenantId})`,
    );
  const client = await cliTemporalClient(ctx.config);
  try {
    const within = answerWithin(ctx, client, (opts.timeoutSeconds ?? DEFAULT_RETRY_TIMEOUT_SECONDS) * 1000);
    const summary = await within(
      `from the workflow ${orderWorkflowId(tenantId, orderId)} to the retryShipment update`,
      () => retryHeldOrder(client, ctx.config, row, request),
    );
    if (opts.json) println(ctx.out, JSON.stringify(summary));
    else for (const line of describeRetry(summary)) println(ctx.out, line);
    return summary;
  } finally {
    await client.connection.close().catch(() => undefined);
  }
}

/** Retries one order the store holds as `row` (the single command and the bulk one alike). */
export async function retryHeldOrder(
  client: Client,
  config: Config,
  row: FulfilmentRow,
  request: Pick<RetryOptions, 'reason' | 'requestId'> & { by: string },
): Promise<RetrySummary> {
  const order = { tenantId: row.tenant_id, orderId: row.order_id };
  if (row.status === 'pending') {
    const restarted = await restartPendingOrder(client, config, { ...order, status: row.status }, request.by);
    if (restarted.via === 'repair run') return restartSummary(row, request, restarted.via);
  }
  const updateId = request.requestId ?? derivedUpdateId(row.retry_count + 1, request.reason);
  const args: [RetryShipmentRequest] = [{ reason: request.reason, by: request.by }];
  const update = { update: retryShipmentUpdate, args, updateId, what: 'order retry', by: request.by };
  const done: UpdateOutcome<RetryShipmentResult> =
    row.status === 'failed'
      ? await updateOrderRun(client, config, { ...order, status: row.status }, update)
      : await updateOpenRun(client, order, update, notFailedClosed(row));
  const { result } = done;
  return {
    workflowId: orderWorkflowId(order.tenantId, order.orderId),
    ...order,
    outcome: result.retry <= row.retry_count ? 'already-applied' : 'retried',
    via: done.via,
    updateId,
    retry: result.retry,
    status: result.status,
    reason: result.reason,
    by: result.by ?? null,
    clearedFailure: result.clearedFailure ?? null,
    retriedAt: result.retriedAt,
    shipmentKey: result.shipmentKey,
  };
}

/** What `order retry` did to a pending order with no open run: started a run from the store that ships it. */
function restartSummary(
  row: FulfilmentRow,
  request: Pick<RetryOptions, 'reason'> & { by: string },
  via: RetrySummary['via'],
): RetrySummary {
  return {
    workflowId: orderWorkflowId(row.tenant_id, row.order_id),
    tenantId: row.tenant_id,
    orderId: row.order_id,
    outcome: 'restarted',
    via,
    updateId: '-',
    retry: row.retry_count,
    status: 'pending',
    reason: request.reason,
    by: request.by,
    clearedFailure: null,
    retriedAt: new Date().toISOString(),
    shipmentKey: shipmentKey(row.tenant_id, row.order_id),
  };
}

function notFailedClosed(row: FulfilmentRow): string {
  const hint =
    row.status === 'recall-failed' ? ' (its recall was refused: resolve it with `fulfilment order resolve`)' : '';
  return `order ${row.tenant_id}/${row.order_id} is ${row.status} in the store, not failed: only an order held as failed can be retried${hint}; nothing was changed`;
}

export function describeRetry(s: RetrySummary): string[] {
  const head =
    s.outcome === 'retried'
      ? `retried ${s.tenantId}/${s.orderId} (retry ${s.retry}, ${s.via}): failed → ${s.status}; shipping again under ${s.shipmentKey}`
      : s.outcome === 'restarted'
        ? `restarted ${s.tenantId}/${s.orderId} (${s.via}): pending with no run; shipping under ${s.shipmentKey}`
        : `already applied: request ${s.updateId} was retry ${s.retry} of ${s.tenantId}/${s.orderId} at ${s.retriedAt}; nothing changed now`;
  if (s.outcome === 'restarted')
    return [head, `  reason    ${s.reason}`, `  by        ${s.by ?? '-'}`, `  at        ${s.retriedAt}`];
  return [
    head,
    `  reason    ${s.reason}`,
    `  by        ${s.by ?? '-'}`,
    `  cleared   ${s.clearedFailure ?? '-'}`,
    `  at        ${s.retriedAt}`,
    `  update    ${s.updateId} (sending it again applies nothing)`,
  ];
}
