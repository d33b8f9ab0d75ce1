/**
 * The `fulfilments` table: one row per (tenant, order). Every function takes a transaction already scoped to the tenant
 * (see src/adapters/store/db.ts) and locks the row before deciding, so two writers for one order serialise here. These
 * are the store's own guards — the workflow decides first, this is the last line. Its row's shape is FulfilmentRow
 * (src/vocabulary/order.ts).
 *
 * Every change that writes the row also writes its status event, when it is one, into the outbox in the same
 * transaction (recordStatusChange, after the row's lock: so one order's outbox rows follow its commit order). A writer
 * passes the change's context: where the event goes and what made it.
 */
import {
  ORDER_CANCELLED,
  ORDER_PLACED,
  type FulfilmentRow,
  type OrderCancelledData,
  type OrderEventType,
  type OrderLine,
  type OrderPlacedData,
  type RecallResolution,
  type StoredOrder,
  type StoredOrderDetail,
  type StoredStatus,
} from '../../vocabulary/order.js';
import {
  orderTransition,
  transitionEffect,
  versionRelation,
  type OrderPosition,
  type OrderTransition,
} from '../../vocabulary/order-rules.js';
import type { Tx } from './db.js';
import { recordStatusChange, type ChangeContext } from '../status-events/outbox.js';

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
  const placement = placementOf(row);
  return {
    outcome,
    status: row.status,
    orderVersion: row.order_version,
    placed: row.placed_at !== null,
    cancelRefused: row.cancel_refused_at !== null,
    ...(placement ? { placement } : {}),
  };
}

/** The placement the row holds (what a shipment of the order ships), or undefined before any placement. */
export function placementOf(
  row: Pick<FulfilmentRow, 'placed_at' | 'customer_id' | 'lines' | 'shipping_address'>,
): OrderPlacedData | undefined {
  if (row.placed_at === null) return undefined;
  return {
    customerId: row.customer_id ?? '',
    lines: (row.lines ?? []) as OrderLine[],
    ...(row.shipping_address ? { shippingAddress: row.shipping_address as Record<string, unknown> } : {}),
  };
}

/** The order as a repair run starts from it (StoredOrderDetail), or undefined when the store holds no such order. */
export async function loadOrderDetail(
  tx: Tx,
  tenantId: string,
  orderId: string,
): Promise<StoredOrderDetail | undefined> {
  const row = await readFulfilment(tx, tenantId, orderId);
  if (!row) return undefined;
  const placement = placementOf(row);
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

/** Where the row puts the order in the rules' terms (src/vocabulary/order-rules.ts): none, a tombstone, or its status. */
export function positionOf(row: Pick<FulfilmentRow, 'status' | 'placed_at'> | undefined): OrderPosition {
  if (!row) return 'none';
  return row.placed_at === null && row.status === 'cancelled' ? 'tombstone' : row.status;
}

/** What the order's rules say `e` of `type` does to the locked `row`. */
export function transitionFor(
  row: Pick<FulfilmentRow, 'status' | 'placed_at' | 'order_version'> | undefined,
  type: OrderEventType,
  e: Pick<EventRef, 'orderVersion'>,
): OrderTransition {
  return orderTransition(positionOf(row), type, versionRelation(e.orderVersion, row?.order_version ?? 0));
}

/** A transition the rules never give an event of this type here: a broken invariant, not a refusal. */
function impossible(row: FulfilmentRow | undefined, what: string, transition: OrderTransition): never {
  throw new Error(`${what} of ${row ? `a ${positionOf(row)} order` : 'no order'} cannot be ${transition}`);
}

/**
 * Records a placement as the order's rules say (orderTransition): a new pending row, the data of a placement a
 * tombstone waited for, or a newer version (a pending order takes its lines). The placement's correlation id becomes
 * the order's.
 */
export async function recordPlacement(
  tx: Tx,
  e: EventRef,
  data: OrderPlacedData,
  change: ChangeContext,
): Promise<StoredOrder> {
  const row = await lockFulfilment(tx, e.tenantId, e.orderId);
  const placementFields = [data.customerId, JSON.stringify(data.lines), JSON.stringify(data.shippingAddress ?? null)];
  const correlationId = change.correlationId ?? null;
  const transition = transitionFor(row, ORDER_PLACED, e);
  if (!row) {
    if (transition !== 'place') return impossible(row, 'a placement', transition);
    return insert(
      tx,
      change,
      `INSERT INTO fulfilments (tenant_id, order_id, order_version, status, customer_id, lines, shipping_address,
                                placed_at, last_event_id, correlation_id)
       VALUES ($1, $2, $3, 'pending', $4, $5, $6, now(), $7, $8) RETURNING *`,
      [e.tenantId, e.orderId, e.orderVersion, ...placementFields, e.eventId, correlationId],
    );
  }
  switch (transition) {
    case 'stale':
      return toStored(row, 'stale');
    case 'join-tombstone':
      // Guard: only a row still without its placement takes one.
      return update(
        tx,
        row,
        change,
        `customer_id = $3, lines = $4, shipping_address = $5, placed_at = now(),
         order_version = GREATEST(order_version, $6), last_event_id = $7, correlation_id = COALESCE($8, correlation_id)`,
        [...placementFields, e.orderVersion, e.eventId, correlationId],
      );
    case 'amend': {
      // The rules say whether the order takes the newer lines (a pending one) or only its version (any other).
      const version = [e.orderVersion, e.eventId, correlationId];
      if (!transitionEffect(positionOf(row), transition).takesPlacement)
        return update(
          tx,
          row,
          change,
          'order_version = $3, last_event_id = $4, correlation_id = COALESCE($5, correlation_id)',
          version,
        );
      return update(
        tx,
        row,
        change,
        `customer_id = $3, lines = $4::jsonb, shipping_address = $5::jsonb,
         order_version = $6, last_event_id = $7, correlation_id = COALESCE($8, correlation_id)`,
        [...placementFields, ...version],
      );
    }
    default:
      return impossible(row, 'a placement', transition);
  }
}

/**
 * Records a cancellation as the order's rules say (orderTransition): a tombstone when nothing was placed, a refusal
 * after shipment, the version noted on an order held for its recall, else cancelled — with a recall when the order
 * was held as failed.
 */
export async function recordCancellation(
  tx: Tx,
  e: EventRef,
  _data: OrderCancelledData,
  change: ChangeContext,
): Promise<StoredOrder> {
  const row = await lockFulfilment(tx, e.tenantId, e.orderId);
  const transition = transitionFor(row, ORDER_CANCELLED, e);
  if (!row) {
    if (transition !== 'tombstone') return impossible(row, 'a cancellation', transition);
    return insert(
      tx,
      change,
      `INSERT INTO fulfilments (tenant_id, order_id, order_version, status, cancelled_at, cancelled_before_placement,
                                last_event_id, correlation_id)
       VALUES ($1, $2, $3, 'cancelled', now(), true, $4, $5) RETURNING *`,
      [e.tenantId, e.orderId, e.orderVersion, e.eventId, change.correlationId ?? null],
    );
  }
  const versionOnly = 'order_version = $3, last_event_id = $4';
  const params = [e.orderVersion, e.eventId];
  const cancel = `status = 'cancelled', cancelled_at = COALESCE(cancelled_at, now()), ${versionOnly}`;
  switch (transition) {
    case 'stale':
      return toStored(row, 'stale');
    case 'refuse':
      return update(tx, row, change, `cancel_refused_at = now(), ${versionOnly}`, params);
    case 'note-version':
      return update(tx, row, change, versionOnly, params);
    case 'cancel':
      return update(tx, row, change, cancel, params);
    case 'cancel-and-recall':
      return { ...(await update(tx, row, change, cancel, params)), recall: true };
    default:
      return impossible(row, 'a cancellation', transition);
  }
}

/** Moves a pending order to shipped; any other status is left as it is and returned. */
export async function recordShipped(
  tx: Tx,
  tenantId: string,
  orderId: string,
  shipmentId: string,
  change: ChangeContext,
): Promise<StoredOrder> {
  return transition(
    tx,
    { tenantId, orderId, what: 'mark shipped', from: ['pending'] },
    change,
    "status = 'shipped', shipped_at = now(), shipment_id = $3",
    [shipmentId],
  );
}

/** Moves a pending order to failed with the reason, so operators see why it is held. */
export async function recordFailed(
  tx: Tx,
  tenantId: string,
  orderId: string,
  reason: string,
  change: ChangeContext,
): Promise<StoredOrder> {
  return transition(
    tx,
    { tenantId, orderId, what: 'mark failed', from: ['pending'] },
    change,
    "status = 'failed', failure_reason = $3, failed_at = now()",
    [reason],
  );
}

/**
 * The warehouse refused for good to recall the shipment of a cancelled order: cancelled → recall-failed, with the
 * refusal and the count of refusals. Any other status is left as it is and returned (stale).
 */
export async function recordRecallFailed(
  tx: Tx,
  tenantId: string,
  orderId: string,
  reason: string,
  change: ChangeContext,
): Promise<StoredOrder> {
  return transition(
    tx,
    { tenantId, orderId, what: 'mark recall-failed', from: ['cancelled', 'recall-failed'] },
    change,
    "status = 'recall-failed', failure_reason = $3, failed_at = now(), recall_failures = recall_failures + 1",
    [reason],
  );
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
  change: ChangeContext,
): Promise<StoredOrder> {
  return transition(
    tx,
    { tenantId, orderId, what: 'resolve', from: ['recall-failed'] },
    change,
    "status = 'cancelled', failure_reason = NULL, resolution = $3, resolved_by = $4, resolved_at = now()",
    [`${resolution.action}: ${resolution.reason}`, resolution.by ?? null],
  );
}

/**
 * An operator's retry: moves a failed order back to pending, clears failure_reason, counts the retry and records
 * why, when and who asked. Any other status is left as it is and returned (stale): only a failed order is retried.
 */
export async function reopenFailed(
  tx: Tx,
  tenantId: string,
  orderId: string,
  reason: string,
  by: string | undefined,
  change: ChangeContext,
): Promise<StoredOrder> {
  return transition(
    tx,
    { tenantId, orderId, what: 'retry', from: ['failed'] },
    change,
    `status = 'pending', failure_reason = NULL, retry_count = retry_count + 1, last_retry_reason = $3,
     last_retried_at = now(), last_retried_by = $4`,
    [reason, by ?? null],
  );
}

/**
 * Locks the order's row and, when its status is one of `from`, applies `assignments` with its status event; any other
 * status leaves the row as it is, returned as stale. No row is an error naming what was to be done (`what`).
 */
async function transition(
  tx: Tx,
  move: { tenantId: string; orderId: string; what: string; from: readonly StoredStatus[] },
  change: ChangeContext,
  assignments: string,
  params: unknown[],
): Promise<StoredOrder> {
  const row = await lockFulfilment(tx, move.tenantId, move.orderId);
  if (!row) throw new Error(`no fulfilment ${move.tenantId}/${move.orderId} to ${move.what}`);
  if (!move.from.includes(row.status)) return toStored(row, 'stale');
  return update(tx, row, change, assignments, params);
}

/** Inserts the order's first row (`sql` returns it) and its status event, when it is one. */
async function insert(tx: Tx, change: ChangeContext, sql: string, params: unknown[]): Promise<StoredOrder> {
  const after = (await tx.query<FulfilmentRow>(sql, params)).rows[0]!;
  await recordStatusChange(tx, undefined, after, change);
  return toStored(after, 'applied');
}

/** Applies `assignments` to the locked `row` and writes the change's status event, when it is one. */
async function update(
  tx: Tx,
  row: FulfilmentRow,
  change: ChangeContext,
  assignments: string,
  params: unknown[],
): Promise<StoredOrder> {
  const res = await tx.query<FulfilmentRow>(
    `UPDATE fulfilments SET ${assignments}, updated_at = now()
     WHERE tenant_id = $1 AND order_id = $2 RETURNING *`,
    [row.tenant_id, row.order_id, ...params],
  );
  const after = res.rows[0]!;
  await recordStatusChange(tx, row, after, change);
  return toStored(after, 'applied');
}
