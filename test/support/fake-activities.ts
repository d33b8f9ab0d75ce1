/**
 * In-memory activities for workflow tests on the time-skipping server: they keep rows the way the store
 * would (same transitions, simplified) and record every call, so tests can assert what the workflow did.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { OrderActivities, RefusedEvent, ShipInput } from '../../activities/index.js';
import { ORDER_PLACED, type OrderEvent } from '../../workflows/api.js';
import type { StoredOrder } from '../../workflows/order-state.js';

export interface FakeRow {
  status: StoredOrder['status'];
  orderVersion: number;
  placed: boolean;
  cancelRefused: boolean;
}

export interface FakeCalls {
  record: OrderEvent[];
  /** Every attempt to ship; `local`: the quick attempt, a local activity inside the workflow task. */
  ship: { input: ShipInput; attempt: number; atMs: number; local: boolean }[];
  shipped: string[];
  failed: string[];
  /** reopenFailedOrder calls (operator retries), with what the fake store answered. */
  reopened: { retry: number; reason: string; outcome: StoredOrder['outcome'] }[];
  recalled: string[];
  deadLettered: RefusedEvent[];
}

export interface FakeOptions {
  /** Decides each shipOrder attempt; default: succeed at once. */
  ship?: (input: ShipInput, attempt: number) => Promise<string>;
  /** The server's clock (skipped time), recorded with every shipOrder attempt. */
  now?: () => Promise<number>;
  /** Makes the store refuse an event for good, as PostgreSQL does for a value it cannot hold: the reason, or undefined. */
  refuse?: (event: OrderEvent) => string | undefined;
}

export function fakeActivities(opts: FakeOptions = {}): { activities: OrderActivities; calls: FakeCalls; rows: Map<string, FakeRow> } {
  const rows = new Map<string, FakeRow>();
  const claimed = new Set<string>();
  const calls: FakeCalls = { record: [], ship: [], shipped: [], failed: [], reopened: [], recalled: [], deadLettered: [] };
  const keyOf = (t: string, o: string) => `${t}/${o}`;
  const stored = (row: FakeRow, outcome: StoredOrder['outcome']): StoredOrder => ({ outcome, ...row });

  const activities = {
    async recordOrderEvent(event: OrderEvent): Promise<StoredOrder> {
      calls.record.push(event);
      const refusal = opts.refuse?.(event);
      if (refusal) throw ApplicationFailure.nonRetryable(refusal, 'UnstorableEventError');
      const key = keyOf(event.tenantId, event.orderId);
      const row = rows.get(key);
      if (claimed.has(event.eventId)) return stored(row!, 'duplicate');
      claimed.add(event.eventId);
      if (event.type === ORDER_PLACED) {
        if (!row) rows.set(key, { status: 'pending', orderVersion: event.orderVersion, placed: true, cancelRefused: false });
        else if (!row.placed) Object.assign(row, { placed: true, orderVersion: Math.max(row.orderVersion, event.orderVersion) });
        else if (row.orderVersion >= event.orderVersion) return stored(row, 'stale');
        else row.orderVersion = event.orderVersion;
      } else if (!row) {
        rows.set(key, { status: 'cancelled', orderVersion: event.orderVersion, placed: false, cancelRefused: false });
      } else if (row.orderVersion >= event.orderVersion) {
        return stored(row, 'stale');
      } else if (row.status === 'shipped') {
        Object.assign(row, { cancelRefused: true, orderVersion: event.orderVersion });
      } else {
        Object.assign(row, { status: 'cancelled', orderVersion: event.orderVersion });
      }
      return stored(rows.get(key)!, 'applied');
    },
    async shipOrder(input: ShipInput): Promise<string> {
      const info = Context.current().info;
      calls.ship.push({ input, attempt: info.attempt, atMs: opts.now ? await opts.now() : Date.now(), local: info.isLocal });
      return opts.ship ? opts.ship(input, info.attempt) : `shp-${input.orderId}`;
    },
    async markOrderShipped(input: { tenantId: string; orderId: string; shipmentId: string }): Promise<StoredOrder> {
      calls.shipped.push(input.shipmentId);
      const row = rows.get(keyOf(input.tenantId, input.orderId))!;
      if (row.status !== 'pending') return stored(row, 'stale');
      row.status = 'shipped';
      return stored(row, 'applied');
    },
    async placeAndShip(event: OrderEvent, input: ShipInput): Promise<{ stored: StoredOrder; shipped?: { shipmentId: string; stored: StoredOrder } }> {
      const stored: StoredOrder = await activities.recordOrderEvent(event);
      if (stored.status !== 'pending' || !stored.placed) return { stored };
      try {
        return { stored, shipped: await activities.shipAndRecordOrder(input) };
      } catch {
        return { stored };
      }
    },
    async shipAndRecordOrder(input: ShipInput): Promise<{ shipmentId: string; stored: StoredOrder }> {
      const shipmentId: string = await activities.shipOrder(input);
      return { shipmentId, stored: await activities.markOrderShipped({ tenantId: input.tenantId, orderId: input.orderId, shipmentId }) };
    },
    async markOrderFailed(input: { tenantId: string; orderId: string; reason: string }): Promise<StoredOrder> {
      calls.failed.push(input.reason);
      const row = rows.get(keyOf(input.tenantId, input.orderId))!;
      if (row.status === 'pending') row.status = 'failed';
      return stored(row, 'applied');
    },
    async reopenFailedOrder(input: { tenantId: string; orderId: string; retry: number; reason: string }): Promise<StoredOrder> {
      const row = rows.get(keyOf(input.tenantId, input.orderId))!;
      const claim = `retry/${input.tenantId}/${input.orderId}/${input.retry}`;
      let outcome: StoredOrder['outcome'] = 'duplicate';
      if (!claimed.has(claim)) {
        claimed.add(claim);
        outcome = row.status === 'failed' ? 'applied' : 'stale';
        if (outcome === 'applied') row.status = 'pending';
      }
      calls.reopened.push({ retry: input.retry, reason: input.reason, outcome });
      return stored(row, outcome);
    },
    async recallShipment(input: { key: string }): Promise<boolean> {
      calls.recalled.push(input.key);
      return false;
    },
    async deadLetterEvent(refused: RefusedEvent) {
      calls.deadLettered.push(refused);
      return 'whole' as const;
    },
    async reportOutcome(): Promise<void> {},
  } satisfies OrderActivities;
  return { activities, calls, rows };
}

/** A shipOrder that heartbeats until the workflow cancels it, the way a slow warehouse call behaves. */
export function shipUntilCancelled(started: () => void) {
  return async (): Promise<string> => {
    started();
    const ctx = Context.current();
    for (;;) {
      ctx.heartbeat();
      await ctx.sleep(500); // rejects with CancelledFailure once cancellation is delivered
    }
  };
}

/** A transient failure as the real shipOrder reports it (optionally with its jittered next delay). */
export const retryable = (message: string, nextRetryDelayMs?: number) =>
  ApplicationFailure.create({ message, type: 'DependencyUnavailableError', nextRetryDelay: nextRetryDelayMs });
