/** What the warehouse tests read of a tenant's orders once they settle: their rows, and their ids by status. */
import type { Db } from '../../src/adapters/store/db.js';
import type { FulfilmentRow } from '../../src/vocabulary/order.js';
import { tenantRows, waitFor } from './harness.js';

/** The order ids of `rows` in each status, sorted: `byStatus('failed')`. */
export function idsByStatus(rows: readonly FulfilmentRow[]): (status: string) => string[] {
  return (status) =>
    rows
      .filter((r) => r.status === status)
      .map((r) => r.order_id)
      .sort();
}

/** Waits until the tenant holds `count` orders and none is pending any more; resolves with their rows. */
export async function untilTenantSettled(
  db: Db,
  tenantId: string,
  count: number,
  what: string,
  timeoutMs: number,
): Promise<FulfilmentRow[]> {
  return waitFor(
    what,
    async () => {
      const rows = await tenantRows(db, tenantId);
      return rows.length === count && rows.every((r) => r.status !== 'pending') ? rows : undefined;
    },
    timeoutMs,
    250,
  );
}
