/**
 * `shipment-missing`, `shipment-unexpected` and `lines-differ`: the store against the warehouse. Pure:
 * shipments-sources.ts reads the rows and the warehouse's shipments, this compares them.
 *
 * - Every shipped order has its shipment under its one key (`ship/<tenant>/<order>`, src/vocabulary/order.ts
 *   shipmentKey), dispatched — else `shipment-missing`;
 * - and the shipment carries the lines the store holds — else `lines-differ`;
 * - every dispatched shipment belongs to an order the store holds as shipped (or as recall-failed: the warehouse
 *   refused to recall it, and a person was told) — else `shipment-unexpected`: a shipment made at the warehouse
 *   with no order behind it, or one that stands for an order the store holds as cancelled or failed. Only a person
 *   can judge those.
 *
 * Rule a reader must not break: a dispatched shipment of an order the store still holds as pending is in flight (the
 * run records it next) until it is older than the slack; an order resolved by a person (`resolution`) is theirs.
 */
import { shipmentKey, type FulfilmentRow } from '../vocabulary/order.js';
import { emptyResult, orderKey, type CheckResult, type Mismatch, type Side } from './mismatch.js';

/** One shipment as the warehouse lists it. */
export interface WarehouseShipment {
  id: string;
  key: string;
  tenantId: string;
  orderId: string;
  lines: unknown;
  status: string;
  createdAt: string;
}

export type ShipmentRow = Pick<
  FulfilmentRow,
  'tenant_id' | 'order_id' | 'status' | 'lines' | 'shipment_id' | 'updated_at' | 'resolution'
>;

export interface ShipmentsInputs {
  /** The orders the store changed in the window. */
  rows: readonly ShipmentRow[];
  /** The rows of the orders the window's shipments name (absent: the store holds no such order). */
  rowOf(tenantId: string, orderId: string): ShipmentRow | undefined;
  /** The warehouse's shipments of the window's tenants, by key. */
  shipments: ReadonlyMap<string, WarehouseShipment>;
  /** Shipments created in the window (those checked for an order behind them). */
  inWindow(shipment: WarehouseShipment): boolean;
  now: number;
  slackMs: number;
}

/** Lines as a canonical string: keys sorted at every level, array order kept. */
export function canonicalLines(lines: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v as Record<string, unknown>)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, x]) => [k, sort(x)]),
          )
        : v;
  return JSON.stringify(sort(lines ?? []));
}

/** Compares the store's shipped orders and the warehouse's shipments. */
export function compareShipments(input: ShipmentsInputs): CheckResult {
  const result = emptyResult('shipments');
  const seen = new Set<string>();
  for (const row of input.rows) {
    result.compared += 1;
    seen.add(orderKey(row.tenant_id, row.order_id));
    if (row.status !== 'shipped') continue;
    const shipment = input.shipments.get(shipmentKey(row.tenant_id, row.order_id));
    const store: Side = { source: 'store', state: `shipped as ${row.shipment_id ?? '?'}` };
    if (!shipment || shipment.status !== 'dispatched') {
      result.mismatches.push(mismatch('shipment-missing', row.tenant_id, row.order_id, store, shipment));
      continue;
    }
    if (canonicalLines(shipment.lines) !== canonicalLines(row.lines))
      result.mismatches.push(
        mismatch(
          'lines-differ',
          row.tenant_id,
          row.order_id,
          { source: 'store', state: `lines ${canonicalLines(row.lines)}` },
          shipment,
          `lines ${canonicalLines(shipment.lines)}`,
        ),
      );
  }
  for (const shipment of input.shipments.values()) {
    if (shipment.status !== 'dispatched' || !input.inWindow(shipment)) continue;
    if (!seen.has(orderKey(shipment.tenantId, shipment.orderId))) result.compared += 1;
    const found = unexpected(shipment, input);
    if (found) result.mismatches.push(found);
  }
  return result;
}

function unexpected(shipment: WarehouseShipment, input: ShipmentsInputs): Mismatch | undefined {
  const row = input.rowOf(shipment.tenantId, shipment.orderId);
  if (row && (row.status === 'shipped' || row.status === 'recall-failed' || row.resolution !== null)) return undefined;
  if (row?.status === 'pending' && input.now - Date.parse(shipment.createdAt) < input.slackMs) return undefined;
  // The key is the warehouse's: a shipment whose key is not its order's is someone else's doing too.
  const store = row ? `${row.status} since ${row.updated_at.toISOString()}` : 'no such order';
  return mismatch(
    'shipment-unexpected',
    shipment.tenantId,
    shipment.orderId,
    { source: 'store', state: store },
    shipment,
  );
}

function mismatch(
  kind: Mismatch['kind'],
  tenantId: string,
  orderId: string,
  store: Side,
  shipment: WarehouseShipment | undefined,
  detail?: string,
): Mismatch {
  const state = shipment
    ? `${shipment.status} ${shipment.id || '(burnt key)'} under ${shipment.key} at ${shipment.createdAt}${detail ? `, ${detail}` : ''}`
    : `nothing under ${shipmentKey(tenantId, orderId)}`;
  return { kind, tenantId, orderId, sides: [store, { source: 'warehouse', state }] };
}
