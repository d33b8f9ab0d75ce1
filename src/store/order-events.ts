/**
 * An order event recorded in the store: claim its id, compare versions, write the row and its status event — one
 * transaction. The recordOrderEvent activity (an event an order's run handles) and the bridge's late path (an event
 * whose order's run has closed) both record here, so an event gets the same outcome whether its run is open, has
 * closed, or was forgotten by Temporal after the namespace retention.
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
} from '../order.js';
import { runNeeded } from '../order-rules.js';
import { isSafeToken } from '../events/rules.js';
import { currentTraceHeaders, TRACEPARENT } from '../tracing/propagation.js';
import { inTenantTransaction, type Db, type Tx } from '../db.js';
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

/** Each event type's effect on its order's row, as the order's rules say (src/order-rules.ts): one per handled type. */
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

/** What the late path did with an event: recorded it as any run would, or left it for a run (and why). */
export type LateRecord = { kind: 'recorded'; stored: StoredOrder } | { kind: 'needs-run'; reason: string };

/**
 * Why `event` needs a run of its order when no run is open, given the order's row (locked); undefined when recording
 * it through the store is all there is to do. Pure: the order's rules decide (runNeeded in src/order-rules.ts).
 */
export function lateEventNeedsRun(
  row: Pick<FulfilmentRow, 'status' | 'order_version' | 'placed_at'> | undefined,
  event: Pick<OrderEvent, 'type' | 'orderVersion'>,
  seen = false,
): string | undefined {
  return runNeeded(positionOf(row), seen ? 'duplicate' : transitionFor(row, event.type, event));
}

/**
 * Why `event` needs a run, given the order's locked row and, only when the rules would start one, whether its id was
 * recorded before (then it is a duplicate, and only an order left pending still needs its run).
 */
async function needsRun(tx: Tx, row: FulfilmentRow | undefined, event: OrderEvent): Promise<string | undefined> {
  const reason = lateEventNeedsRun(row, event);
  if (reason === undefined || !(await isClaimed(tx, CONSUMER_NAME, event.tenantId, event.eventId))) return reason;
  return lateEventNeedsRun(row, event, true);
}

/**
 * An event whose order's run has closed: recorded through the store exactly as a run would record it (claim, versions,
 * row, status event), unless it needs a run (lateEventNeedsRun) — then nothing is written and the caller starts one.
 * The row is locked before the decision, so a run that opens meanwhile meets either the event recorded or nothing.
 */
export function recordLateEvent(target: StoreTarget, event: OrderEvent): Promise<LateRecord> {
  const { tenantId, orderId } = event;
  return inTenantTransaction(target.db, tenantId, async (tx): Promise<LateRecord> => {
    const reason = await needsRun(tx, await lockFulfilment(tx, tenantId, orderId), event);
    if (reason !== undefined) return { kind: 'needs-run', reason };
    return {
      kind: 'recorded',
      stored: await claimIn(tx, target, event, event.eventId, effectOf(event), causeOf(event)),
    };
  }).catch((err: unknown) => {
    throw classifySqlError(err, event.eventId);
  });
}
