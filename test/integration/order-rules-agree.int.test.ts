/**
 * The order's rules agree wherever they are applied. Every case — where the order stands × the event's type × how its
 * version compares (older, the same, newer, or its id seen before) — goes through the table (src/order-rules.ts) and
 * the three places that decide: the workflow's decide() (an order's state at that position), the store on the real
 * PostgreSQL (recordOrderEvent on a row put at that position), and the late path (recordLateEvents on another such row,
 * no run open). What the store did is read from the row before and after, not from the table, so a change to its SQL
 * that drifts from the rules fails here; the late path must leave for a run exactly the cases the rules say need one,
 * and record the rest as the store does. The table of every case is printed.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createDb, inTenantTransaction, type Db, type Tx } from '../../src/db.js';
import {
  CONSUMER_NAME,
  ORDER_CANCELLED,
  ORDER_EVENT_TYPES,
  ORDER_PLACED,
  type FulfilmentRow,
  type OrderEvent,
  type OrderEventType,
  type OrderStatus,
  type StoredOrder,
} from '../../src/order.js';
import {
  ORDER_POSITIONS,
  orderTransition,
  runNeeded,
  versionRelation,
  type OrderPosition,
  type OrderTransition,
} from '../../src/order-rules.js';
import { provisionPostgres } from '../../src/provision/postgres.js';
import { runtimeConnection } from '../../src/store/connection.js';
import {
  readFulfilment,
  recordCancellation,
  recordFailed,
  recordPlacement,
  recordRecallFailed,
  recordShipped,
} from '../../src/store/fulfilments.js';
import { recordLateEvents, recordOrderEvent, type StoreTarget } from '../../src/store/order-events.js';
import { claim } from '../../src/store/processed-events.js';
import { decide, initialOrderState, type OrderState } from '../../workflows/order-state.js';

/** The version every order is put at before its event. */
const AT = 5;
const RELATIONS = { older: AT - 1, same: AT, newer: AT + 1, seen: AT + 1 } as const;
type Case = { position: OrderPosition; type: OrderEventType; relation: keyof typeof RELATIONS };
const CASES: Case[] = ORDER_POSITIONS.flatMap((position) =>
  ORDER_EVENT_TYPES.flatMap((type) =>
    (Object.keys(RELATIONS) as Case['relation'][]).map((relation) => ({ position, type, relation })),
  ),
);
const name = ({ position, type, relation }: Case) => `${position} × ${type.replace(/^orders\./, '')} × ${relation}`;

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

const lines = [{ sku: 'SKU-1', quantity: 1 }];
const newLines = [{ sku: 'SKU-NEW', quantity: 2 }];
const change = (claimKey: string) => ({ topic: 'status.rules-test', claimKey });

function eventOf(c: Case, orderId: string): OrderEvent {
  const base = {
    eventId: `${c.relation}-${randomUUID()}`,
    schemaVersion: 1,
    occurredAt: new Date().toISOString(),
    tenantId: tenant,
    orderId,
    orderVersion: RELATIONS[c.relation],
  };
  return c.type === ORDER_PLACED
    ? { ...base, type: ORDER_PLACED, data: { customerId: 'c-new', lines: newLines } }
    : { ...base, type: ORDER_CANCELLED, data: {} };
}

/** Puts order `orderId` at `position` (version AT) through the store's own functions. */
async function putAt(position: OrderPosition, orderId: string): Promise<void> {
  if (position === 'none') return;
  const ref = (v: number) => ({ eventId: `setup-${randomUUID()}`, tenantId: tenant, orderId, orderVersion: v });
  const steps: ((tx: Tx) => Promise<unknown>)[] = {
    tombstone: [(tx: Tx) => recordCancellation(tx, ref(AT), {}, change(`setup-${randomUUID()}`))],
    pending: [(tx: Tx) => recordPlacement(tx, ref(AT), { customerId: 'c', lines }, change(`setup-${randomUUID()}`))],
    shipped: [
      (tx: Tx) => recordPlacement(tx, ref(AT), { customerId: 'c', lines }, change(`setup-${randomUUID()}`)),
      (tx: Tx) => recordShipped(tx, tenant, orderId, 'shp-1', change(`setup-${randomUUID()}`)),
    ],
    cancelled: [
      (tx: Tx) => recordPlacement(tx, ref(1), { customerId: 'c', lines }, change(`setup-${randomUUID()}`)),
      (tx: Tx) => recordCancellation(tx, ref(AT), {}, change(`setup-${randomUUID()}`)),
    ],
    failed: [
      (tx: Tx) => recordPlacement(tx, ref(AT), { customerId: 'c', lines }, change(`setup-${randomUUID()}`)),
      (tx: Tx) => recordFailed(tx, tenant, orderId, 'the warehouse refused', change(`setup-${randomUUID()}`)),
    ],
    'recall-failed': [
      (tx: Tx) => recordPlacement(tx, ref(1), { customerId: 'c', lines }, change(`setup-${randomUUID()}`)),
      (tx: Tx) => recordCancellation(tx, ref(AT), {}, change(`setup-${randomUUID()}`)),
      (tx: Tx) => recordRecallFailed(tx, tenant, orderId, 'the warehouse refused', change(`setup-${randomUUID()}`)),
    ],
  }[position];
  for (const step of steps) await inTenantTransaction(db, tenant, step);
}

const read = (orderId: string) => inTenantTransaction(db, tenant, (tx) => readFulfilment(tx, tenant, orderId));
const seen = (eventId: string) => inTenantTransaction(db, tenant, (tx) => claim(tx, CONSUMER_NAME, tenant, eventId));

/** What the store did, read from the row before and after (and its answer), in the rules' words. */
function observed(
  type: OrderEventType,
  before: FulfilmentRow | undefined,
  after: FulfilmentRow,
  stored: StoredOrder,
): OrderTransition | string {
  if (stored.outcome === 'duplicate' || stored.outcome === 'stale') return stored.outcome;
  const versionMoved = after.order_version > (before?.order_version ?? 0);
  if (!before) return after.placed_at ? 'place' : after.status === 'cancelled' ? 'tombstone' : `? new ${after.status}`;
  if (before.placed_at === null && after.placed_at !== null)
    return after.status === 'cancelled' ? 'join-tombstone' : '?';
  if (stored.recall) return before.status === 'failed' && after.status === 'cancelled' ? 'cancel-and-recall' : '?';
  if (!before.cancel_refused_at && after.cancel_refused_at) return after.status === 'shipped' ? 'refuse' : '?';
  if (type === ORDER_CANCELLED && after.status === 'cancelled' && versionMoved) return 'cancel';
  if (type === ORDER_CANCELLED && after.status === 'recall-failed' && versionMoved) return 'note-version';
  if (type === ORDER_PLACED && after.status === before.status && versionMoved) {
    // A pending order takes the newer lines; any other keeps what it has.
    const took = JSON.stringify(after.lines) === JSON.stringify(newLines);
    return took === (before.status === 'pending') ? 'amend' : '? amend with the wrong lines';
  }
  return `? ${before.status} → ${after.status}`;
}

/** The workflow's state for an order at `position` (version AT; placed unless a tombstone). */
function stateAt(position: OrderPosition, orderId: string, tombstone: 'awaiting' | 'expired'): OrderState {
  const s = initialOrderState(tenant, orderId);
  if (position === 'none') return s;
  const status: OrderStatus =
    position === 'tombstone' ? (tombstone === 'awaiting' ? 'awaiting-placement' : 'cancelled') : position;
  const placement = position === 'tombstone' ? {} : { placement: { customerId: 'c', lines } };
  return { ...s, status, orderVersion: AT, ...placement };
}

function workflowSays(c: Case, event: OrderEvent, tombstone: 'awaiting' | 'expired'): OrderTransition | 'foreign' {
  const state = stateAt(c.position, event.orderId, tombstone);
  const d = decide(c.relation === 'seen' ? { ...state, seenEventIds: [event.eventId] } : state, event);
  return d.kind === 'record' ? d.transition : d.kind;
}

/** An order put at the case's position, the case's event for it, and the row before the event. */
async function prepare(c: Case, prefix: string) {
  const orderId = `${prefix}-${randomUUID().slice(0, 8)}`;
  await putAt(c.position, orderId);
  const event = eventOf(c, orderId);
  if (c.relation === 'seen') await seen(event.eventId);
  return { orderId, event, before: await read(orderId) };
}

async function storeSays(c: Case): Promise<OrderTransition | string> {
  const { orderId, event, before } = await prepare(c, 'store');
  const stored = await recordOrderEvent(target, event);
  return observed(c.type, before, (await read(orderId))!, stored);
}

async function latePathSays(c: Case): Promise<OrderTransition | string> {
  const { orderId, event, before } = await prepare(c, 'late');
  const record = await recordLateEvents(target, [event]);
  const after = await read(orderId);
  if (record.needsRun !== undefined) {
    // Left for a run: nothing written.
    return JSON.stringify(after) === JSON.stringify(before) ? 'needs a run' : '? needs a run, yet wrote the row';
  }
  return observed(c.type, before, after!, record.recorded[0]!.stored);
}

describe("the order's rules", () => {
  it('the workflow, the store and the late path agree with the table in every case', async () => {
    const rows: string[][] = [];
    for (const c of CASES) {
      const relation = c.relation === 'seen' ? 'newer' : versionRelation(RELATIONS[c.relation], AT);
      const rule = orderTransition(c.position, c.type, relation, c.relation === 'seen');
      const late = runNeeded(c.position, rule) !== undefined ? 'needs a run' : rule;
      const event = eventOf(c, 'o-wf');
      // The store holds no claim without its order's row: an id seen before the order is recorded cannot be.
      const noSuchRow = c.position === 'none' && c.relation === 'seen';
      const says = {
        workflow: workflowSays(c, event, 'awaiting'),
        // A tombstone whose grace window ended in its run is still one to the rules (and to the store).
        expired: c.position === 'tombstone' ? workflowSays(c, event, 'expired') : undefined,
        store: noSuchRow ? 'n/a' : await storeSays(c),
        late: noSuchRow ? 'n/a' : await latePathSays(c),
      };
      rows.push([name(c), rule, says.workflow, says.expired ?? '', says.store, says.late]);
      expect({ ...says, expired: says.expired ?? says.workflow }, name(c)).toEqual({
        workflow: rule,
        expired: rule,
        store: noSuchRow ? 'n/a' : rule,
        late: noSuchRow ? 'n/a' : late,
      });
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length), 12));
    const line = (r: string[]) => `| ${r.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
    console.log(
      [line(['case', 'rules', 'workflow', 'wf (expired)', 'store', 'late path']), ...rows.map(line)].join('\n'),
    );
    expect(rows).toHaveLength(ORDER_POSITIONS.length * ORDER_EVENT_TYPES.length * 4);
  });
});
