/**
 * The `fulfilments` table: one row per (tenant, order). Every function takes a transaction already scoped
 * to the tenant (see db.ts) and locks the row before deciding, so two writers for one order serialise here.
 * These are the store's own guards — the workflow decides first, this is the last line.
 */
import type { OrderCancelledData, OrderLine, OrderPlacedData, RecallResolution, StoredOrder, StoredOrderDetail, StoredStatus } from '../../workflows/api.js';
import type { Tx } from './db.js';

export interface FulfilmentRow {
  tenant_id: string;
  order_id: string;
  order_version: number;
  status: StoredStatus;
  customer_id: string | null;
  lines: unknown;
  shipping_address: unknown;
  placed_at: Date | null;
  cancelled_at: Date | null;
  cancelled_before_placement: boolean;
  cancel_refused_at: Date | null;
  shipment_id: string | null;
  failure_reason: string | null;
  last_event_id: string;
  created_at: Date;
  updated_at: Date;
  shipped_at: Date | null;
  /** Operator retries of a failed shipment (migration 003). */
  retry_count: number;
  last_retry_reason: string | null;
  last_retried_at: Date | null;
  /** Who asked for the last retry (migration 006). */
  last_retried_by: string | null;
  /** When the order was last held as failed or recall-failed (migration 006). */
  failed_at: Date | null;
  /** Recalls the warehouse refused for good, and the last resolution of one (migration 006). */
  recall_failures: number;
  resolution: string | null;
  resolved_by: string | null;
  resolved_at: Date | null;
}

interface EventRef {
  eventId: string;
  tenantId: string;
  orderId: string;
  orderVersion: number;
}

export async function lockFulfilment(tx: Tx, tenantId: string, orderId: string): Promise<FulfilmentRow | undefined> {
  const res = await tx.query<FulfilmentRow>(
    'SELECT * FROM fulfilments WHERE tenant_id = $1 AND order_id = $2 FOR UPDATE',
    [tenantId, orderId],
  );
  return res.rows[0];
}

export async function readFulfilment(tx: Tx, tenantId: string, orderId: string): Promise<FulfilmentRow | undefined> {
  const res = await tx.query<FulfilmentRow>('SELECT * FROM fulfilments WHERE tenant_id = $1 AND order_id = $2', [
    tenantId,
    orderId,
  ]);
  return res.rows[0];
}

export function toStored(row: FulfilmentRow, outcome: StoredOrder['outcome']): StoredOrder {
  return {
    outcome,
    status: row.status,
    orderVersion: row.order_version,
    placed: row.placed_at !== null,
    cancelRefused: row.cancel_refused_at !== null,
  };
}

/** The order as a repair run starts from it (StoredOrderDetail), or undefined when the store holds no such order. */
export async function loadOrderDetail(tx: Tx, tenantId: string, orderId: string): Promise<StoredOrderDetail | undefined> {
  const row = await readFulfilment(tx, tenantId, orderId);
  if (!row) return undefined;
  const placement: OrderPlacedData | undefined =
    row.placed_at === null
      ? undefined
      : {
          customerId: row.customer_id ?? '',
          lines: (row.lines ?? []) as OrderLine[],
          ...(row.shipping_address ? { shippingAddress: row.shipping_address as Record<string, unknown> } : {}),
        };
  return {
    status: row.status,
    orderVersion: row.order_version,
    ...(placement ? { placement } : {}),
    ...(row.shipment_id ? { shipmentId: row.shipment_id } : {}),
    ...(row.failure_reason ? { failureReason: row.failure_reason } : {}),
    retries: row.retry_count,
    recallFailures: row.recall_failures,
    cancelRefused: row.cancel_refused_at !== null,
  };
}

/** Records a placement: a new pending row, the data of a placement a tombstone waited for, or a newer version. */
export async function recordPlacement(tx: Tx, e: EventRef, data: OrderPlacedData): Promise<StoredOrder> {
  const row = await lockFulfilment(tx, e.tenantId, e.orderId);
  const placementFields = [data.customerId, JSON.stringify(data.lines), JSON.stringify(data.shippingAddress ?? null)];
  if (!row) {
    const res = await tx.query<FulfilmentRow>(
      `INSERT INTO fulfilments (tenant_id, order_id, order_version, status, customer_id, lines, shipping_address,
                                placed_at, last_event_id)
       VALUES ($1, $2, $3, 'pending', $4, $5, $6, now(), $7) RETURNING *`,
      [e.tenantId, e.orderId, e.orderVersion, ...placementFields, e.eventId],
    );
    return toStored(res.rows[0]!, 'applied');
  }
  if (row.placed_at === null) {
    // The tombstone's placement: keep it cancelled, fill in what was ordered.
    return update(tx, row, 'applied',
      `customer_id = $3, lines = $4, shipping_address = $5, placed_at = now(),
       order_version = GREATEST(order_version, $6), last_event_id = $7`,
      [...placementFields, e.orderVersion, e.eventId]);
  }
  if (row.order_version >= e.orderVersion) return toStored(row, 'stale');
  return update(tx, row, 'applied',
    `customer_id = CASE WHEN status = 'pending' THEN $3 ELSE customer_id END,
     lines = CASE WHEN status = 'pending' THEN $4::jsonb ELSE lines END,
     shipping_address = CASE WHEN status = 'pending' THEN $5::jsonb ELSE shipping_address END,
     order_version = $6, last_event_id = $7`,
    [...placementFields, e.orderVersion, e.eventId]);
}

/** Records a cancellation: a tombstone when nothing was placed, a refusal after shipment, else cancelled. */
export async function recordCancellation(tx: Tx, e: EventRef, _data: OrderCancelledData): Promise<StoredOrder> {
  const row = await lockFulfilment(tx, e.tenantId, e.orderId);
  if (!row) {
    const res = await tx.query<FulfilmentRow>(
      `INSERT INTO fulfilments (tenant_id, order_id, order_version, status, cancelled_at, cancelled_before_placement,
                                last_event_id)
       VALUES ($1, $2, $3, 'cancelled', now(), true, $4) RETURNING *`,
      [e.tenantId, e.orderId, e.orderVersion, e.eventId],
    );
    return toStored(res.rows[0]!, 'applied');
  }
  if (row.order_version >= e.orderVersion) return toStored(row, 'stale');
  if (row.status === 'shipped') {
    return update(tx, row, 'applied', 'cancel_refused_at = now(), order_version = $3, last_event_id = $4', [
      e.orderVersion,
      e.eventId,
    ]);
  }
  // Cancelled already, its shipment not recalled: it stays held for a person (newer version noted).
  if (row.status === 'recall-failed') {
    return update(tx, row, 'applied', 'order_version = $3, last_event_id = $4', [e.orderVersion, e.eventId]);
  }
  return update(tx, row, 'applied',
    "status = 'cancelled', cancelled_at = COALESCE(cancelled_at, now()), order_version = $3, last_event_id = $4",
    [e.orderVersion, e.eventId]);
}

/** Moves a pending order to shipped; any other status is left as it is and returned. */
export async function recordShipped(tx: Tx, tenantId: string, orderId: string, shipmentId: string): Promise<StoredOrder> {
  const row = await lockFulfilment(tx, tenantId, orderId);
  if (!row) throw new Error(`no fulfilment ${tenantId}/${orderId} to mark shipped`);
  if (row.status !== 'pending') return toStored(row, 'stale');
  return update(tx, row, 'applied', "status = 'shipped', shipped_at = now(), shipment_id = $3", [shipmentId]);
}

/** Moves a pending order to failed with the reason, so operators see why it is held. */
export async function recordFailed(tx: Tx, tenantId: string, orderId: string, reason: string): Promise<StoredOrder> {
  const row = await lockFulfilment(tx, tenantId, orderId);
  if (!row) throw new Error(`no fulfilment ${tenantId}/${orderId} to mark failed`);
  if (row.status !== 'pending') return toStored(row, 'stale');
  return update(tx, row, 'applied', "status = 'failed', failure_reason = $3, failed_at = now()", [reason]);
}

/**
 * The warehouse refused for good to recall the shipment of a cancelled order: cancelled → recall-failed, with the
 * refusal and the count of refusals. Any other status is left as it is and returned (stale).
 */
export async function recordRecallFailed(tx: Tx, tenantId: string, orderId: string, reason: string): Promise<StoredOrder> {
  const row = await lockFulfilment(tx, tenantId, orderId);
  if (!row) throw new Error(`no fulfilment ${tenantId}/${orderId} to mark recall-failed`);
  if (row.status !== 'cancelled' && row.status !== 'recall-failed') return toStored(row, 'stale');
  return update(tx, row, 'applied',
    "status = 'recall-failed', failure_reason = $3, failed_at = now(), recall_failures = recall_failures + 1",
    [reason]);
}

/**
 * An operator's resolution of a recall-failed order (the shipment recalled after all, or by hand): recall-failed →
 * cancelled, with what was done, by whom and when. Any other status is left as it is and returned (stale).
 */
export async function resolveRecallFailed(
  tx: Tx,
  tenantId: string,
  orderId: string,
  resolution: { action: RecallResolution; reason: string; by?: string },
): Promise<StoredOrder> {
  const row = await lockFulfilment(tx, tenantId, orderId);
  if (!row) throw new Error(`no fulfilment ${tenantId}/${orderId} to resolve`);
  if (row.status !== 'recall-failed') return toStored(row, 'stale');
  return update(tx, row, 'applied',
    "status = 'cancelled', failure_reason = NULL, resolution = $3, resolved_by = $4, resolved_at = now()",
    [`${resolution.action}: ${resolution.reason}`, resolution.by ?? null]);
}

/**
 * An operator's retry: moves a failed order back to pending, clears failure_reason, counts the retry and records
 * why, when and who asked. Any other status is left as it is and returned (stale): only a failed order is retried.
 */
export async function reopenFailed(tx: Tx, tenantId: string, orderId: string, reason: string, by?: string): Promise<StoredOrder> {
  const row = await lockFulfilment(tx, tenantId, orderId);
  if (!row) throw new Error(`no fulfilment ${tenantId}/${orderId} to retry`);
  if (row.status !== 'failed') return toStored(row, 'stale');
  return update(tx, row, 'applied',
    `status = 'pending', failure_reason = NULL, retry_count = retry_count + 1, last_retry_reason = $3,
     last_retried_at = now(), last_retried_by = $4`,
    [reason, by ?? null]);
}

async function update(
  tx: Tx,
  row: FulfilmentRow,
  outcome: StoredOrder['outcome'],
  assignments: string,
  params: unknown[],
): Promise<StoredOrder> {
  const res = await tx.query<FulfilmentRow>(
    `UPDATE fulfilments SET ${assignments}, updated_at = now()
     WHERE tenant_id = $1 AND order_id = $2 RETURNING *`,
    [row.tenant_id, row.order_id, ...params],
  );
  return toStored(res.rows[0]!, outcome);
}
