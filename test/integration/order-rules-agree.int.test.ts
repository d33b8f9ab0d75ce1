/**
 * The order's rules agree wherever they are applied — compared by what each side DID, not by the label it chose. Every
 * case — where the order stands × the event's type × how its version compares (older, the same, newer, or its id seen
 * before) — and bursts of several events of one order go through:
 * - the rules: the table's transition and its effect (src/vocabulary/order-rules.ts transitionEffect), applied to the
 *   order as it stood — the expected outcome;
 * - the store on the real PostgreSQL (recordOrderEvent on a row put at that position): the row before and after, lines
 *   included, and a stale or duplicate event must leave the row untouched (every column);
 * - the workflow: decide(), then — as its run does — the store's answer taken into its state (applyStored): its
 *   status, version and the lines it would ship;
 * - the late path (recordLateEvents on another such row, no run open): the row after, or left untouched for a run in
 *   exactly the cases the rules say need one;
 * - the workflows' in-memory store (test/support/fake-activities.ts): the row it keeps and the answer it gives.
 * The table of every case is printed.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/base/config.js';
import { createDb, inTenantTransaction, type Db, type Tx } from '../../src/adapters/store/db.js';
import {
  CONSUMER_NAME,
  ORDER_CANCELLED,
  ORDER_EVENT_TYPES,
  ORDER_PLACED,
  type FulfilmentRow,
  type OrderEvent,
  type OrderEventType,
  type OrderLine,
  type OrderStatus,
  type StoredOrder,
} from '../../src/vocabulary/order.js';
import {
  ORDER_POSITIONS,
  orderTransition,
  runNeeded,
  transitionEffect,
  versionRelation,
  type OrderPosition,
} from '../../src/vocabulary/order-rules.js';
import { provisionPostgres } from '../../src/roles/provision/schema-and-grants.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import {
  positionOf as storePositionOf,
  readFulfilment,
  recordCancellation,
  recordFailed,
  recordPlacement,
  recordRecallFailed,
  recordShipped,
} from '../../src/adapters/store/fulfilments.js';
import { recordLateEvents, recordOrderEvent, type StoreTarget } from '../../src/adapters/store/order-events.js';
import { claim } from '../../src/adapters/store/processed-events.js';
import {
  applyStored,
  decide,
  initialOrderState,
  noteDecision,
  positionOf,
  type OrderState,
} from '../../workflows/order-state.js';
import { fakeActivities, type FakeRow } from '../support/fake-activities.js';

/** The version every order is put at before its events. */
const AT = 5;

const tenant = `rules-${randomUUID().slice(0, 8)}`;
let db: Db;
let target: StoreTarget;
beforeAll(async () => {
  const config = loadConfig();
  await provisionPostgres(config);
  db = createDb(runtimeConnection(config), 4);
  target = { db, statusTopic: 'status.rules-test' };
});
afterAll(async () => db?.end());

/** The lines every order is placed with before its events. */
const lines: OrderLine[] = [{ sku: 'SKU-SETUP', quantity: 1 }];
/** The lines a placement of version `v` carries: each placement's own, so the lines held tell which one they are. */
const linesOf = (v: number): OrderLine[] => [{ sku: `SKU-V${v}`, quantity: v }];
const change = (claimKey: string) => ({ topic: 'status.rules-test', claimKey });

/** An event of `type` at version `v` for `orderId` (a placement carries linesOf(v)). */
function eventOf(type: OrderEventType, v: number, orderId: string, eventId = `e-${randomUUID()}`): OrderEvent {
  const base = { eventId, schemaVersion: 1, occurredAt: new Date().toISOString(), tenantId: tenant, orderId };
  return type === ORDER_PLACED
    ? { ...base, orderVersion: v, type: ORDER_PLACED, data: { customerId: `c-v${v}`, lines: linesOf(v) } }
    : { ...base, orderVersion: v, type: ORDER_CANCELLED, data: {} };
}

/** Puts order `orderId` at `position` (version AT) through the store's own functions. */
async function putAt(position: OrderPosition, orderId: string): Promise<void> {
  if (position === 'none') return;
  const ref = (v: number) => ({ eventId: `setup-${randomUUID()}`, tenantId: tenant, orderId, orderVersion: v });
  const place = (v: number) => (tx: Tx) =>
    recordPlacement(tx, ref(v), { customerId: 'c', lines }, change(`setup-${randomUUID()}`));
  const cancel = (tx: Tx) => recordCancellation(tx, ref(AT), {}, change(`setup-${randomUUID()}`));
  const steps: ((tx: Tx) => Promise<unknown>)[] = {
    tombstone: [cancel],
    pending: [place(AT)],
    shipped: [place(AT), (tx: Tx) => recordShipped(tx, tenant, orderId, 'shp-1', change(`setup-${randomUUID()}`))],
    cancelled: [place(1), cancel],
    failed: [place(AT), (tx: Tx) => recordFailed(tx, tenant, orderId, 'refused', change(`setup-${randomUUID()}`))],
    'recall-failed': [
      place(1),
      cancel,
      (tx: Tx) => recordRecallFailed(tx, tenant, orderId, 'refused', change(`setup-${randomUUID()}`)),
    ],
  }[position];
  for (const step of steps) await inTenantTransaction(db, tenant, step);
}

const read = (orderId: string) => inTenantTransaction(db, tenant, (tx) => readFulfilment(tx, tenant, orderId));
const claimId = (eventId: string) => inTenantTransaction(db, tenant, (tx) => claim(tx, CONSUMER_NAME, tenant, eventId));

/** An order as every side can be read: where it stands, its version, the lines it holds (and would ship), a refusal. */
interface Outcome {
  position: OrderPosition;
  version: number;
  lines?: OrderLine[];
  refused: boolean;
}

/** One cell of the table: the outcome in a few words (lines named by the placement they came from). */
function show(o: Outcome | string): string {
  if (typeof o === 'string') return o;
  const sku = o.lines?.[0]?.sku;
  const held = o.lines === undefined ? 'no lines' : sku === 'SKU-SETUP' ? 'setup lines' : `${sku?.slice(4)} lines`;
  return `${o.position} v${o.version}, ${held}${o.refused ? ', refusal noted' : ''}`;
}

/** The order before its events, as putAt left it. */
function outcomeAt(position: OrderPosition): Outcome {
  const placed = position !== 'none' && position !== 'tombstone';
  return { position, version: position === 'none' ? 0 : AT, ...(placed ? { lines } : {}), refused: false };
}

/** What the rules say `event` does to `before`: the transition, the outcome, and whether a run must take it. */
function byTheRules(before: Outcome, event: OrderEvent, seen: boolean) {
  const relation = versionRelation(event.orderVersion, before.version);
  const transition = orderTransition(before.position, event.type, relation, seen);
  const effect = transitionEffect(before.position, transition);
  const wasPlaced = before.position !== 'none' && before.position !== 'tombstone';
  const placed = wasPlaced || effect.takesPlacement;
  const status = effect.status === 'keep' ? (wasPlaced ? before.position : 'cancelled') : effect.status;
  const takes = effect.takesPlacement && event.type === ORDER_PLACED;
  const after: Outcome = {
    position: !effect.writes ? before.position : !placed && status === 'cancelled' ? 'tombstone' : status,
    version:
      effect.version === 'keep'
        ? before.version
        : effect.version === 'max'
          ? Math.max(before.version, event.orderVersion)
          : event.orderVersion,
    ...(takes ? { lines: event.data.lines } : before.lines ? { lines: before.lines } : {}),
    refused: before.refused || effect.notesRefusal,
  };
  return { transition, effect, after, needsRun: runNeeded(before.position, transition) !== undefined };
}

/** The rules over a burst: each event in turn (an id met before is seen); where the late path must stop for a run. */
function burstByTheRules(position: OrderPosition, events: readonly OrderEvent[], seenBefore: ReadonlySet<string>) {
  const seen = new Set(seenBefore);
  let outcome = outcomeAt(position);
  let lateStop: Outcome | undefined;
  const transitions: string[] = [];
  for (const event of events) {
    const step = byTheRules(outcome, event, seen.has(event.eventId));
    if (step.needsRun) lateStop ??= outcome;
    seen.add(event.eventId);
    transitions.push(step.transition);
    outcome = step.after;
  }
  return { outcome, transitions, late: lateStop === undefined ? outcome : ('needs a run' as const), lateStop };
}

function fromRow(row: FulfilmentRow | undefined): Outcome {
  if (!row) return outcomeAt('none');
  return {
    position: storePositionOf(row),
    version: row.order_version,
    ...(row.placed_at !== null ? { lines: row.lines as OrderLine[] } : {}),
    refused: row.cancel_refused_at !== null,
  };
}

function fromState(state: OrderState): Outcome {
  return {
    position: positionOf(state),
    version: state.orderVersion,
    ...(state.placement ? { lines: state.placement.lines } : {}),
    refused: state.cancelRefused,
  };
}

function fromFake(row: FakeRow | undefined): Outcome {
  if (!row) return outcomeAt('none');
  const position = !row.placed && row.status === 'cancelled' ? 'tombstone' : row.status;
  return {
    position,
    version: row.orderVersion,
    ...(row.placement ? { lines: row.placement.lines } : {}),
    refused: row.cancelRefused,
  };
}

/** A fresh order put at `position` for one side (`prefix` names it), with the ids `seen` claimed before. */
async function prepared(position: OrderPosition, prefix: string, seen: readonly string[]) {
  const orderId = `${prefix}-${randomUUID().slice(0, 8)}`;
  await putAt(position, orderId);
  for (const id of seen) await claimId(id);
  return { orderId, before: await read(orderId) };
}

/** The events of a burst for `orderId`: [type, version, id] each; a repeated id is a redelivery. */
type BurstSpec = readonly (readonly [OrderEventType, number, string?])[];
const eventsFor = (spec: BurstSpec, orderId: string): OrderEvent[] => {
  const ids = new Map<string, string>();
  return spec.map(([type, v, tag]) => {
    const id = tag ? (ids.get(tag) ?? ids.set(tag, `${tag}-${randomUUID()}`).get(tag)!) : undefined;
    return eventOf(type, v, orderId, id);
  });
};

/** The store, event by event (each in its own transaction): the row after, and whether a write touched it. */
async function storeDoes(position: OrderPosition, spec: BurstSpec, seenTags: readonly string[]) {
  const { orderId, before } = await prepared(position, 'store', []);
  const events = eventsFor(spec, orderId);
  for (const id of seenIds(events, spec, seenTags)) await claimId(id);
  const answers: StoredOrder[] = [];
  for (const event of events) answers.push(await recordOrderEvent(target, event));
  const after = await read(orderId);
  // Every answer names the row as it was left then; the last must be the row now.
  const last = answers.at(-1)!;
  const answerAgrees =
    after === undefined ||
    (last.status === after.status &&
      last.orderVersion === after.order_version &&
      JSON.stringify(last.placement?.lines) === JSON.stringify(after.placed_at === null ? undefined : after.lines));
  return { outcome: fromRow(after), touched: JSON.stringify(before) !== JSON.stringify(after), answerAgrees };
}

/** The workflow, event by event, as its run handles each: decide(), then the store's answer taken into its state. */
async function workflowDoes(position: OrderPosition, spec: BurstSpec, seenTags: readonly string[], expired = false) {
  const { orderId } = await prepared(position, 'wf', []);
  const events = eventsFor(spec, orderId);
  const seen = seenIds(events, spec, seenTags);
  for (const id of seen) await claimId(id);
  let state = { ...stateAt(position, orderId, expired), seenEventIds: [...seen] };
  for (const event of events) {
    const decision = decide(state, event);
    if (decision.kind !== 'record') {
      state = noteDecision(state, event, decision);
      continue;
    }
    state = applyStored(noteDecision(state, event, decision), event, await recordOrderEvent(target, event));
  }
  return fromState(state);
}

/** The late path: the whole burst in one transaction, no run open. */
async function latePathDoes(position: OrderPosition, spec: BurstSpec, seenTags: readonly string[]) {
  const { orderId } = await prepared(position, 'late', []);
  const events = eventsFor(spec, orderId);
  for (const id of seenIds(events, spec, seenTags)) await claimId(id);
  const record = await recordLateEvents(target, events);
  return { outcome: fromRow(await read(orderId)), needsRun: record.needsRun !== undefined };
}

/** The workflows' in-memory store, event by event. */
async function fakeDoes(position: OrderPosition, spec: BurstSpec, seenTags: readonly string[]) {
  const fake = fakeActivities();
  const orderId = 'o-fake';
  const at = outcomeAt(position);
  if (position !== 'none')
    fake.rows.set(`${tenant}/${orderId}`, {
      status: position === 'tombstone' ? 'cancelled' : position,
      orderVersion: at.version,
      placed: at.lines !== undefined,
      ...(at.lines ? { placement: { customerId: 'c', lines } } : {}),
      cancelRefused: false,
    });
  const events = eventsFor(spec, orderId);
  for (const id of seenIds(events, spec, seenTags)) fake.claimed.add(id);
  for (const event of events) await fake.activities.recordOrderEvent(event);
  return fromFake(fake.rows.get(`${tenant}/${orderId}`));
}

/** The ids of `events` whose spec tag is among `seenTags`: recorded before the burst. */
function seenIds(events: readonly OrderEvent[], spec: BurstSpec, seenTags: readonly string[]): string[] {
  return [...new Set(events.filter((_, i) => seenTags.includes(spec[i]![2] ?? '')).map((e) => e.eventId))];
}

/** The workflow's state for an order at `position` (version AT; placed with the setup lines unless a tombstone). */
function stateAt(position: OrderPosition, orderId: string, expired: boolean): OrderState {
  const s = initialOrderState(tenant, orderId);
  if (position === 'none') return s;
  const status: OrderStatus = position === 'tombstone' ? (expired ? 'cancelled' : 'awaiting-placement') : position;
  const placement = position === 'tombstone' ? {} : { placement: { customerId: 'c', lines } };
  return { ...s, status, orderVersion: AT, ...placement };
}

/** Every side's outcome of `spec` at `position`, and what the rules expected, as table cells. */
async function agreement(position: OrderPosition, spec: BurstSpec, seenTags: readonly string[] = []) {
  const probe = eventsFor(spec, 'probe');
  const rules = burstByTheRules(position, probe, new Set(seenIds(probe, spec, seenTags)));
  // The store holds no claim without its order's row: an id seen before the order is recorded cannot be.
  if (position === 'none' && seenTags.length > 0) return undefined;
  const writes = rules.transitions.some((t) => t !== 'stale' && t !== 'duplicate');
  const store = await storeDoes(position, spec, seenTags);
  const late = await latePathDoes(position, spec, seenTags);
  const expected = {
    store: `${show(rules.outcome)}; ${writes ? 'written' : 'untouched'}`,
    answer: true,
    workflow: show(rules.outcome),
    expired: show(rules.outcome),
    late: rules.late === 'needs a run' ? `needs a run after ${show(rules.lateStop!)}` : show(rules.late),
    fake: show(rules.outcome),
  };
  const observed = {
    store: `${show(store.outcome)}; ${store.touched ? 'written' : 'untouched'}`,
    answer: store.answerAgrees,
    workflow: show(await workflowDoes(position, spec, seenTags)),
    // A tombstone whose grace window ended in its run is still one to the rules (and to the store).
    expired: position === 'tombstone' ? show(await workflowDoes(position, spec, seenTags, true)) : expected.expired,
    late: late.needsRun ? `needs a run after ${show(late.outcome)}` : show(late.outcome),
    fake: show(await fakeDoes(position, spec, seenTags)),
  };
  return { rules: rules.transitions.join(' → '), expected, observed };
}

/** Every single event: position × type × relation (older, same, newer; newer with its id seen before). */
const RELATIONS = { older: AT - 1, same: AT, newer: AT + 1, seen: AT + 1 } as const;
const SINGLES = ORDER_POSITIONS.flatMap((position) =>
  ORDER_EVENT_TYPES.flatMap((type) =>
    (Object.keys(RELATIONS) as (keyof typeof RELATIONS)[]).map((relation) => ({
      name: `${position} × ${type.replace(/^orders\./, '')} × ${relation}`,
      position,
      spec: [[type, RELATIONS[relation], relation === 'seen' ? 'seen' : undefined]] as BurstSpec,
      seen: relation === 'seen' ? ['seen'] : [],
    })),
  ),
);

/** Bursts of one order's events, as a delivery carries them together. */
const BURSTS: Record<string, BurstSpec> = {
  'placed, then cancelled': [
    [ORDER_PLACED, AT + 1],
    [ORDER_CANCELLED, AT + 2],
  ],
  'cancelled, then placed': [
    [ORDER_CANCELLED, AT + 1],
    [ORDER_PLACED, AT + 2],
  ],
  'placements out of order': [
    [ORDER_PLACED, AT + 2],
    [ORDER_PLACED, AT + 1],
  ],
  'a placement redelivered within the burst': [
    [ORDER_PLACED, AT + 1, 'again'],
    [ORDER_PLACED, AT + 1, 'again'],
  ],
  'two cancellations of one version': [
    [ORDER_CANCELLED, AT + 1],
    [ORDER_CANCELLED, AT + 1],
  ],
};
const BURST_CASES = ORDER_POSITIONS.flatMap((position) =>
  Object.entries(BURSTS).map(([burst, spec]) => ({ name: `${position} × ${burst}`, position, spec, seen: [] })),
);

describe("the order's rules", () => {
  it('the store, the workflow, the late path and the in-memory store do what the rules say, event by event and in bursts', async () => {
    const rows: string[][] = [];
    const mismatches: string[] = [];
    for (const c of [...SINGLES, ...BURST_CASES]) {
      const a = await agreement(c.position, c.spec, c.seen);
      if (!a) continue;
      const o = a.observed;
      rows.push([c.name, a.rules, o.store, o.workflow, o.late, o.fake]);
      for (const side of Object.keys(a.expected) as (keyof typeof a.expected)[])
        if (a.expected[side] !== o[side])
          mismatches.push(`${c.name} (${a.rules}): ${side} did "${o[side]}", the rules say "${a.expected[side]}"`);
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length), 8));
    const line = (r: string[]) => `| ${r.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
    console.log(
      [line(['case', 'rules', 'store', 'workflow', 'late path', 'in-memory store']), ...rows.map(line)].join('\n'),
    );
    expect(mismatches).toEqual([]);
    // Every single case but an id seen before any row, and every burst at every position.
    expect(rows).toHaveLength(SINGLES.length - ORDER_EVENT_TYPES.length + BURST_CASES.length);
  });
});
