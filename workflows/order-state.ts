/**
 * The order's state machine as pure functions: what an event means for an order, given what the order has
 * seen so far. No Temporal, no I/O — the workflow feeds it events and activity results, and the unit tests
 * feed it scenarios directly.
 *
 * Rules a reader must not break:
 * - a cancellation, once known, wins: an order cancelled before it shipped never ships, even when the
 *   cancellation arrived before the placement;
 * - an event whose orderVersion is not newer than the order's changes nothing (stale), except the placement
 *   a tombstone is waiting for;
 * - the store is the source of truth: after every recorded effect the state takes the row the store returned,
 *   its placement (what a shipment ships) included.
 */
import { type OrderView } from './api.js';
import {
  ORDER_PLACED,
  eventNoun,
  type OrderEvent,
  type OrderPlacedData,
  type OrderStatus,
  type StoredOrder,
  type StoredOrderDetail,
} from '../src/vocabulary/order.js';
import {
  orderTransition,
  versionRelation,
  type OrderPosition,
  type OrderTransition,
} from '../src/vocabulary/order-rules.js';

export interface OrderState {
  tenantId: string;
  orderId: string;
  status: OrderStatus;
  /** Highest orderVersion the order has taken; 0 before any event. */
  orderVersion: number;
  placement?: OrderPlacedData;
  /** Correlation id of the placement, carried into the warehouse call. */
  correlationId?: string;
  shipmentId?: string;
  failureReason?: string;
  /** Operator retries applied (retryShipment); absent on states from before retries existed, read as 0. */
  retries?: number;
  /** Recalls the warehouse refused for good; absent until the first, read as 0. */
  recallFailures?: number;
  cancelRefused: boolean;
  /** Event ids already decided on, oldest first, at most `rememberEventIds` of them. */
  seenEventIds: string[];
  counters: { applied: number; duplicates: number; stale: number };
  /** Human-readable history for the status query, newest last, bounded. */
  notes: string[];
  /** Workflow time (ms) at which a tombstone stops waiting for its placement. */
  graceEndsAt?: number;
  /** Workflow time (ms) at which a settled order's run closes. */
  lingerEndsAt?: number;
  /**
   * A pending order whose shipment waits for the warehouse (down for everyone, or shipping paused): since when (the
   * store's time, ms), why, and the workflow time at which waiting gives up (the order's shipment deadline).
   */
  waiting?: ShipmentWait;
  /**
   * Workflow time (ms) past which a shipment waiting for a warehouse that is down gives up: set by the order's first
   * such wait, kept across the waits that follow (woken, it may wait again), dropped by a wait for an operator's pause
   * (a pause's time does not count) and when the order leaves pending.
   */
  shipmentDeadline?: number;
  /**
   * When (the store's time, ms) the order's current spell of waits began: kept while it is woken and waits again,
   * dropped when it leaves pending. A woken order's attempt names it, so a wait row lost meanwhile is restored.
   */
  waitingSince?: number;
}

/** A shipment that waits for the warehouse rather than spending its attempts. */
export interface ShipmentWait {
  /** When the order began to wait (the store's clock), ms since the epoch. */
  since: number;
  reason: string;
  /** What it waits for: the warehouse down for everyone, or an operator's pause (absent in earlier runs: outage). */
  for?: 'outage' | 'pause';
  /**
   * Workflow time (ms) at which the order tries the warehouse once more and, finding it still down, is held as
   * failed (the state's shipmentDeadline); none while a pause holds it.
   */
  deadline?: number;
  /** Workflow time (ms) at which the order tries again by itself if nothing woke it (absent in earlier runs). */
  recheckAt?: number;
  /** Workflow time (ms) of the attempt that met this wait (absent in earlier runs). */
  metAt?: number;
}

/** A wait as the shipment attempt reported it, with the times the run gave it. */
export interface WaitReport {
  since: number;
  reason: string;
  for: 'outage' | 'pause';
  /** Workflow time (ms) of the deadline, should this wait be the order's first for an outage. */
  deadline: number;
  recheckAt: number;
  /** Workflow time (ms) of the attempt that met the wait. */
  metAt: number;
}

/** What decide() makes of one event, given the order's state. */
export type Decision =
  /** The event id was already decided on by this workflow. */
  | { kind: 'duplicate' }
  /** Older than (or as old as) what the order already has; changes nothing. */
  | { kind: 'stale'; reason: string }
  /** The event names another tenant or order than this workflow's; refused. */
  | { kind: 'foreign' }
  /** Record the event through the store, which applies `transition` (the order's rules: src/vocabulary/order-rules.ts). */
  | { kind: 'record'; transition: Exclude<OrderTransition, 'duplicate' | 'stale'> };

const MAX_NOTES = 50;
export const DEFAULT_REMEMBERED_EVENT_IDS = 1000;

export function initialOrderState(tenantId: string, orderId: string): OrderState {
  return {
    tenantId,
    orderId,
    status: 'new',
    orderVersion: 0,
    cancelRefused: false,
    seenEventIds: [],
    counters: { applied: 0, duplicates: 0, stale: 0 },
    notes: [],
  };
}

/**
 * Where the order stands in the rules' terms (src/vocabulary/order-rules.ts), as the store would say: no record yet, a
 * tombstone (cancelled before any placement: awaiting it, or its grace window over), or its status.
 */
export function positionOf(state: OrderState): OrderPosition {
  switch (state.status) {
    case 'new':
      return 'none';
    case 'awaiting-placement':
      return 'tombstone';
    case 'cancelled':
      return state.placement ? 'cancelled' : 'tombstone';
    default:
      return state.status;
  }
}

/** Decides what an incoming event means for the order, as the order's rules say. Pure; does not change `state`. */
export function decide(state: OrderState, event: OrderEvent): Decision {
  if (event.tenantId !== state.tenantId || event.orderId !== state.orderId) return { kind: 'foreign' };
  if (state.seenEventIds.includes(event.eventId)) return { kind: 'duplicate' };
  const relation = versionRelation(event.orderVersion, state.orderVersion);
  const transition = orderTransition(positionOf(state), event.type, relation);
  if (transition === 'stale' || transition === 'duplicate') {
    const what = eventNoun(event.type);
    return { kind: 'stale', reason: `${what} v${event.orderVersion} is not newer than v${state.orderVersion}` };
  }
  return { kind: 'record', transition };
}

/** Remembers that the event was decided on, and counts it. Call once per non-duplicate decision. */
export function noteDecision(
  state: OrderState,
  event: OrderEvent,
  decision: Decision,
  limit = DEFAULT_REMEMBERED_EVENT_IDS,
): OrderState {
  if (decision.kind === 'duplicate') {
    return { ...state, counters: { ...state.counters, duplicates: state.counters.duplicates + 1 } };
  }
  if (decision.kind === 'foreign') {
    return withNote(state, `refused ${event.eventId}: it names ${event.tenantId}/${event.orderId}`);
  }
  const seenEventIds = [...state.seenEventIds, event.eventId].slice(-limit);
  const next = { ...state, seenEventIds };
  if (decision.kind === 'stale') {
    return withNote(
      { ...next, counters: { ...next.counters, stale: next.counters.stale + 1 } },
      `stale ${event.eventId}: ${decision.reason}`,
    );
  }
  return next;
}

/** Takes the store's answer as the truth about the order after an effect was recorded. */
export function applyStored(state: OrderState, event: OrderEvent, stored: StoredOrder): OrderState {
  const status: OrderStatus = stored.status === 'cancelled' && !stored.placed ? 'awaiting-placement' : stored.status;
  const counters = { ...state.counters };
  if (stored.outcome === 'applied') counters.applied += 1;
  else if (stored.outcome === 'duplicate') counters.duplicates += 1;
  else counters.stale += 1;
  // The store's placement is what ships (an amend of an order that is not pending keeps its lines); an answer recorded
  // by a build that did not carry it leaves the run as it was then.
  const placement = stored.placement ?? (event.type === ORDER_PLACED ? event.data : state.placement);
  const correlationId =
    event.type === ORDER_PLACED ? (event.correlationId ?? state.correlationId) : state.correlationId;
  const next: OrderState = {
    ...(status === 'pending' ? state : leavePending(state)),
    status,
    orderVersion: Math.max(state.orderVersion, stored.orderVersion),
    placement,
    correlationId,
    cancelRefused: stored.cancelRefused,
    counters,
  };
  return withNote(next, `${stored.outcome} ${event.type} ${event.eventId} v${event.orderVersion} → ${status}`);
}

/** The tombstone waited its grace window and no placement came: the order ends cancelled, never placed. */
export function expireTombstone(state: OrderState): OrderState {
  return withNote({ ...state, status: 'cancelled' }, 'grace window over: cancellation without placement');
}

export function markShipped(state: OrderState, shipmentId: string): OrderState {
  return withNote({ ...leavePending(state), status: 'shipped', shipmentId }, `shipped as ${shipmentId}`);
}

export function markFailed(state: OrderState, reason: string): OrderState {
  return withNote({ ...leavePending(state), status: 'failed', failureReason: reason }, `failed: ${reason}`);
}

/**
 * The shipment found the warehouse down for everyone (or shipping paused): the order waits, its attempts unspent. The
 * order's deadline is set by its first wait for an outage and kept across the waits that follow; a wait for a pause
 * has none and drops it (the pause's time does not count; the next outage starts a new one). A wait that goes on
 * keeps the time it began; the reason and what it waits for follow the latest attempt.
 */
export function markWaiting(state: OrderState, wait: WaitReport): OrderState {
  const paused = wait.for === 'pause';
  const shipmentDeadline = paused ? undefined : (state.shipmentDeadline ?? wait.deadline);
  const waitingSince = state.waitingSince ?? wait.since;
  const waiting: ShipmentWait = {
    since: state.waiting?.since ?? waitingSince,
    reason: wait.reason,
    for: wait.for,
    ...(shipmentDeadline !== undefined ? { deadline: shipmentDeadline } : {}),
    recheckAt: wait.recheckAt,
    metAt: wait.metAt,
  };
  const { shipmentDeadline: _dropped, ...rest } = state;
  const next = { ...rest, waiting, waitingSince, ...(shipmentDeadline !== undefined ? { shipmentDeadline } : {}) };
  return state.waiting ? next : withNote(next, `waiting for the warehouse: ${wait.reason}`);
}

/**
 * True when the order's wait for an outage was met at or after its shipment deadline: the try the deadline gave it
 * (or any later one) found the warehouse still down, and the order is to be held as failed.
 */
export function metPastDeadline(state: OrderState): boolean {
  const w = state.waiting;
  return w?.for !== 'pause' && w?.deadline !== undefined && w.metAt !== undefined && w.metAt >= w.deadline;
}

/** The order stops waiting to try the warehouse again; its shipment deadline stands. */
export function endWait(state: OrderState, note?: string): OrderState {
  if (!state.waiting) return state;
  const { waiting: _ended, ...rest } = state;
  return note ? withNote(rest, note) : rest;
}

/** The order leaves pending: no wait, no shipment deadline. */
export function leavePending(state: OrderState): OrderState {
  const { waiting: _waiting, shipmentDeadline: _deadline, waitingSince: _since, ...rest } = state;
  return rest;
}

/** Waiting since `since` would pass the order's overall deadline for shipping (`deadlineSeconds` after its first wait). */
export function waitDeadline(since: number, deadlineSeconds: number): number {
  return since + deadlineSeconds * 1000;
}

/**
 * An operator's retry of a failed order, after the store moved it back to pending: the order ships again (under
 * the same shipment key), and lingers anew once it settles.
 */
export function reopenForRetry(state: OrderState, retry: number, reason: string, by?: string): OrderState {
  const { failureReason: cleared, lingerEndsAt: _lingerEndsAt, ...rest } = state;
  return withNote(
    { ...rest, status: 'pending', retries: retry },
    `retry ${retry}: failed → pending (${reason})${by ? ` by ${by}` : ''}; cleared: ${cleared ?? 'no reason recorded'}`,
  );
}

/**
 * The warehouse refused for good to recall the shipment of a cancelled order (the n-th time): the order stays
 * cancelled in substance but needs a person (`fulfilment order resolve`).
 */
export function markRecallFailed(state: OrderState, reason: string, recallFailures: number): OrderState {
  return withNote(
    { ...state, status: 'recall-failed', failureReason: reason, recallFailures },
    `recall refused (${recallFailures}): ${reason}`,
  );
}

/** An operator's resolution of a recall-failed order recorded it cancelled: the shipment is recalled. */
export function resolveRecalled(state: OrderState, note: string): OrderState {
  const { failureReason: _cleared, lingerEndsAt: _lingerEndsAt, ...rest } = state;
  return withNote({ ...rest, status: 'cancelled' }, note);
}

/**
 * A run that starts from the store (a repair): the order as the store holds it. Event ids the store recorded are
 * not known here — the store's ledger still refuses them (claim first) and their versions are not newer.
 */
export function fromStored(state: OrderState, detail: StoredOrderDetail): OrderState {
  // A tombstone (cancelled, never placed) is taken as cancelled: its grace window ended with the run that left it.
  const next: OrderState = {
    ...state,
    status: detail.status,
    orderVersion: Math.max(state.orderVersion, detail.orderVersion),
    placement: detail.placement ?? state.placement,
    shipmentId: detail.shipmentId,
    failureReason: detail.failureReason,
    cancelRefused: detail.cancelRefused,
    ...(detail.retries > 0 ? { retries: detail.retries } : {}),
    ...(detail.recallFailures > 0 ? { recallFailures: detail.recallFailures } : {}),
  };
  return withNote(
    next,
    `loaded from the store: ${detail.status} v${detail.orderVersion}${detail.failureReason ? ` (${detail.failureReason})` : ''}`,
  );
}

/** Recall refusals of the order so far. */
export function recallFailuresOf(state: OrderState): number {
  return state.recallFailures ?? 0;
}

/** Retries of the order applied so far. */
export function retriesOf(state: OrderState): number {
  return state.retries ?? 0;
}

export function withNote(state: OrderState, note: string): OrderState {
  return { ...state, notes: [...state.notes, note].slice(-MAX_NOTES) };
}

/** True once nothing more will happen to the order but late events (and an operator's action). */
export function isSettled(state: OrderState): boolean {
  return state.status === 'shipped' || state.status === 'cancelled' || needsPerson(state);
}

/** True while the order is held for a person: failed (retry it) or recall-failed (resolve it). */
export function needsPerson(state: OrderState): boolean {
  return state.status === 'failed' || state.status === 'recall-failed';
}

/** An event waiting in the inbox that would stop a shipment in flight: a newer cancellation of a pending order. */
export function cancelsShipment(state: OrderState, event: OrderEvent): boolean {
  const d = decide(state, event);
  return state.status === 'pending' && d.kind === 'record' && d.transition === 'cancel';
}

export function toView(state: OrderState): OrderView {
  return {
    tenantId: state.tenantId,
    orderId: state.orderId,
    status: state.status,
    orderVersion: state.orderVersion,
    shipmentId: state.shipmentId,
    failureReason: state.failureReason,
    ...(state.retries ? { retries: state.retries } : {}),
    ...(state.recallFailures ? { recallFailures: state.recallFailures } : {}),
    ...(state.waiting
      ? { waitingSince: new Date(state.waiting.since).toISOString(), waitingReason: state.waiting.reason }
      : {}),
    cancelRefused: state.cancelRefused,
    appliedEvents: state.counters.applied,
    duplicatesSuppressed: state.counters.duplicates,
    staleIgnored: state.counters.stale,
    notes: state.notes,
  };
}
