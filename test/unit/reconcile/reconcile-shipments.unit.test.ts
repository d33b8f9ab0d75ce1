import { describe, expect, it } from 'vitest';
import { kinds } from '../../support/reconcile.js';
import {
  canonicalLines,
  compareShipments,
  type ShipmentRow,
  type ShipmentsInputs,
  type WarehouseShipment,
} from '../../../src/reconcile/shipments.js';

const NOW = Date.parse('2026-03-10T12:00:00Z');
const LINES = [{ sku: 'A-1', quantity: 2 }];

function row(order: string, status: ShipmentRow['status'], over: Partial<ShipmentRow> = {}): ShipmentRow {
  return {
    tenant_id: 't1',
    order_id: order,
    status,
    lines: LINES,
    shipment_id: status === 'shipped' ? `shp_${order}` : null,
    updated_at: new Date(NOW - 300_000),
    resolution: null,
    ...over,
  };
}

function shipment(order: string, over: Partial<WarehouseShipment> = {}): WarehouseShipment {
  return {
    id: `shp_${order}`,
    key: `ship/t1/${order}`,
    tenantId: 't1',
    orderId: order,
    lines: LINES,
    status: 'dispatched',
    createdAt: new Date(NOW - 300_000).toISOString(),
    ...over,
  };
}

function inputs(
  rows: ShipmentRow[],
  shipments: WarehouseShipment[],
  over: Partial<ShipmentsInputs> = {},
): ShipmentsInputs {
  return {
    rows,
    rowOf: (_t, o) => rows.find((r) => r.order_id === o),
    shipments: new Map(shipments.map((s) => [s.key, s])),
    inWindow: () => true,
    now: NOW,
    slackMs: 60_000,
    ...over,
  };
}

describe('shipments: the store against the warehouse', () => {
  it('a shipped order with its dispatched shipment and the same lines agrees, key order aside', () => {
    const r = compareShipments(
      inputs([row('a', 'shipped')], [shipment('a', { lines: [{ quantity: 2, sku: 'A-1' }] })]),
    );
    expect(kinds(r)).toEqual([]);
    expect(canonicalLines([{ quantity: 2, sku: 'A-1' }])).toBe(canonicalLines(LINES));
  });

  it('a shipped order without a dispatched shipment under its key is shipment-missing', () => {
    const r = compareShipments(
      inputs([row('none', 'shipped'), row('recalled', 'shipped')], [shipment('recalled', { status: 'cancelled' })]),
    );
    expect(kinds(r)).toEqual(['shipment-missing none', 'shipment-missing recalled']);
    expect(r.mismatches[0]!.sides[1]).toEqual({ source: 'warehouse', state: 'nothing under ship/t1/none' });
  });

  it('other lines at the warehouse are lines-differ, each side stated', () => {
    const r = compareShipments(
      inputs([row('a', 'shipped')], [shipment('a', { lines: [{ sku: 'A-1', quantity: 3 }] })]),
    );
    expect(kinds(r)).toEqual(['lines-differ a']);
    expect(r.mismatches[0]!.sides[0]!.state).toBe('lines [{"quantity":2,"sku":"A-1"}]');
  });

  it('a dispatched shipment with no order, or for a cancelled or failed one, is shipment-unexpected', () => {
    const rows = [
      row('c', 'cancelled'),
      row('f', 'failed'),
      row('rf', 'recall-failed'),
      row('res', 'cancelled', { resolution: 'recalled-by-hand: x' }),
    ];
    const r = compareShipments(
      inputs(rows, [shipment('ghost'), shipment('c'), shipment('f'), shipment('rf'), shipment('res')]),
    );
    expect(kinds(r)).toEqual(['shipment-unexpected ghost', 'shipment-unexpected c', 'shipment-unexpected f']);
    expect(r.mismatches[0]!.sides[0]).toEqual({ source: 'store', state: 'no such order' });
  });

  it('a shipment of a pending order is in flight within the slack, unexpected after it; outside the window unchecked', () => {
    const young = shipment('p', { createdAt: new Date(NOW - 5_000).toISOString() });
    expect(kinds(compareShipments(inputs([row('p', 'pending')], [young])))).toEqual([]);
    expect(kinds(compareShipments(inputs([row('p', 'pending')], [shipment('p')])))).toEqual(['shipment-unexpected p']);
    expect(kinds(compareShipments(inputs([], [shipment('ghost')], { inWindow: () => false })))).toEqual([]);
  });
});
