/**
 * Upcasters: each schema version's validated record → the internal model (OrderEvent in src/vocabulary/order.ts), less
 * what the parser adds itself (type, schemaVersion, origin, the header's correlation id). One function per version
 * and type, keyed by the type (a type without one does not compile), pure and total: whatever passed that version's
 * schema upcasts, and nothing of the record reaches the model unless an upcaster names it. A new version gets its
 * own upcaster here; the older ones never change.
 */
import { ORDER_CANCELLED, ORDER_PLACED, type OrderEventOf, type OrderEventType } from '../../vocabulary/order.js';
import type { RecordsV1 } from './schema-v1.js';
import type { RecordsV2 } from './schema-v2.js';

/** What an upcaster makes of a record of type T: the internal model less what the parser adds. */
export type ModelOf<T extends OrderEventType> = Omit<OrderEventOf<T>, 'type' | 'schemaVersion' | 'origin'>;

/** One version's upcaster: for each handled type, that version's validated record → the model. */
export type Upcaster<Records extends Record<OrderEventType, unknown>> = {
  readonly [T in OrderEventType]: (record: Records[T]) => ModelOf<T>;
};

/** Version 1 is the internal model's shape: the identity. */
export const upcastV1: Upcaster<RecordsV1> = {
  [ORDER_PLACED]: (record) => record,
  [ORDER_CANCELLED]: (record) => record,
};

/**
 * Version 2 → the model: `data.items` becomes `data.lines`; `data.currency` is dropped (nothing downstream uses
 * it: the warehouse ships lines, it does not price them). The envelope and the cancellation are version 1's.
 */
export const upcastV2: Upcaster<RecordsV2> = {
  [ORDER_PLACED]: ({ data: { customerId, items, shippingAddress }, ...envelope }) => ({
    ...envelope,
    data: { customerId, lines: items, ...(shippingAddress !== undefined ? { shippingAddress } : {}) },
  }),
  [ORDER_CANCELLED]: (record) => upcastV1[ORDER_CANCELLED](record),
};
