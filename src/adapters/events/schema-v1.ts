/**
 * Schema version 1 of the order events on the input topic: the contract the service started with, and the shape
 * of the internal model (OrderEvent in src/vocabulary/order.ts), so its upcaster (upcast.ts) is the identity.
 *
 *   envelope   eventId, type, schemaVersion: 1, occurredAt, tenantId, orderId, orderVersion, correlationId?
 *   placed     data: { customerId, lines: [{sku, quantity}] (1–1000), shippingAddress? }
 *   cancelled  data: { reason? }
 *
 * Each schema is the whole record of one type, `type` and `schemaVersion` excepted: the parser reads those first
 * to pick the schema (envelope.ts). The rules themselves are shared by every version (rules.ts).
 */
import { z } from 'zod';
import { ORDER_CANCELLED, ORDER_PLACED, type OrderEventType } from '../../vocabulary/order.js';
import { AN_OBJECT, cancellationReason, envelopeFields, orderLines, shippingAddress, text } from './rules.js';

export const placedDataV1 = z.object(
  { customerId: text(1, 128), lines: orderLines('lines'), shippingAddress },
  AN_OBJECT,
);

export const cancelledDataV1 = z.object({ reason: cancellationReason }, AN_OBJECT);

export const schemaV1 = {
  version: 1,
  types: {
    [ORDER_PLACED]: z.object({ ...envelopeFields, data: placedDataV1 }),
    [ORDER_CANCELLED]: z.object({ ...envelopeFields, data: cancelledDataV1 }),
  } satisfies Record<OrderEventType, z.AnyZodObject>,
} as const;

/** A version 1 record of each type, as its schema validated it. */
export type RecordsV1 = { [T in OrderEventType]: z.output<(typeof schemaV1.types)[T]> };
