/**
 * `fulfilment order resolve <tenant>/<order> --action retry-recall|recalled-by-hand --reason <text> [--by <name>]`:
 * resolves an order held as `recall-failed` — cancelled, but the warehouse refused for good to recall its shipment —
 * through the `resolveRecall` update (workflows/operator-requests.ts), whether its run is open or has closed.
 *
 * - `retry-recall`: the workflow asks the warehouse to recall the shipment again (once its refusal's cause is fixed
 *   there); recalled, the order is recorded cancelled; refused again, it stays recall-failed with the new refusal.
 * - `recalled-by-hand`: the shipment was stopped or taken back outside this service; the order is recorded cancelled.
 *
 * Either way the store records what was done, by whom and when (resolution, resolved_by, resolved_at). The update id is
 * `--request-id`, or `resolve-<n>-<action>-<sha256(reason)>` for the order's n-th refusal: a repeated command is one
 * request.
 */
import { createHash } from 'node:crypto';
import { orderWorkflowId, resolveRecallUpdate, type ResolveRecallRequest } from '../../../workflows/api.js';
import type { CliContext } from '../context.js';
import { NotFoundError } from '../cli-errors.js';
import { println } from '../output.js';
import { cliTemporalClient } from '../temporal-client.js';
import { readOrderRow, withStore } from './held-orders.js';
import { answerWithin, updateOpenRun, updateOrderRun, type UpdateOutcome } from './operator-update.js';
import { checkResolveOptions, defaultOperator, DEFAULT_RETRY_TIMEOUT_SECONDS, type ResolveOptions } from './options.js';

export interface ResolveSummary {
  workflowId: string;
  tenantId: string;
  orderId: string;
  action: ResolveRecallRequest['action'];
  /** `cancelled`: resolved; `recall-failed`: the retried recall was refused again (see `refusal`). */
  status: string;
  refusal: string | null;
  via: UpdateOutcome<unknown>['via'];
  updateId: string;
  reason: string;
  by: string | null;
  resolvedAt: string;
}

export function derivedResolveId(failures: number, action: string, reason: string): string {
  return `resolve-${failures}-${action}-${createHash('sha256').update(reason).digest('hex').slice(0, 12)}`;
}

export async function orderResolve(ctx: CliContext, opts: ResolveOptions): Promise<ResolveSummary> {
  checkResolveOptions(opts);
  const { tenantId, orderId, action, reason } = opts;
  const by = opts.by ?? defaultOperator();
  const row = await withStore(ctx, (db) => readOrderRow(db, tenantId, orderId));
  if (!row)
    throw new NotFoundError(
      `no order ${tenantId}/${orderId} in the store (fulfilments, read as the runtime role for tenant ${tenantId})`,
    );
  const workflowId = orderWorkflowId(tenantId, orderId);
  const updateId = opts.requestId ?? derivedResolveId(row.recall_failures, action, reason);
  const args: [ResolveRecallRequest] = [{ action, reason, by }];
  const update = { update: resolveRecallUpdate, args, updateId, what: 'order resolve', by };
  const client = await cliTemporalClient(ctx.config);
  try {
    const within = answerWithin(ctx, client, (opts.timeoutSeconds ?? DEFAULT_RETRY_TIMEOUT_SECONDS) * 1000);
    const closed = `order ${tenantId}/${orderId} is ${row.status} in the store, not recall-failed: only an order whose recall the warehouse refused is resolved; nothing was changed`;
    const done = await within(`from the workflow ${workflowId} to the resolveRecall update`, () =>
      row.status === 'recall-failed'
        ? updateOrderRun(client, ctx.config, { tenantId, orderId, status: row.status }, update)
        : updateOpenRun(client, { tenantId, orderId }, update, closed),
    );
    const r = done.result;
    const summary: ResolveSummary = {
      workflowId,
      tenantId,
      orderId,
      action: r.action,
      status: r.status,
      refusal: r.refusal ?? null,
      via: done.via,
      updateId,
      reason: r.reason,
      by: r.by ?? null,
      resolvedAt: r.resolvedAt,
    };
    if (opts.json) println(ctx.out, JSON.stringify(summary));
    else for (const line of describeResolve(summary)) println(ctx.out, line);
    if (summary.status !== 'cancelled')
      throw new Error(
        `order ${tenantId}/${orderId} is still ${summary.status}: the warehouse refused the recall again`,
      );
    return summary;
  } finally {
    await client.connection.close().catch(() => undefined);
  }
}

function describeResolve(s: ResolveSummary): string[] {
  const head =
    s.status === 'cancelled'
      ? `resolved ${s.tenantId}/${s.orderId} (${s.action}, ${s.via}): recall-failed → cancelled`
      : `not resolved: the warehouse refused the recall of ${s.tenantId}/${s.orderId} again (${s.via}); it stays ${s.status}: ${s.refusal ?? ''}`;
  return [
    head,
    `  reason    ${s.reason}`,
    `  by        ${s.by ?? '-'}`,
    `  at        ${s.resolvedAt}`,
    `  update    ${s.updateId} (sending it again applies nothing)`,
  ];
}
