/**
 * `skipped`: the orders topic against the dedupe ledger and the dead-letter topic. Pure: skipped-sources.ts reads
 * the three, this compares them.
 *
 * Every record below the group's committed offset (the bridge says it is done with it) in the window was either handled
 * — its event id claimed in the ledger, which the store does for every outcome of a handled event (applied, duplicate,
 * stale: the claim is the first statement of each effect's transaction, src/adapters/store/order-events.ts) — or
 * dead-lettered (a dead letter names its record by `dlq-original-topic/-partition/-offset`,
 * src/adapters/dlq/dead-letter.ts). A record that is neither was skipped. Records of an unknown event type are ignored by
 * design (no ledger row, no dead letter) and malformed ones are expected in the dead letters only.
 *
 * Rules a reader must not break:
 * - a record older than the ledger's retention horizon may have had its ledger row pruned: when it is not found, the
 *   check says it cannot see it, never that it was skipped or handled;
 * - a record whose order's run is open may be signalled and not yet recorded: it is in flight (a note), not skipped.
 */
import { emptyResult, orderKey, type CheckResult, type Mismatch } from './mismatch.js';

/** What the edge makes of one record of the orders topic. */
export type RecordVerdict =
  | { kind: 'event'; tenantId: string; orderId: string; eventId: string; type: string }
  | { kind: 'malformed'; reason: string; tenantId?: string; orderId?: string }
  | { kind: 'unknown-type'; type: string };

/** One record of the window, below the committed offset. */
export interface SeenRecord {
  partition: number;
  offset: bigint;
  /** Record timestamp, ms. */
  timestamp: number;
  verdict: RecordVerdict;
}

export interface SkippedInputs {
  topic: string;
  records: readonly SeenRecord[];
  /** Whether the ledger holds `eventId` for `tenantId`. */
  inLedger(tenantId: string, eventId: string): boolean;
  /** Positions (`topic:partition:offset`) the dead letters name as their original records. */
  deadLettered: ReadonlySet<string>;
  /** Orders (`tenant/order`) with an open run: their unrecorded events may be in flight. */
  openRuns: ReadonlySet<string>;
  /** Records older than this (ms) may have lost their ledger row to retention. */
  ledgerHorizonMs: number;
  /** Retention named in the report (`LEDGER_RETENTION_DAYS=30`). */
  ledgerRetention: string;
}

/** The dead letters' key of a record's position. */
export function positionKey(topic: string, partition: number, offset: bigint | string): string {
  return `${topic}:${partition}:${offset}`;
}

/** Compares the window's records with the ledger and the dead letters. */
/**
 * The check's result, and per partition the first record judged in flight (committed, not yet recorded, its run
 * open): a later pass must read from there, since it may yet turn out skipped.
 */
export function compareSkipped(input: SkippedInputs): CheckResult & { firstInFlight: Map<number, bigint> } {
  const result = { ...emptyResult('skipped'), firstInFlight: new Map<number, bigint>() };
  let beyondHorizon = 0;
  let inFlight = 0;
  let ignored = 0;
  for (const r of input.records) {
    result.compared += 1;
    const at = `${r.partition}:${r.offset}`;
    const deadLettered = input.deadLettered.has(positionKey(input.topic, r.partition, r.offset));
    const v = r.verdict;
    if (v.kind === 'unknown-type') {
      ignored += 1;
      continue;
    }
    if (deadLettered) continue;
    if (v.kind === 'malformed') {
      result.mismatches.push(skipped(v.tenantId ?? '?', v.orderId ?? '?', at, `malformed (${v.reason})`, 'n/a'));
      continue;
    }
    if (input.inLedger(v.tenantId, v.eventId)) continue;
    if (r.timestamp < input.ledgerHorizonMs) {
      beyondHorizon += 1;
      continue;
    }
    if (input.openRuns.has(orderKey(v.tenantId, v.orderId))) {
      inFlight += 1;
      const first = result.firstInFlight.get(r.partition);
      if (first === undefined || r.offset < first) result.firstInFlight.set(r.partition, r.offset);
      continue;
    }
    result.mismatches.push(skipped(v.tenantId, v.orderId, at, `${v.type} ${v.eventId}`, 'absent'));
  }
  if (beyondHorizon > 0)
    result.unseen.push({
      check: 'skipped',
      what:
        `${beyondHorizon} record(s) older than the ledger's retention (${input.ledgerRetention}, before ` +
        `${new Date(input.ledgerHorizonMs).toISOString()}) are not in the ledger nor dead-lettered: their ledger rows may ` +
        'have been pruned, so whether they were handled cannot be told',
    });
  if (inFlight > 0)
    result.notes.push(`${inFlight} committed event(s) not yet recorded whose order's run is open: in flight`);
  if (ignored > 0) result.notes.push(`${ignored} record(s) of an unknown event type: ignored by design`);
  return result;
}

function skipped(tenantId: string, orderId: string, at: string, record: string, ledger: string): Mismatch {
  return {
    kind: 'skipped',
    tenantId,
    orderId,
    at,
    sides: [
      { source: 'orders topic', state: `${record}, below the committed offset` },
      { source: 'ledger', state: ledger },
      { source: 'dead letters', state: 'absent' },
    ],
  };
}
