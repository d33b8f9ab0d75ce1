/**
 * `fulfilment order show <tenant>/<order> [--json]`: one order from every place it lives, read at once.
 *
 *   row           its fulfilments row, read as the runtime role (DATABASE_URL) in a transaction scoped to the
 *                 tenant (app.tenant_id, src/db.ts): row-level security applies exactly as for the service,
 *                 and a role it does not bind is refused as the worker refuses it (src/store/runtime-role.ts)
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
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { runtimeConnection } from '../../store/connection.js';
import { createDb, inTenantTransaction } from '../../db.js';
import { readFulfilment } from '../../store/fulfilments.js';
import { checkRuntimeRole } from '../../store/runtime-role.js';
import { DLQ_HEADERS } from '../../dlq/dead-letter.js';
import { OrderStatusAttribute, orderStatusQuery, orderWorkflowId, type OrderView } from '../../../workflows/api.js';
import { shipmentKey } from '../../order.js';
import type { CliContext } from '../context.js';
import { cliKafka } from '../kafka.js';
import { groupCopies, summarizeCopies, type DeadLetterSummary } from '../dlq/copies.js';
import { readDlq } from '../dlq/reader.js';
import { header, type DlqRecord } from '../dlq/record.js';
import { NotFoundError } from '../errors.js';
import { println } from '../output.js';
import { withTimeout } from '../../timeout.js';
import { REDACTED, Redactor } from '../redact.js';
import { formatTable, truncate } from '../table.js';
import { cliTemporalClient } from '../temporal-client.js';
import { checkShowOptions, DEFAULT_SHOW_TIMEOUT_SECONDS, type ShowOptions } from './options.js';

export { checkShowOptions, type ShowOptions } from './options.js';

/** Row columns holding personal data, redacted unless --reveal. */
const PERSONAL_COLUMNS = ['customer_id', 'shipping_address'] as const;

export interface WorkflowPart {
  workflowId: string;
  runId: string;
  /** RUNNING, COMPLETED, CONTINUED_AS_NEW, TERMINATED, … */
  status: string;
  running: boolean;
  startTime: string;
  closeTime: string | null;
  taskQueue: string;
  historyLength: number;
  /** The OrderStatus search attribute. */
  orderStatus: string | null;
  /** The `status` query's answer; null when no worker answered (see `problems`). */
  view: OrderView | null;
}

export interface WarehouseShipment {
  id: string;
  status: string;
  createdAt: string;
  cancelledAt: string | null;
}

export interface ShipmentPart {
  key: string;
  /** The shipment id the row recorded. */
  rowShipmentId: string | null;
  /** The shipment id the workflow's view recorded. */
  workflowShipmentId: string | null;
  /** What the warehouse holds under the key: null when nothing, undefined when it could not be asked. */
  warehouse?: WarehouseShipment | null;
}

export interface OrderShowResult {
  tenantId: string;
  orderId: string;
  /** The fulfilments row, dates as RFC 3339, personal data redacted unless --reveal; null when the tenant has none. */
  row: Record<string, unknown> | null;
  workflow: WorkflowPart | null;
  shipment: ShipmentPart;
  deadLetters: DeadLetterSummary[];
  revealed: boolean;
  /** A source that could not be read, one line each (exit 1 when any). */
  problems: string[];
}

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

function within<T>(ms: number, work: Promise<T>): Promise<T> {
  return withTimeout(work, ms, `no answer within ${ms / 1000} s (--timeout)`);
}

/** The row as the runtime role sees it with app.tenant_id set to the tenant; null when it sees none. */
async function readRow(ctx: CliContext, tenantId: string, orderId: string): Promise<Record<string, unknown> | null> {
  const db = createDb(runtimeConnection(ctx.config), 1);
  try {
    await checkRuntimeRole(db);
    const row = await inTenantTransaction(db, tenantId, (tx) => readFulfilment(tx, tenantId, orderId));
    return (row as Record<string, unknown> | undefined) ?? null;
  } finally {
    await db.end().catch(() => undefined);
  }
}

function shownRow(row: Record<string, unknown>, reveal: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    out[k] =
      !reveal && v !== null && (PERSONAL_COLUMNS as readonly string[]).includes(k)
        ? REDACTED
        : v instanceof Date
          ? v.toISOString()
          : v;
  }
  return out;
}

async function readWorkflow(
  ctx: CliContext,
  tenantId: string,
  orderId: string,
  timeoutMs: number,
  problems: string[],
): Promise<WorkflowPart | null> {
  const { config } = ctx;
  const workflowId = orderWorkflowId(tenantId, orderId);
  let client: Client | undefined;
  try {
    const connecting = cliTemporalClient(config);
    try {
      client = await within(timeoutMs, connecting);
    } catch (err) {
      // A connection that arrives after the deadline is closed when it does.
      void connecting.then(
        (late) => late.connection.close(),
        () => undefined,
      );
      throw err;
    }
    const handle = client.workflow.getHandle(workflowId);
    let d: Awaited<ReturnType<typeof handle.describe>>;
    try {
      d = await within(timeoutMs, handle.describe());
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return null;
      throw err;
    }
    const c = client;
    // Answered by a worker of the order's task queue; without one the query waits, so it has its own bound.
    const deadline = AbortSignal.timeout(timeoutMs);
    const view = await c
      .withAbortSignal(deadline, () => handle.query(orderStatusQuery))
      .catch((err: unknown) => {
        const cause = deadline.aborted
          ? `no answer within ${timeoutMs / 1000} s (--timeout)`
          : ((err as { cause?: { details?: string } }).cause?.details ?? (err as Error).message);
        problems.push(
          `workflow status query: ${cause}: it is answered by a worker polling task queue ${d.taskQueue} (TEMPORAL_TASK_QUEUE); is one running?`,
        );
        return null;
      });
    return {
      workflowId,
      runId: d.runId,
      status: d.status.name,
      running: d.status.name === 'RUNNING',
      startTime: d.startTime.toISOString(),
      closeTime: d.closeTime?.toISOString() ?? null,
      taskQueue: d.taskQueue,
      historyLength: d.historyLength,
      orderStatus: d.typedSearchAttributes.get(OrderStatusAttribute) ?? null,
      view,
    };
  } finally {
    await client?.connection.close().catch(() => undefined);
  }
}

/** What the warehouse holds under `key`; null when nothing. A warehouse without the read endpoint says so. */
async function readWarehouse(baseUrl: string, key: string, timeoutMs: number): Promise<WarehouseShipment | null> {
  const url = new URL('/shipments', baseUrl);
  url.searchParams.set('key', key);
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (res.status === 404) throw new Error(`the warehouse has no read endpoint (GET ${url.pathname}?key= answered 404)`);
  if (!res.ok) throw new Error(`GET ${url.pathname}?key= answered ${res.status}`);
  const list = (await res.json()) as {
    id?: string;
    key?: string;
    status?: string;
    createdAt?: string;
    cancelledAt?: string;
  }[];
  const s = Array.isArray(list) ? list.find((x) => x.key === key) : undefined;
  if (!s) return null;
  return {
    id: s.id ?? '',
    status: s.status ?? 'unknown',
    createdAt: s.createdAt ?? '',
    cancelledAt: s.cancelledAt ?? null,
  };
}

async function readDeadLetters(ctx: CliContext, tenantId: string, orderId: string): Promise<DeadLetterSummary[]> {
  const { config } = ctx;
  const { records } = await readDlq({
    kafka: cliKafka(ctx),
    topic: config.DLQ_TOPIC,
    clientId: `${config.KAFKA_CLIENT_ID}-cli`,
    keep: (r) => isFor(r, tenantId, orderId),
    encryption: config.payloadEncryption,
  });
  // The value was needed to match; the summary reads only headers.
  return groupCopies(records.map((r) => ({ ...r, value: null }))).map((g) => summarizeCopies(g));
}

/** Whether a dead letter belongs to the order: tenant from its header (else the value), order from the value (else the key). */
export function isFor(r: DlqRecord, tenantId: string, orderId: string): boolean {
  let value: { tenantId?: unknown; orderId?: unknown } | undefined;
  if (r.value !== null && r.value.length > 0 && r.value.length <= 1024 * 1024) {
    try {
      const parsed: unknown = JSON.parse(r.value.toString('utf8'));
      if (parsed !== null && typeof parsed === 'object') value = parsed as typeof value;
    } catch {
      value = undefined;
    }
  }
  const tenant = header(r, DLQ_HEADERS.tenantId) ?? (typeof value?.tenantId === 'string' ? value.tenantId : undefined);
  if (tenant !== tenantId) return false;
  if (typeof value?.orderId === 'string') return value.orderId === orderId;
  const key = r.key?.toString('utf8');
  return key === `${tenantId}/${orderId}`;
}

/** What an operator does about an order the store holds for a person, by status. */
const NEEDS_PERSON: Record<string, (ref: string) => string> = {
  failed: (ref) =>
    `the warehouse gave up shipping it; once the cause is fixed: fulfilment order retry ${ref} --reason '…'`,
  'recall-failed': (ref) =>
    `it is cancelled, but the warehouse refused to recall its shipment; fulfilment order resolve ${ref} --action retry-recall|recalled-by-hand --reason '…'`,
};

/** `order show`'s text: the order's row, its workflow, its shipment, its dead letters — one section each. */
function describe(r: OrderShowResult, namespace: string, dlqTopic: string): string[] {
  const lines = [
    `order ${r.tenantId}/${r.orderId}`,
    ...describeRow(r),
    ...describeWorkflow(r, namespace),
    ...describeShipment(r),
    ...describeDeadLetters(r, dlqTopic),
  ];
  if (!r.revealed && r.row && PERSONAL_COLUMNS.some((c) => r.row![c] === REDACTED))
    lines.push('', `personal data redacted (${PERSONAL_COLUMNS.join(', ')}); --reveal shows it`);
  return lines;
}

/** One `name value` line of a section; an absent value shows as `-`, an object as JSON. */
function field(name: string, value: unknown, width = 18): string {
  const shown =
    value === null || value === undefined || value === ''
      ? '-'
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);
  return `  ${name.padEnd(width)}${shown}`;
}

/** Whether a part could not be read (then it shows `(not read)`, not `none`). */
const notRead = (r: OrderShowResult, part: string) => r.problems.some((p) => p.startsWith(part));

function describeRow(r: OrderShowResult): string[] {
  const lines = ['', `row (fulfilments, as the runtime role with app.tenant_id = '${r.tenantId}')`];
  if (!r.row) return [...lines, notRead(r, 'row') ? '  (not read)' : '  none: the tenant has no row for this order'];
  const columns = Object.entries(r.row).filter(([k]) => k !== 'tenant_id' && k !== 'order_id');
  const width = Math.max(18, ...columns.map(([k]) => k.length + 2));
  for (const [k, v] of columns) lines.push(field(k, v, width));
  const action = NEEDS_PERSON[String(r.row.status)];
  if (action) lines.push(`  → needs a person: ${action(`${r.tenantId}/${r.orderId}`)}`);
  if (r.row.status === 'pending' && r.row.waiting_since)
    lines.push(
      '  → waits for the warehouse: it resumes by itself once the warehouse answers (a pause: `fulfilment shipping status`)',
    );
  return lines;
}

function describeWorkflow(r: OrderShowResult, namespace: string): string[] {
  const lines = ['', `workflow ${orderWorkflowId(r.tenantId, r.orderId)} (namespace ${namespace})`];
  const w = r.workflow;
  if (!w)
    return [
      ...lines,
      notRead(r, 'workflow (')
        ? '  (not read)'
        : '  none: no run of it in the namespace (never started, or closed longer ago than its retention)',
    ];
  lines.push(
    field('run', `${w.runId} ${w.running ? 'running' : `closed ${w.status.toLowerCase()} at ${w.closeTime}`}`),
    field('started', w.startTime),
    field('task queue', w.taskQueue),
    field('history', `${w.historyLength} events`),
    field(
      'order status',
      w.view
        ? `${w.view.status} (search attribute: ${w.orderStatus ?? '-'})`
        : `${w.orderStatus ?? '-'} (search attribute; the status query was not answered)`,
    ),
  );
  const v = w.view;
  if (!v) return lines;
  lines.push(
    field('version', v.orderVersion),
    field(
      'events',
      `${v.appliedEvents} applied, ${v.duplicatesSuppressed} duplicates suppressed, ${v.staleIgnored} stale ignored`,
    ),
  );
  if (v.waitingSince)
    lines.push(field('waiting', `for the warehouse since ${v.waitingSince}: ${v.waitingReason ?? '-'}`));
  if (v.failureReason) lines.push(field('failure', v.failureReason));
  if (v.retries) lines.push(field('retries', v.retries));
  if (v.recallFailures) lines.push(field('recall refusals', v.recallFailures));
  lines.push(`  notes${v.notes.length === 0 ? '             -' : ''}`);
  for (const note of v.notes) lines.push(`    - ${note}`);
  return lines;
}

function describeShipment(r: OrderShowResult): string[] {
  const wh = r.shipment.warehouse;
  const atWarehouse =
    wh === undefined
      ? '(not read)'
      : wh === null
        ? 'nothing under this key'
        : wh.id === ''
          ? `key burned by a recall at ${wh.cancelledAt ?? wh.createdAt}: nothing shipped, nothing ever will under it`
          : `${wh.id} ${wh.status}, created ${wh.createdAt}${wh.cancelledAt ? `, cancelled ${wh.cancelledAt}` : ''}`;
  return [
    '',
    `shipment ${r.shipment.key}`,
    field('id (row)', r.shipment.rowShipmentId),
    field('id (workflow)', r.shipment.workflowShipmentId),
    field('warehouse', atWarehouse),
  ];
}

function describeDeadLetters(r: OrderShowResult, dlqTopic: string): string[] {
  const lines = ['', `dead letters (${dlqTopic})`];
  if (r.deadLetters.length === 0) return [...lines, notRead(r, 'dead letters') ? '  (not read)' : '  none'];
  const rows = r.deadLetters.map((d) => [
    d.position,
    String(d.copies),
    d.failedAt,
    d.errorClass ?? '-',
    d.eventId ?? '-',
    truncate(d.errorMessage ?? '-', 60),
  ]);
  for (const line of formatTable(['POSITION', 'COPIES', 'FAILED AT', 'ERROR CLASS', 'EVENT ID', 'ERROR'], rows))
    lines.push(`  ${line}`);
  lines.push(`  (dlq show <position> for one in full)`);
  return lines;
}
