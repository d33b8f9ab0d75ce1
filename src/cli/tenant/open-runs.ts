/**
 * What Temporal's visibility says about tenants' open order runs on the service's task queue (TEMPORAL_TASK_QUEUE:
 * one namespace may hold other deployments' orders): how many one tenant has, and which tenants have any.
 *
 * Visibility counts by a search attribute but groups only by ExecutionStatus, so the tenants with open runs are found
 * one per call: the first open run of a tenant not found yet, until none is left or MAX_TENANTS_FOUND are. Visibility
 * is eventually consistent: a run started or closed in the last second may not be counted yet.
 */
import type { Client } from '@temporalio/client';
import { TenantIdAttribute } from '../../../workflows/api.js';

/** The most tenants with open runs one look finds; past it, the command says "at least". */
export const MAX_TENANTS_FOUND = 500;

/** A string literal of the visibility query language. */
const literal = (value: string) => JSON.stringify(value);

/** The open order runs of the task queue: those the bridge or a repair started, which carry the tenant's id. */
function openOrderRuns(taskQueue: string): string {
  return `TaskQueue = ${literal(taskQueue)} AND ExecutionStatus = "Running" AND ${TenantIdAttribute.name} IS NOT NULL`;
}

/** How many open order runs `tenantId` has on `taskQueue`. */
export async function openRunsOf(client: Client, taskQueue: string, tenantId: string): Promise<number> {
  const query = `${openOrderRuns(taskQueue)} AND ${TenantIdAttribute.name} = ${literal(tenantId)}`;
  return (await client.workflow.count(query)).count;
}

export interface TenantsWithOpenRuns {
  tenants: string[];
  /** True when MAX_TENANTS_FOUND were found and the look stopped: there may be more. */
  more: boolean;
}

/** The tenants that have at least one open order run on `taskQueue`, in the order found. */
export async function tenantsWithOpenRuns(
  client: Client,
  taskQueue: string,
  max = MAX_TENANTS_FOUND,
): Promise<TenantsWithOpenRuns> {
  const tenants: string[] = [];
  while (tenants.length < max) {
    const notFound =
      tenants.length > 0 ? ` AND ${TenantIdAttribute.name} NOT IN (${tenants.map(literal).join(', ')})` : '';
    const next = await firstTenant(client, `${openOrderRuns(taskQueue)}${notFound}`);
    if (next === undefined) return { tenants, more: false };
    tenants.push(next);
  }
  return { tenants, more: true };
}

/** The tenant of the first run `query` lists; undefined when it lists none. */
async function firstTenant(client: Client, query: string): Promise<string | undefined> {
  for await (const run of client.workflow.list({ query, pageSize: 1 })) {
    const tenant = run.typedSearchAttributes.get(TenantIdAttribute);
    if (tenant !== undefined) return tenant;
  }
  return undefined;
}
