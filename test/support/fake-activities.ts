/**
 * In-memory activities for workflow tests on the time-skipping server: they keep rows the way the store would — the
 * order's rules decide each event's transition and its effect (src/vocabulary/order-rules.ts transitionEffect), and the
 * answers carry what the store's carry, the placement included — and record every call, so tests can assert what the
 * workflow did. test/integration/order-rules-agree.int.test.ts holds this store to the real one, case by case.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { OrderActivities, PlacedAndShipped, RefusedEvent, ShipInput } from '../../activities/index.js';
import {
  FailureType,
  ORDER_PLACED,
  type OrderEvent,
  type OrderPlacedData,
  type RecallResolution,
  type ShipmentWaitDetails,
  type StoredOrderDetail,
} from '../../src/vocabulary/order.js';
import type { StoredOrder } from '../../src/vocabulary/order.js';
import {
  orderTransition,
  transitionEffect,
  versionRelation,
  type OrderEffect,
} from '../../src/vocabulary/order-rules.js';

export interface FakeRow {
  status: StoredOrder['status'];
  orderVersion: number;
  placed: boolean;
  /** The placement the row holds (what a shipment ships); a row set up without one ships DEFAULT_PLACEMENT. */
  placement?: OrderPlacedData;
  cancelRefused: boolean;
  retries?: number;
  recallFailures?: number;
  failureReason?: string;
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
  /** markRecallFailed calls: the refusal, which one it was, and what the fake store answered. */
  recallFailed: { reason: string; attempt: number; outcome: StoredOrder['outcome'] }[];
  resolved: {
    action: RecallResolution;
    reason: string;
    by?: string;
    failures: number;
    outcome: StoredOrder['outcome'];
  }[];
  loaded: string[];
  deadLettered: RefusedEvent[];
}

export interface FakeOptions {
  /** Decides each shipment attempt; default: succeed at once. */
  ship?: (input: ShipInput, attempt: number) => Promise<string>;
  /** The server's clock (skipped time), recorded with every shipment attempt. */
  now?: () => Promise<number>;
  /** Runs before each recordOrderEvent attempt (`local`: a local activity's); a throw fails that attempt. */
  record?: (event: OrderEvent, local: boolean) => Promise<void>;
  /** Makes the store refuse an event for good, as PostgreSQL does for a value it cannot hold: the reason, or undefined. */
  refuse?: (event: OrderEvent) => string | undefined;
  /** Decides each recall: resolve true/false, or throw (e.g. a non-retryable WarehouseRejectedError); default false. */
  recall?: (key: string, call: number) => Promise<boolean>;
}

/** The placement of a row a test set up as placed without naming one. */
export const DEFAULT_PLACEMENT: OrderPlacedData = { customerId: 'c-1', lines: [{ sku: 'sku-1', quantity: 1 }] };

/** The row `effect` (the rules' description of a transition) leaves, from `row` (undefined: none) and `event`. */
export function applyEffect(row: FakeRow | undefined, event: OrderEvent, effect: OrderEffect): FakeRow {
  const version = row?.orderVersion ?? 0;
  const placement = effect.takesPlacement && event.type === ORDER_PLACED ? event.data : row?.placement;
  return {
    ...row,
    status: effect.status === 'keep' ? row!.status : effect.status,
    orderVersion:
      effect.version === 'keep'
        ? version
        : effect.version === 'max'
          ? Math.max(version, event.orderVersion)
          : event.orderVersion,
    placed: (row?.placed ?? false) || effect.takesPlacement,
    ...(placement ? { placement } : {}),
    cancelRefused: (row?.cancelRefused ?? false) || effect.notesRefusal,
  };
}

export function fakeActivities(opts: FakeOptions = {}): {
  activities: OrderActivities;
  calls: FakeCalls;
  rows: Map<string, FakeRow>;
  /** Event ids (and other claim keys) the fake store has recorded: a test may claim one before its event arrives. */
  claimed: Set<string>;
} {
  const rows = new Map<string, FakeRow>();
  const claimed = new Set<string>();
  const calls: FakeCalls = {
    record: [],
    ship: [],
    shipped: [],
    failed: [],
    reopened: [],
    recalled: [],
    recallFailed: [],
    resolved: [],
    loaded: [],
    deadLettered: [],
  };
  const keyOf = (t: string, o: string) => `${t}/${o}`;
  const stored = (row: FakeRow, outcome: StoredOrder['outcome']): StoredOrder => ({
    outcome,
    status: row.status,
    orderVersion: row.orderVersion,
    placed: row.placed,
    cancelRefused: row.cancelRefused,
    ...(row.placed ? { placement: row.placement ?? DEFAULT_PLACEMENT } : {}),
  });
  /** Claims `key` once: the effect runs on the first claim; later ones answer duplicate. */
  const claimOnce = (key: string, row: FakeRow, effect: () => StoredOrder['outcome']): StoredOrder => {
    if (claimed.has(key)) return stored(row, 'duplicate');
    claimed.add(key);
    return stored(row, effect());
  };

  /** One warehouse call of the fake, as the real activities' `ship` step: recorded, then decided by `opts.ship`. */
  async function ship(input: ShipInput): Promise<string> {
    const info = Context.current().info;
    calls.ship.push({
      input,
      attempt: info.attempt,
      atMs: opts.now ? await opts.now() : Date.now(),
      local: info.isLocal,
    });
    return opts.ship ? opts.ship(input, info.attempt) : `shp-${input.orderId}`;
  }

  const activities = {
    async recordOrderEvent(event: OrderEvent): Promise<StoredOrder> {
      await opts.record?.(event, Context.current().info.isLocal);
      calls.record.push(event);
      const refusal = opts.refuse?.(event);
      if (refusal) throw ApplicationFailure.nonRetryable(refusal, 'UnstorableEventError');
      const key = keyOf(event.tenantId, event.orderId);
      const row = rows.get(key);
      if (claimed.has(event.eventId)) return stored(row!, 'duplicate');
      claimed.add(event.eventId);
      // The order's rules decide the transition and what it does, as in the store (src/adapters/store/fulfilments.ts).
      const position = !row ? 'none' : !row.placed && row.status === 'cancelled' ? 'tombstone' : row.status;
      const relation = versionRelation(event.orderVersion, row?.orderVersion ?? 0);
      const effect = transitionEffect(position, orderTransition(position, event.type, relation));
      if (!effect.writes) return stored(row!, 'stale');
      const next = applyEffect(row, event, effect);
      rows.set(key, row ? Object.assign(row, next) : next);
      return { ...stored(next, 'applied'), ...(effect.recalls ? { recall: true as const } : {}) };
    },
    async markOrderShipped(input: { tenantId: string; orderId: string; shipmentId: string }): Promise<StoredOrder> {
      calls.shipped.push(input.shipmentId);
      const row = rows.get(keyOf(input.tenantId, input.orderId))!;
      if (row.status !== 'pending') return stored(row, 'stale');
      row.status = 'shipped';
      return stored(row, 'applied');
    },
    async placeAndShip(event: OrderEvent, input: ShipInput): Promise<PlacedAndShipped> {
      const stored: StoredOrder = await activities.recordOrderEvent(event);
      if (stored.status !== 'pending' || !stored.placed) return { stored };
      try {
        return { stored, shipped: await activities.shipAndRecordOrder(input) };
      } catch (err) {
        // As the real one: a wait (the warehouse down for everyone, shipping paused) is answered, anything else dropped.
        if (err instanceof ApplicationFailure && err.type === FailureType.warehouseWaiting)
          return { stored, waiting: err.details![0] as ShipmentWaitDetails };
        return { stored };
      }
    },
    async shipAndRecordOrder(input: ShipInput): Promise<{ shipmentId: string; stored: StoredOrder }> {
      const shipmentId: string = await ship(input);
      return {
        shipmentId,
        stored: await activities.markOrderShipped({ tenantId: input.tenantId, orderId: input.orderId, shipmentId }),
      };
    },
    async markOrderFailed(input: { tenantId: string; orderId: string; reason: string }): Promise<StoredOrder> {
      calls.failed.push(input.reason);
      const row = rows.get(keyOf(input.tenantId, input.orderId))!;
      // As the store: only a pending order moves to failed; any other is answered stale, as it is.
      if (row.status !== 'pending') return stored(row, 'stale');
      Object.assign(row, { status: 'failed', failureReason: input.reason });
      return stored(row, 'applied');
    },
    async reopenFailedOrder(input: {
      tenantId: string;
      orderId: string;
      retry: number;
      reason: string;
    }): Promise<StoredOrder> {
      const row = rows.get(keyOf(input.tenantId, input.orderId))!;
      const claim = `retry/${input.tenantId}/${input.orderId}/${input.retry}`;
      let outcome: StoredOrder['outcome'] = 'duplicate';
      if (!claimed.has(claim)) {
        claimed.add(claim);
        outcome = row.status === 'failed' ? 'applied' : 'stale';
        if (outcome === 'applied') Object.assign(row, { status: 'pending', retries: (row.retries ?? 0) + 1 });
      }
      calls.reopened.push({ retry: input.retry, reason: input.reason, outcome });
      return stored(row, outcome);
    },
    async recallShipment(input: { key: string }): Promise<boolean> {
      calls.recalled.push(input.key);
      return opts.recall ? opts.recall(input.key, calls.recalled.length) : false;
    },
    async loadOrder(input: { tenantId: string; orderId: string }): Promise<StoredOrderDetail | null> {
      calls.loaded.push(keyOf(input.tenantId, input.orderId));
      const row = rows.get(keyOf(input.tenantId, input.orderId));
      if (!row) return null;
      return {
        status: row.status,
        orderVersion: row.orderVersion,
        ...(row.placed ? { placement: row.placement ?? DEFAULT_PLACEMENT } : {}),
        ...(row.failureReason ? { failureReason: row.failureReason } : {}),
        retries: row.retries ?? 0,
        recallFailures: row.recallFailures ?? 0,
        cancelRefused: row.cancelRefused,
      };
    },
    async markRecallFailed(input: {
      tenantId: string;
      orderId: string;
      reason: string;
      attempt: number;
    }): Promise<StoredOrder> {
      const row = rows.get(keyOf(input.tenantId, input.orderId))!;
      const answer = claimOnce(`recall-failed/${input.tenantId}/${input.orderId}/${input.attempt}`, row, () => {
        if (row.status !== 'cancelled' && row.status !== 'recall-failed') return 'stale';
        Object.assign(row, {
          status: 'recall-failed',
          failureReason: input.reason,
          recallFailures: (row.recallFailures ?? 0) + 1,
        });
        return 'applied';
      });
      calls.recallFailed.push({ reason: input.reason, attempt: input.attempt, outcome: answer.outcome });
      return stored(row, answer.outcome);
    },
    async resolveRecallFailed(input: {
      tenantId: string;
      orderId: string;
      failures: number;
      action: RecallResolution;
      reason: string;
      by?: string;
    }): Promise<StoredOrder> {
      const row = rows.get(keyOf(input.tenantId, input.orderId))!;
      const answer = claimOnce(`resolve/${input.tenantId}/${input.orderId}/${input.failures}`, row, () => {
        if (row.status !== 'recall-failed') return 'stale';
        Object.assign(row, { status: 'cancelled', failureReason: undefined });
        return 'applied';
      });
      calls.resolved.push({
        action: input.action,
        reason: input.reason,
        ...(input.by !== undefined ? { by: input.by } : {}),
        failures: input.failures,
        outcome: answer.outcome,
      });
      return stored(row, answer.outcome);
    },
    async deadLetterEvent(refused: RefusedEvent) {
      calls.deadLettered.push(refused);
      return 'whole' as const;
    },
  } satisfies OrderActivities;
  return { activities, calls, rows, claimed };
}

/** A shipment that heartbeats until the workflow cancels it, the way a slow warehouse call behaves. */
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

/** A transient failure as the real shipment step reports it (optionally with its jittered next delay). */
export const retryable = (message: string, nextRetryDelayMs?: number) =>
  ApplicationFailure.create({ message, type: 'DependencyUnavailableError', nextRetryDelay: nextRetryDelayMs });

/** The warehouse down for everyone (or shipping paused), as the real shipment step reports it: the order waits. */
export const warehouseDown = (
  reason = 'warehouse circuit open: not calling /shipments until a probe succeeds',
  since = new Date(),
  more: Omit<ShipmentWaitDetails, 'since' | 'reason'> = {},
) =>
  ApplicationFailure.create({
    message: `waiting for the warehouse: ${reason}`,
    type: FailureType.warehouseWaiting,
    nonRetryable: true,
    details: [{ since: since.toISOString(), reason, ...more } satisfies ShipmentWaitDetails],
  });
