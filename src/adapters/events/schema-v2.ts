/**
 * Schema version 2 of the order events on the input topic: version 1 with the placement's `data.lines` renamed
 * `data.items` (the same `{sku, quantity}` elements and limits) and an optional `data.currency`, the ISO 4217 code
 * of the order's prices — three uppercase letters, checked by shape, not against the ISO list. The envelope and
 * the cancellation are unchanged. The internal model has no use for the currency: the upcaster (upcast.ts) drops
 * it, and renames `items` back to `lines`.
 *
 *   envelope   eventId, type, schemaVersion: 2, occurredAt, tenantId, orderId, orderVersion, correlationId?
 *   placed     data: { customerId, items: [{sku, quantity}] (1–1000), shippingAddress?, currency? }
 *   cancelled  data: { reason? }
 *
 * Built from version 1's schema, so every rule of the contract (lengths, NUL and surrogates, bounds, RFC 3339,
 * the safe correlation id, the address limits) holds for version 2 alike.
 */
import { z } from 'zod';
import { ORDER_CANCELLED, ORDER_PLACED, type OrderEventType } from '../../vocabulary/order.js';
import { AN_OBJECT, envelopeFields, orderLines } from './rules.js';
import { cancelledDataV1, placedDataV1 } from './schema-v1.js';

/** An ISO 4217 currency code, by shape: three uppercase ASCII letters. */
export const CURRENCY_PATTERN = /^[A-Z]{3}$/;
const CURRENCY_EXPECTED = 'an ISO 4217 currency code of three uppercase letters such as EUR';
const currency = z.string({ invalid_type_error: CURRENCY_EXPECTED }).regex(CURRENCY_PATTERN, CURRENCY_EXPECTED);

const { customerId, shippingAddress } = placedDataV1.shape;

export const placedDataV2 = z.object(
  { customerId, items: orderLines('items'), shippingAddress, currency: currency.optional() },
  AN_OBJECT,
);

export const schemaV2 = {
  version: 2,
  types: {
    [ORDER_PLACED]: z.object({ ...envelopeFields, data: placedDataV2 }),
    [ORDER_CANCELLED]: z.object({ ...envelopeFields, data: cancelledDataV1 }),
  } satisfies Record<OrderEventType, z.AnyZodObject>,
} as const;

/** A version 2 record of each type, as its schema validated it. */
export type RecordsV2 = { [T in OrderEventType]: z.output<(typeof schemaV2.types)[T]> };
