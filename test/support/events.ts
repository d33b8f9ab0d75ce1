/** Order events for tests, with sensible defaults; no services, so unit tests can use them too. */
import { randomUUID } from 'node:crypto';

/** Builds order events with sensible defaults. */
export const events = {
  placed(tenantId: string, orderId: string, over: Record<string, unknown> = {}) {
    return {
      eventId: `placed-${randomUUID()}`,
      type: 'orders.OrderPlaced',
      schemaVersion: 1,
      occurredAt: new Date().toISOString(),
      tenantId,
      orderId,
      orderVersion: 1,
      correlationId: `corr-${orderId}`,
      data: { customerId: 'cust-1', lines: [{ sku: 'SKU-1', quantity: 1 }] },
      ...over,
    };
  },
  cancelled(tenantId: string, orderId: string, over: Record<string, unknown> = {}) {
    return {
      eventId: `cancelled-${randomUUID()}`,
      type: 'orders.OrderCancelled',
      schemaVersion: 1,
      occurredAt: new Date().toISOString(),
      tenantId,
      orderId,
      orderVersion: 2,
      data: { reason: 'customer changed their mind' },
      ...over,
    };
  },
};
