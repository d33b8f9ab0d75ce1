/**
 * What `order show` finds of one order: its row, its workflow, its shipment and its dead letters, and which sources
 * could not be read; the row as shown, personal data redacted unless --reveal.
 */
import type { OrderView } from '../../../workflows/api.js';
import type { DeadLetterSummary } from '../dlq/copies.js';
import { REDACTED } from '../redact.js';

/** Row columns holding personal data, redacted unless --reveal. */
export const PERSONAL_COLUMNS = ['customer_id', 'shipping_address'] as const;

export interface WorkflowPart {
  workflowId: string;
  runId: string;
  /** RUNNING, COMPLETED, CONTINUED_AS_NEW, TERMINATED, … */
  status: string;
  running: boolean;
  startTime: string;
  closeTime: string | null;
  taskQueue: string;
  historyLength: number;
  /** The OrderStatus search attribute. */
  orderStatus: string | null;
  /** The `status` query's answer; null when no worker answered (see `problems`). */
  view: OrderView | null;
}

export interface WarehouseShipment {
  id: string;
  status: string;
  createdAt: string;
  cancelledAt: string | null;
}

export interface ShipmentPart {
  key: string;
  /** The shipment id the row recorded. */
  rowShipmentId: string | null;
  /** The shipment id the workflow's view recorded. */
  workflowShipmentId: string | null;
  /** What the warehouse holds under the key: null when nothing, undefined when it could not be asked. */
  warehouse?: WarehouseShipment | null;
}

export interface OrderShowResult {
  tenantId: string;
  orderId: string;
  /** The fulfilments row, dates as RFC 3339, personal data redacted unless --reveal; null when the tenant has none. */
  row: Record<string, unknown> | null;
  workflow: WorkflowPart | null;
  shipment: ShipmentPart;
  deadLetters: DeadLetterSummary[];
  revealed: boolean;
  /** A source that could not be read, one line each (exit 1 when any). */
  problems: string[];
}

/** The row as `order show` shows it: dates as RFC 3339, personal data redacted unless `reveal`. */
export function shownRow(row: Record<string, unknown>, reveal: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    out[k] =
      !reveal && v !== null && (PERSONAL_COLUMNS as readonly string[]).includes(k)
        ? REDACTED
        : v instanceof Date
          ? v.toISOString()
          : v;
  }
  return out;
}
