/**
 * What an operator can ask of an order's workflow, as Temporal updates: retry the shipment of an order held as
 * `failed`, and resolve an order held as `recall-failed`. Both are sent by `fulfilment order retry|resolve`, to the
 * order's open run or, when its run has closed, with the start of a repair run (update-with-start; see
 * docs/operating.md). Each request names who asked and why, both recorded in the store; give each an update id —
 * Temporal applies one id once per run — and the store's claim keeps one retry or resolution to one effect.
 */
import { defineUpdate } from '@temporalio/workflow';
import type { OrderStatus, RecallResolution } from '../src/vocabulary/order.js';

/** What an operator asks of `retryShipment`. */
export interface RetryShipmentRequest {
  /** Why the order is tried again: recorded in the store (`last_retry_reason`) and the order's notes. */
  reason: string;
  /** Who asked (`last_retried_by`); absent on requests from before it was recorded. */
  by?: string;
}

/** What an accepted retry did: the order is back to `pending` in the workflow and in the store. */
export interface RetryShipmentResult {
  tenantId: string;
  orderId: string;
  /** Which retry of this order it was, from 1 (the store's `retry_count` after it). */
  retry: number;
  /** Status after the retry: always `pending` (the shipment is tried again under the same key). */
  status: OrderStatus;
  /** The failure reason the retry cleared. */
  clearedFailure?: string;
  reason: string;
  by?: string;
  /** Workflow time of the retry, ISO 8601. */
  retriedAt: string;
  /** The warehouse idempotency key the shipment is tried again under (unchanged: at most one shipment). */
  shipmentKey: string;
}

/**
 * Re-drives an order held as `failed`. The validator refuses (nothing is recorded) unless the order is `failed`,
 * naming the status it is in; an accepted retry moves it back to `pending` in the store (claim
 * `retry/<tenant>/<order>/<n>`) and in the workflow, notes the reason, and ships again under the same key.
 */
export const retryShipmentUpdate = defineUpdate<RetryShipmentResult, [RetryShipmentRequest]>('retryShipment');

/** What an operator asks of `resolveRecall`. */
export interface ResolveRecallRequest {
  action: RecallResolution;
  /** Why, recorded in the store (`resolution`) and the order's notes. */
  reason: string;
  /** Who asked (`resolved_by`). */
  by?: string;
}

/** What a resolution did: `cancelled` when the shipment is recalled (or was by hand), else still `recall-failed`. */
export interface ResolveRecallResult {
  tenantId: string;
  orderId: string;
  action: RecallResolution;
  status: OrderStatus;
  /** The warehouse's refusal when a retried recall was refused again. */
  refusal?: string;
  reason: string;
  by?: string;
  /** Workflow time of the resolution, ISO 8601. */
  resolvedAt: string;
}

/**
 * Resolves an order held as `recall-failed` (a cancelled order whose shipment the warehouse refused to recall). The
 * validator refuses unless the order is `recall-failed`; a recall that succeeds, or one done by hand, records the
 * order `cancelled` (claim `resolve/<tenant>/<order>/<n>` for its n-th refusal); a retried recall refused again
 * leaves it `recall-failed` with the new reason.
 */
export const resolveRecallUpdate = defineUpdate<ResolveRecallResult, [ResolveRecallRequest]>('resolveRecall');
