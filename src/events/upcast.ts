/**
 * Upcasters: each schema version's validated record → the internal model (OrderEvent in src/order.ts), less
 * what the parser adds itself (type, schemaVersion, origin, the header's correlation id). One pair per version,
 * pure and total: whatever passed that version's schema upcasts, and nothing of the record reaches the model
 * unless an upcaster names it. A new version gets its own pair here; the older ones never change.
 */
import { ORDER_CANCELLED, ORDER_PLACED, type OrderEvent } from '../order.js';
import type { CancelledV1, PlacedV1 } from './schema-v1.js';
import type { CancelledV2, PlacedV2 } from './schema-v2.js';

type Placed = Extract<OrderEvent, { type: typeof ORDER_PLACED }>;
type Cancelled = Extract<OrderEvent, { type: typeof ORDER_CANCELLED }>;

/** What an upcaster makes of a placement: the internal model less what the parser adds. */
export type PlacedModel = Omit<Placed, 'type' | 'schemaVersion' | 'origin'>;
/** What an upcaster makes of a cancellation: the internal model less what the parser adds. */
export type CancelledModel = Omit<Cancelled, 'type' | 'schemaVersion' | 'origin'>;

export interface Upcaster<P, C> {
  placed(record: P): PlacedModel;
  cancelled(record: C): CancelledModel;
}

/** Version 1 is the internal model's shape: the identity. */
export const upcastV1: Upcaster<PlacedV1, CancelledV1> = {
  placed: (record) => record,
  cancelled: (record) => record,
};

/**
 * Version 2 → the model: `data.items` becomes `data.lines`; `data.currency` is dropped (nothing downstream uses
 * it: the warehouse ships lines, it does not price them). The envelope and the cancellation are version 1's.
 */
export const upcastV2: Upcaster<PlacedV2, CancelledV2> = {
  placed: ({ data: { customerId, items, shippingAddress }, ...envelope }) => ({
    ...envelope,
    data: { customerId, lines: items, ...(shippingAddress !== undefined ? { shippingAddress } : {}) },
  }),
  cancelled: (record) => upcastV1.cancelled(record),
};
