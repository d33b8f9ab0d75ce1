/**
 * `fulfilment order show <tenant>/<order> [--json]`: one order from every place it lives, read at once.
 *
 *   row           its fulfilments row, read as the runtime role (DATABASE_URL) in a transaction scoped to the
 *                 tenant (app.tenant_id, src/adapters/store/db.ts): row-level security applies exactly as for the
 *                 service, and a role it does not bind is refused as the worker refuses it
 *                 (src/adapters/store/runtime-role.ts)
 *   workflow      describe (run id, running or closed, when) and the `status` query (the order's view and notes);
 *                 the query is answered by a worker polling the order's task queue, also for a closed run
 *   shipment      the idempotency key ship/<tenant>/<order>, the shipment id the row and the workflow recorded, and
 *                 what the warehouse holds under the key (GET /shipments?key=, the development warehouse's read)
 *   dead letters  every record of DLQ_TOPIC for the order (its tenant header and the value's orderId, or a key
 *                 <tenant>/<order> when the value cannot be read), copies folded (dlq/copies.ts), read without
 *                 committing anything (dlq/reader.ts)
 *
 * Personal data (the row's customer id and shipping address) is redacted unless --reveal, as `dlq show` does. A
 * source that cannot be read within --timeout is reported and the others still shown; the exit code is then 1.
 * Nothing anywhere: the order does not exist (NotFoundError, exit 1).
 *
 * The parts: where each source is read (show-sources.ts), what is found (show-result.ts), its text (show-text.ts);
 * here, the sources read side by side and the result told.
 */
import { orderWorkflowId } from '../../../workflows/api.js';
import { shipmentKey } from '../../vocabulary/order.js';
import type { CliContext } from '../context.js';
import { NotFoundError } from '../cli-errors.js';
import { println } from '../output.js';
import { Redactor } from '../redact.js';
import { checkShowOptions, DEFAULT_SHOW_TIMEOUT_SECONDS, type ShowOptions } from './options.js';
import { shownRow, type OrderShowResult } from './show-result.js';
import { readDeadLetters, readRow, readWarehouse, readWorkflow, within } from './show-sources.js';
import { describe } from './show-text.js';

export { checkShowOptions, type ShowOptions } from './options.js';
export type { OrderShowResult } from './show-result.js';

/** Some source could not be read; what could be read was printed. */
export class IncompleteShowError extends Error {
  override name = 'IncompleteShowError';
}

export async function orderShow(ctx: CliContext, opts: ShowOptions): Promise<OrderShowResult> {
  checkShowOptions(opts);
  const { tenantId, orderId } = opts;
  const timeoutMs = (opts.timeoutSeconds ?? DEFAULT_SHOW_TIMEOUT_SECONDS) * 1000;
  const reveal = opts.reveal ?? false;
  const problems: string[] = [];
  /** One source, read within the timeout (`bounded`) or bounding its own steps; a failure is a problem, not the end. */
  const part = async <T>(what: string, read: () => Promise<T>, bounded = true): Promise<T | undefined> => {
    try {
      return await (bounded ? within(timeoutMs, read()) : read());
    } catch (err) {
      problems.push(`${what}: ${(err as Error).message}`);
      return undefined;
    }
  };
  const key = shipmentKey(tenantId, orderId);
  const [row, workflow, warehouse, deadLetters] = await Promise.all([
    part('row (PostgreSQL, DATABASE_URL)', () => readRow(ctx, tenantId, orderId)),
    part('workflow (Temporal)', () => readWorkflow(ctx, tenantId, orderId, timeoutMs, problems), false),
    part(`warehouse (WAREHOUSE_URL ${ctx.config.WAREHOUSE_URL})`, () =>
      readWarehouse(ctx.config.WAREHOUSE_URL, key, timeoutMs),
    ),
    part(`dead letters (${ctx.config.DLQ_TOPIC}, DLQ_TOPIC)`, () => readDeadLetters(ctx, tenantId, orderId)),
  ]);
  const redactor = new Redactor();
  const result: OrderShowResult = {
    tenantId,
    orderId,
    row: row ? shownRow(row, reveal) : null,
    workflow: workflow ?? null,
    shipment: {
      key,
      rowShipmentId: typeof row?.shipment_id === 'string' ? row.shipment_id : null,
      workflowShipmentId: workflow?.view?.shipmentId ?? null,
      ...(warehouse !== undefined ? { warehouse } : {}),
    },
    deadLetters: (deadLetters ?? []).map((d) =>
      reveal || d.errorMessage === null ? d : { ...d, errorMessage: redactor.errorMessage(d.errorMessage) },
    ),
    revealed: reveal,
    problems,
  };
  const nothing = row === null && workflow === null && deadLetters?.length === 0 && !warehouse;
  if (nothing && problems.length === 0) {
    throw new NotFoundError(
      `no order ${tenantId}/${orderId}: tenant ${tenantId} has no row for it in fulfilments, namespace ${ctx.config.TEMPORAL_NAMESPACE} has no workflow ` +
        `${orderWorkflowId(tenantId, orderId)}, the warehouse has nothing under ${key} and ${ctx.config.DLQ_TOPIC} holds no dead letter for it ` +
        '(tenant and order ids are case-sensitive)',
    );
  }
  if (opts.json) println(ctx.out, JSON.stringify(result));
  else for (const line of describe(result, ctx.config.TEMPORAL_NAMESPACE, ctx.config.DLQ_TOPIC)) println(ctx.out, line);
  if (problems.length > 0)
    throw new IncompleteShowError(
      `order ${tenantId}/${orderId} is shown incomplete:\n${problems.map((p) => `  ${p}`).join('\n')}`,
    );
  return result;
}
