/**
 * The runs Temporal holds open, read through its visibility store in pages: one listing per tenant (`TenantId = …
 * AND ExecutionStatus = 'Running'`, the search attribute every order run carries), never one call per order. Used by
 * the runs check (runs.ts) and by the skipped check (an unrecorded event of an order with an open run is in flight).
 *
 * Rule a reader must not break: visibility is eventually consistent — a run that just opened or closed may be listed
 * as it was a moment ago. A check that finds a mismatch from this listing confirms it against the order's own run
 * (describe) before it reports it (confirmOpen).
 */
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import { ID_PATTERN } from '../vocabulary/order.js';
import { ORDER_WORKFLOW_TYPE, orderWorkflowId } from '../../workflows/api.js';
import { orderKey } from './mismatch.js';

/** An open run of an order: its key (`tenant/order`) and when the run started. */
export interface OpenRun {
  key: string;
  tenantId: string;
  orderId: string;
  runId: string;
  startedAt: Date;
}

/** Runs per visibility page. */
const PAGE_SIZE = 500;

/** The order of a workflow id `order/<tenant>/<order>`, or undefined for any other id. */
export function orderOfWorkflowId(workflowId: string): { tenantId: string; orderId: string } | undefined {
  const m = /^order\/([^/]+)\/(.+)$/.exec(workflowId);
  if (!m || !ID_PATTERN.test(m[1]!) || !ID_PATTERN.test(m[2]!)) return undefined;
  return { tenantId: m[1]!, orderId: m[2]! };
}

/** Every open order run of `tenants`, keyed `tenant/order`. */
export async function listOpenRuns(client: Client, tenants: readonly string[]): Promise<Map<string, OpenRun>> {
  const open = new Map<string, OpenRun>();
  for (const tenantId of tenants) {
    if (!ID_PATTERN.test(tenantId)) throw new Error(`tenant id ${JSON.stringify(tenantId)} is not a tenant id`);
    const query = `WorkflowType = '${ORDER_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TenantId = '${tenantId}'`;
    for await (const w of client.workflow.list({ query, pageSize: PAGE_SIZE })) {
      const order = orderOfWorkflowId(w.workflowId);
      if (!order) continue;
      const key = orderKey(order.tenantId, order.orderId);
      open.set(key, { key, ...order, runId: w.runId, startedAt: w.startTime });
    }
  }
  return open;
}

/** Whether the order's latest run is open now, asked of the run itself (not the visibility store). */
export async function confirmOpen(client: Client, tenantId: string, orderId: string): Promise<boolean> {
  try {
    const d = await client.workflow.getHandle(orderWorkflowId(tenantId, orderId)).describe();
    return d.status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}
