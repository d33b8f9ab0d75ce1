import { describe, expect, it } from 'vitest';
import { compareSkipped, positionKey, type SeenRecord, type SkippedInputs } from '../../../src/reconcile/skipped.js';

const NOW = Date.parse('2026-03-10T12:00:00Z');
const T = 'orders';

function event(partition: number, offset: bigint, order: string, eventId = `e-${order}`, timestamp = NOW): SeenRecord {
  return {
    partition,
    offset,
    timestamp,
    verdict: { kind: 'event', tenantId: 't1', orderId: order, eventId, type: 'orders.OrderPlaced' },
  };
}

function inputs(records: SeenRecord[], over: Partial<SkippedInputs> = {}): SkippedInputs {
  return {
    topic: T,
    records,
    inLedger: () => false,
    deadLettered: new Set(),
    openRuns: new Set(),
    ledgerHorizonMs: NOW - 30 * 86_400_000,
    ledgerRetention: 'LEDGER_RETENTION_DAYS=30',
    ...over,
  };
}

describe('skipped: the orders topic against the ledger and the dead letters', () => {
  it('a record in the ledger or dead-lettered was handled; one in neither was skipped, named with each side', () => {
    const r = compareSkipped(
      inputs([event(0, 1n, 'a'), event(1, 4n, 'b'), event(2, 9n, 'c')], {
        inLedger: (t, id) => t === 't1' && id === 'e-a',
        deadLettered: new Set([positionKey(T, 1, 4n)]),
      }),
    );
    expect(r.compared).toBe(3);
    expect(r.mismatches).toEqual([
      {
        kind: 'skipped',
        tenantId: 't1',
        orderId: 'c',
        at: '2:9',
        sides: [
          { source: 'orders topic', state: 'orders.OrderPlaced e-c, below the committed offset' },
          { source: 'ledger', state: 'absent' },
          { source: 'dead letters', state: 'absent' },
        ],
      },
    ]);
    expect(r.unseen).toEqual([]);
  });

  it('the ledger is asked per tenant: the same event id of another tenant does not count', () => {
    const r = compareSkipped(inputs([event(0, 1n, 'a', 'shared')], { inLedger: (t) => t === 't2' }));
    expect(r.mismatches.map((m) => m.orderId)).toEqual(['a']);
  });

  it('a dead letter of the same offset on another topic does not count', () => {
    const r = compareSkipped(inputs([event(0, 1n, 'a')], { deadLettered: new Set([positionKey('other', 0, 1n)]) }));
    expect(r.mismatches).toHaveLength(1);
  });

  it('malformed records are expected in the dead letters only; unknown types are ignored by design', () => {
    const malformed: SeenRecord = {
      partition: 0,
      offset: 2n,
      timestamp: NOW,
      verdict: { kind: 'malformed', reason: 'eventId: expected a string', tenantId: 't1', orderId: 'm' },
    };
    const unknown: SeenRecord = {
      partition: 0,
      offset: 3n,
      timestamp: NOW,
      verdict: { kind: 'unknown-type', type: 'x' },
    };
    expect(compareSkipped(inputs([malformed, unknown])).mismatches.map((m) => [m.kind, m.orderId, m.at])).toEqual([
      ['skipped', 'm', '0:2'],
    ]);
    const ok = compareSkipped(inputs([malformed, unknown], { deadLettered: new Set([positionKey(T, 0, 2n)]) }));
    expect(ok.mismatches).toEqual([]);
    expect(ok.notes).toEqual(['1 record(s) of an unknown event type: ignored by design']);
  });

  it('older than the ledger retention and not found: cannot see, neither skipped nor passed', () => {
    const old = NOW - 31 * 86_400_000;
    const r = compareSkipped(inputs([event(0, 1n, 'old', 'e-old', old), event(0, 2n, 'new')]));
    expect(r.mismatches.map((m) => m.orderId)).toEqual(['new']);
    expect(r.unseen).toHaveLength(1);
    expect(r.unseen[0]!.what).toContain("1 record(s) older than the ledger's retention (LEDGER_RETENTION_DAYS=30");
  });

  it('names, per partition, the first record in flight: a later pass reads from there', () => {
    const records = [event(0, 3n, 'a'), event(0, 1n, 'b'), event(1, 5n, 'c'), event(1, 2n, 'x'), event(2, 9n, 'd')];
    const r = compareSkipped(
      inputs(records, { openRuns: new Set(['t1/a', 't1/b', 't1/c']), inLedger: (_t, id) => id === 'e-x' }),
    );
    expect(r.firstInFlight).toEqual(
      new Map([
        [0, 1n],
        [1, 5n],
      ]),
    );
    expect(r.mismatches.map((m) => m.at)).toEqual(['2:9']);
  });

  it('an unrecorded event of an order whose run is open is in flight, not skipped', () => {
    const r = compareSkipped(inputs([event(0, 1n, 'a')], { openRuns: new Set(['t1/a']) }));
    expect(r.mismatches).toEqual([]);
    expect(r.notes[0]).toContain('in flight');
  });
});
