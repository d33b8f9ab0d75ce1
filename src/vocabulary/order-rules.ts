/**
 * The order's rules: what an event does to an order, given where the order stands and how the event's version compares
 * with the order's. One pure table, consulted by the three places that decide — the workflow (decide() in
 * workflows/order-state.ts), the store (recordPlacement and recordCancellation in src/adapters/store/fulfilments.ts,
 * whose SQL keeps only its guards) and the late path (lateEventNeedsRun in src/adapters/store/order-events.ts) — so
 * they cannot drift apart; test/integration/order-rules-agree.int.test.ts runs every case through all three.
 *
 * Rules a reader must not break:
 * - a cancellation, once known, wins: an order cancelled before it shipped never ships, even when the cancellation
 *   arrived before the placement (a tombstone);
 * - an event whose version is not newer than the order's changes nothing (stale), except the placement a tombstone
 *   is waiting for: whatever its version, its data joins the tombstone, and the order stays cancelled;
 * - a shipment that may have reached the warehouse is recalled when the order is cancelled after it was held failed.
 *
 * Adding an event type: a new key in ORDER_RULES (the compiler asks for it) says what it does at every position.
 */
import { ORDER_CANCELLED, ORDER_PLACED, type OrderEventType, type StoredStatus } from './order.js';

/** Where an order stands before an event: no record of it, a tombstone (cancelled, never placed), or a status. */
export type OrderPosition = 'none' | 'tombstone' | StoredStatus;

/** Every position, for tables and tests. */
export const ORDER_POSITIONS: readonly OrderPosition[] = [
  'none',
  'tombstone',
  'pending',
  'shipped',
  'cancelled',
  'failed',
  'recall-failed',
];

/** How an event's orderVersion compares with the highest the order has taken. */
export type VersionRelation = 'older' | 'same' | 'newer';

/** What an event does to an order. */
export type OrderTransition =
  /** Its id was seen before (the store's ledger, the run's memory): nothing changes. */
  | 'duplicate'
  /** Not newer than the order: nothing changes. */
  | 'stale'
  /** The order's first placement: pending, to be shipped. */
  | 'place'
  /** The placement a tombstone waited for: its data joins the order, which stays cancelled. */
  | 'join-tombstone'
  /** A newer placement of a placed order: a pending order takes its lines; any other takes only its version. */
  | 'amend'
  /** A cancellation before any placement: the order is a tombstone, cancelled, its placement awaited. */
  | 'tombstone'
  /** A newer cancellation: the order is (or stays) cancelled. */
  | 'cancel'
  /** A newer cancellation of a failed order: cancelled, and the shipment its attempts may have made is recalled. */
  | 'cancel-and-recall'
  /** A newer cancellation of a shipped order: refused (it shipped), the refusal noted on the order. */
  | 'refuse'
  /** A newer cancellation of an order whose recall the warehouse refused: it stays held for a person, its version noted. */
  | 'note-version';

type Rule = (position: OrderPosition, relation: VersionRelation) => OrderTransition;

/** What each event type does at each position: the whole of the order's rules, one entry per handled type. */
const ORDER_RULES = {
  [ORDER_PLACED]: (position, relation) => {
    if (position === 'none') return 'place';
    if (position === 'tombstone') return 'join-tombstone';
    return relation === 'newer' ? 'amend' : 'stale';
  },
  [ORDER_CANCELLED]: (position, relation) => {
    if (position === 'none') return 'tombstone';
    if (relation !== 'newer') return 'stale';
    switch (position) {
      case 'shipped':
        return 'refuse';
      case 'failed':
        return 'cancel-and-recall';
      case 'recall-failed':
        return 'note-version';
      case 'tombstone':
      case 'pending':
      case 'cancelled':
        return 'cancel';
    }
  },
} satisfies Record<OrderEventType, Rule>;

/**
 * What a transition does to the order — the one description of its effect, which the store writes
 * (src/adapters/store/fulfilments.ts), the workflows' in-memory store mirrors and the agreement test observes on both
 * sides.
 */
export interface OrderEffect {
  /** False for a transition that changes nothing (a duplicate, a stale event): the row is not touched. */
  writes: boolean;
  /** The order's status afterwards: as it was, or the one named. */
  status: 'keep' | 'pending' | 'cancelled';
  /** The event's placement (customer, lines, address) becomes the order's: what a shipment of it ships. */
  takesPlacement: boolean;
  /** The order's version afterwards: as it was, the event's, or the higher of the two. */
  version: 'keep' | 'event' | 'max';
  /** The refusal of a cancellation (the order shipped) is noted on the order. */
  notesRefusal: boolean;
  /** The shipment the order's earlier attempts may have made is recalled (its key burnt). */
  recalls: boolean;
}

const UNCHANGED: OrderEffect = {
  writes: false,
  status: 'keep',
  takesPlacement: false,
  version: 'keep',
  notesRefusal: false,
  recalls: false,
};
const VERSION_ONLY: OrderEffect = { ...UNCHANGED, writes: true, version: 'event' };

/** What `transition` does to an order at `position`. */
export function transitionEffect(position: OrderPosition, transition: OrderTransition): OrderEffect {
  switch (transition) {
    case 'duplicate':
    case 'stale':
      return UNCHANGED;
    case 'place':
      return { ...VERSION_ONLY, status: 'pending', takesPlacement: true };
    case 'join-tombstone':
      return { ...VERSION_ONLY, takesPlacement: true, version: 'max' };
    case 'amend':
      // Only a pending order takes the newer lines: any other keeps what it shipped, cancelled or holds for a person.
      return { ...VERSION_ONLY, takesPlacement: position === 'pending' };
    case 'tombstone':
    case 'cancel':
      return { ...VERSION_ONLY, status: 'cancelled' };
    case 'cancel-and-recall':
      return { ...VERSION_ONLY, status: 'cancelled', recalls: true };
    case 'refuse':
      return { ...VERSION_ONLY, notesRefusal: true };
    case 'note-version':
      return VERSION_ONLY;
  }
}

/** True for an event type that cancels an order: the rules cancel a pending order on a newer one. */
export function cancelsOrder(type: OrderEventType): boolean {
  return orderTransition('pending', type, 'newer') === 'cancel';
}

/** The relation of an event's version to the order's. */
export function versionRelation(eventVersion: number, orderVersion: number): VersionRelation {
  return eventVersion > orderVersion ? 'newer' : eventVersion === orderVersion ? 'same' : 'older';
}

/** What an event of `type` does to an order at `position`; `seen` when its id was recorded before. */
export function orderTransition(
  position: OrderPosition,
  type: OrderEventType,
  relation: VersionRelation,
  seen = false,
): OrderTransition {
  if (seen) return 'duplicate';
  const rule: Rule = ORDER_RULES[type];
  return rule(position, relation);
}

/**
 * Why an event that meets an order with no open run needs one (the late path), or undefined when recording it in the
 * store is all there is to do: an order left pending must be shipped — a first placement, or a row a run left — and a
 * recall must be made.
 */
export function runNeeded(position: OrderPosition, transition: OrderTransition): string | undefined {
  if (position === 'pending') return 'the store holds the order pending with no run: it must be shipped';
  if (transition === 'place') return 'a placement of an order the store does not hold: it must be shipped';
  if (transition === 'cancel-and-recall') return 'a cancellation of a failed order: its shipment must be recalled';
  return undefined;
}
