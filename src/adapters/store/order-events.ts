/**
 * An order event recorded in the store: claim its id, compare versions, write the row and its status event — one
 * transaction. The recordOrderEvent activity (an event an order's run handles) and the bridge's late path (an event
 * whose order's run has closed) both record here, so an event gets the same outcome whether its run is open, has
 * closed, or was forgotten by Temporal after the namespace retention. The late path records a burst of one order's
 * events (those a delivery carries together) in one transaction, each event as it would be alone.
 *
 * Rule a reader must not break: the late path records only what needs no run. An event that would leave work for
 * the order — a placement with no row to ship, a row still pending, a cancellation of a failed order (its shipment
 * must be recalled) — is handed back untouched (nothing claimed), and the caller starts a run for it.
 */
import {
  CONSUMER_NAME,
  ORDER_CANCELLED,
  ORDER_PLACED,
  type FulfilmentRow,
  type OrderEvent,
  type OrderEventOf,
  type OrderEventType,
  type StoredOrder,
} from '../../vocabulary/order.js';
import { runNeeded } from '../../vocabulary/order-rules.js';
import { isSafeToken } from '../events/rules.js';
import { currentTraceHeaders, TRACEPARENT } from '../tracing/propagation.js';
import { inTenantTransaction, type Db, type Tx } from './db.js';
import {
  lockFulfilment,
  positionOf,
  readFulfilment,
  recordCancellation,
  recordPlacement,
  toStored,
  transitionFor,
} from './fulfilments.js';
import { claim, isClaimed } from './processed-events.js';
import { classifySqlError } from './sql-errors.js';
import type { ChangeContext } from '../status-events/outbox.js';

/** Where a recorded change goes: the pool, and the topic its status event is published to (STATUS_TOPIC). */
export interface StoreTarget {
  db: Db;
  statusTopic: string;
}

/** The input event (cause) behind a change, as its status event carries it. */
export type ChangeCause = Pick<ChangeContext, 'causationId' | 'correlationId'>;

/**
 * Claim-then-effect for `key`, in one transaction scoped to the tenant; when already claimed, answers with the stored
 * row as a duplicate. The effect gets the change's context: the claim key, its cause and the trace of this attempt. A
 * value PostgreSQL refuses for good is thrown as UnstorableEventError; anything else as it came (transient).
 */
export function claimThen(
  target: StoreTarget,
  order: { tenantId: string; orderId: string },
  key: string,
  effect: (tx: Tx, change: ChangeContext) => Promise<StoredOrder>,
  cause: ChangeCause = {},
): Promise<StoredOrder> {
  return inTenantTransaction(target.db, order.tenantId, (tx) => claimIn(tx, target, order, key, effect, cause)).catch(
    (err: unknown) => {
      throw classifySqlError(err, key);
    },
  );
}

async function claimIn(
  tx: Tx,
  target: StoreTarget,
  { tenantId, orderId }: { tenantId: string; orderId: string },
  key: string,
  effect: (tx: Tx, change: ChangeContext) => Promise<StoredOrder>,
  cause: ChangeCause,
): Promise<StoredOrder> {
  const traceparent = currentTraceHeaders()[TRACEPARENT];
  const change: ChangeContext = {
    topic: target.statusTopic,
    claimKey: key,
    ...cause,
    ...(traceparent ? { traceparent } : {}),
  };
  if (!(await claim(tx, CONSUMER_NAME, tenantId, key))) {
    const row = await readFulfilment(tx, tenantId, orderId);
    if (!row) throw new Error(`claim ${key} exists but order ${tenantId}/${orderId} has no row`);
    return toStored(row, 'duplicate');
  }
  return effect(tx, change);
}

/**
 * The event's cause for its status change. A correlation id the edge would refuse (an event that reached the workflow
 * another way) is not stored: it could not be written (NUL) or carried in a header; the change then correlates on the
 * order's, or on its cause.
 */
function causeOf(event: OrderEvent): ChangeCause {
  return {
    causationId: event.eventId,
    ...(isSafeToken(event.correlationId) ? { correlationId: event.correlationId } : {}),
  };
}

/** Each event type's effect on its order's row, as the order's rules say (src/vocabulary/order-rules.ts): one per handled type. */
const EFFECTS: {
  readonly [T in OrderEventType]: (tx: Tx, event: OrderEventOf<T>, change: ChangeContext) => Promise<StoredOrder>;
} = {
  [ORDER_PLACED]: (tx, event, change) => recordPlacement(tx, event, event.data, change),
  [ORDER_CANCELLED]: (tx, event, change) => recordCancellation(tx, event, event.data, change),
};

/** The event's effect on its order's row. */
function effectOf<T extends OrderEventType>(
  event: OrderEventOf<T>,
): (tx: Tx, change: ChangeContext) => Promise<StoredOrder> {
  const effect = EFFECTS[event.type] as (tx: Tx, event: OrderEventOf<T>, change: ChangeContext) => Promise<StoredOrder>;
  return (tx, change) => effect(tx, event, change);
}

/** Records a placement or cancellation: claim the event id, compare versions, write the row — one transaction. */
export function recordOrderEvent(target: StoreTarget, event: OrderEvent): Promise<StoredOrder> {
  return claimThen(target, event, event.eventId, effectOf(event), causeOf(event));
}

/**
 * What the late path did with one order's events (a burst, oldest first): the events it recorded, each with the
 * outcome the store decided — the burst's first events, in order — and, when it stopped at an event that needs a run
 * (lateEventNeedsRun), why: that event and every one after it were left untouched (nothing claimed), for a run.
 */
export interface LateBatch {
  recorded: { event: OrderEvent; stored: StoredOrder }[];
  needsRun?: string;
}

/** What lateEventNeedsRun looks at in the order's row. */
type RowState = Pick<FulfilmentRow, 'status' | 'order_version' | 'placed_at'>;

/** The row as a recorded event left it, from the store's answer (placed_at read only as placed or not). */
function rowAfter(row: RowState | undefined, stored: StoredOrder): RowState {
  const placedAt = stored.placed ? (row?.placed_at ?? new Date()) : null;
  return { status: stored.status, order_version: stored.orderVersion, placed_at: placedAt };
}

/**
 * Why `event` needs a run of its order when no run is open, given the order's row (locked); undefined when recording it
 * through the store is all there is to do. Pure: the order's rules decide (runNeeded in src/vocabulary/order-rules.ts).
 */
export function lateEventNeedsRun(
  row: RowState | undefined,
  event: Pick<OrderEvent, 'type' | 'orderVersion'>,
  seen = false,
): string | undefined {
  return runNeeded(positionOf(row), seen ? 'duplicate' : transitionFor(row, event.type, event));
}

/**
 * Why `event` needs a run, given the order's locked row and, only when the rules would start one, whether its id was
 * recorded before (then it is a duplicate, and only an order left pending still needs its run).
 */
async function needsRun(tx: Tx, row: RowState | undefined, event: OrderEvent): Promise<string | undefined> {
  const reason = lateEventNeedsRun(row, event);
  if (reason === undefined || !(await isClaimed(tx, CONSUMER_NAME, event.tenantId, event.eventId))) return reason;
  return lateEventNeedsRun(row, event, true);
}

/**
 * Events of one order whose run has closed (a burst, oldest first), recorded through the store in ONE transaction:
 * the row is locked once, then each event in turn is recorded exactly as a run would record it (claim, versions, row,
 * status event) unless it needs a run (lateEventNeedsRun, asked of the row as the events before it left it) — then it
 * and the rest are left untouched and the caller starts a run for them. The row is locked before the first decision,
 * so a run that opens meanwhile meets either the events recorded or nothing.
 *
 * All or nothing: an event PostgreSQL refuses for good is thrown as UnstorableEventError naming it, and nothing of the
 * burst is written (the bridge then delivers each event on its own, so only that one is dead-lettered and the others
 * are recorded once); a transient failure is thrown as it came, and the whole burst is retried — its claims were in
 * the same transaction, so nothing is recorded twice.
 */
export function recordLateEvents(target: StoreTarget, events: readonly OrderEvent[]): Promise<LateBatch> {
  const { tenantId, orderId } = events[0]!;
  return inTenantTransaction(target.db, tenantId, async (tx): Promise<LateBatch> => {
    const recorded: LateBatch['recorded'] = [];
    let row: RowState | undefined = await lockFulfilment(tx, tenantId, orderId);
    for (const event of events) {
      const reason = await needsRun(tx, row, event);
      if (reason !== undefined) return { recorded, needsRun: reason };
      const stored = await recordOneLate(tx, target, event);
      recorded.push({ event, stored });
      // The row as this event left it: every answer of the effect (or of a duplicate claim) is read from the row.
      row = rowAfter(row, stored);
    }
    return { recorded };
  }).catch((err: unknown) => {
    throw classifySqlError(
      err,
      events.length === 1 ? events[0]!.eventId : `${events.length} late events of ${tenantId}/${orderId}`,
    );
  });
}

/** One late event's claim and effect on the locked row; a value PostgreSQL refuses for good names this event. */
async function recordOneLate(tx: Tx, target: StoreTarget, event: OrderEvent): Promise<StoredOrder> {
  try {
    return await claimIn(tx, target, event, event.eventId, effectOf(event), causeOf(event));
  } catch (err) {
    throw classifySqlError(err, event.eventId);
  }
}
