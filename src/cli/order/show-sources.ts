/**
 * Where `order show` reads one order, each source on its own and within the timeout: the row (as the runtime role,
 * scoped to the tenant), the workflow (describe and the `status` query), the warehouse (what it holds under the
 * shipment key) and the dead letters (every DLQ record of the order).
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { OrderStatusAttribute, orderStatusQuery, orderWorkflowId } from '../../../workflows/api.js';
import { createDb, inTenantTransaction } from '../../adapters/store/db.js';
import { DLQ_HEADERS } from '../../adapters/dlq/dead-letter.js';
import { runtimeConnection } from '../../adapters/store/connection.js';
import { readFulfilment } from '../../adapters/store/fulfilments.js';
import { checkRuntimeRole } from '../../adapters/store/runtime-role.js';
import { withTimeout } from '../../base/timeout.js';
import type { CliContext } from '../context.js';
import { groupCopies, summarizeCopies, type DeadLetterSummary } from '../dlq/copies.js';
import { readDlq } from '../dlq/reader.js';
import { header, type DlqRecord } from '../dlq/record.js';
import { cliKafka } from '../kafka.js';
import { cliTemporalClientWithin } from '../temporal-client.js';
import type { WarehouseShipment, WorkflowPart } from './show-result.js';

/** `work`, or a failure naming --timeout when it has not settled within `ms`. */
export function within<T>(ms: number, work: Promise<T>): Promise<T> {
  return withTimeout(work, ms, `no answer within ${ms / 1000} s (--timeout)`);
}

/** The row as the runtime role sees it with app.tenant_id set to the tenant; null when it sees none. */
export async function readRow(
  ctx: CliContext,
  tenantId: string,
  orderId: string,
): Promise<Record<string, unknown> | null> {
  const db = createDb(runtimeConnection(ctx.config), 1);
  try {
    await checkRuntimeRole(db);
    const row = await inTenantTransaction(db, tenantId, (tx) => readFulfilment(tx, tenantId, orderId));
    return (row as Record<string, unknown> | undefined) ?? null;
  } finally {
    await db.end().catch(() => undefined);
  }
}

export async function readWorkflow(
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
    client = await cliTemporalClientWithin(config, timeoutMs);
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
export async function readWarehouse(
  baseUrl: string,
  key: string,
  timeoutMs: number,
): Promise<WarehouseShipment | null> {
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

/** The order's dead letters, copies folded; only headers are kept once a record is matched. */
export async function readDeadLetters(
  ctx: CliContext,
  tenantId: string,
  orderId: string,
): Promise<DeadLetterSummary[]> {
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
