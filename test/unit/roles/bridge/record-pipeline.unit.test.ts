/** Each step of a record's path through the bridge, with fakes for Temporal (the starter) and Kafka (the sender). */
import { describe, expect, it } from 'vitest';
import { Abandoned } from '../../../../src/roles/bridge/backoff-gate.js';
import type { OrderStarter, StartOutcome } from '../../../../src/roles/bridge/order-starter.js';
import { EventRejectedByTemporalError } from '../../../../src/roles/bridge/order-starter.js';
import { WorkflowBusyError } from '../../../../src/roles/bridge/delivery-failures.js';
import {
  classify,
  deadLetter,
  deliver,
  ignoreUnknownType,
  isRecentDuplicate,
  laneKey,
  processOrderEvents,
  processRecord,
  type Gate,
  type OrderEventRecord,
  type PipelineDeps,
  type RecordInPartition,
} from '../../../../src/roles/bridge/record-pipeline.js';
import { DependencyUnavailableError } from '../../../../src/base/errors.js';
import type { ConsumedRecord, OutgoingRecord } from '../../../../src/adapters/kafka/records.js';
import { createLogger } from '../../../../src/base/log.js';
import { MAX_UNKNOWN_TYPE_LABELS, createMetrics, metricValue } from '../../../../src/base/metrics.js';
import type { OrderEvent } from '../../../../src/vocabulary/order.js';
import { events } from '../../../support/events.js';

/** A gate that runs the work once, as a healthy BackoffGate does. */
const passThrough: Gate = { run: (work) => work() };
/** A gate whose dependency is down: the wait is abandoned, as on shutdown or parking. */
const abandoning: Gate = { run: () => Promise.reject(new Abandoned('abandoned')) };

function fakes(deliverAs: (e: OrderEvent) => Promise<StartOutcome> = async () => 'accepted') {
  const delivered: OrderEvent[] = [];
  const sent: { topic: string; records: OutgoingRecord[] }[] = [];
  const starter: OrderStarter = {
    async deliver(es) {
      delivered.push(...es);
      return deliverAs(es[0]!);
    },
  };
  const metrics = createMetrics();
  const deps: PipelineDeps = {
    starter,
    hint: new Map<string, true>(),
    sender: { send: async (topic, records) => void sent.push({ topic, records }) },
    dlqTopic: 'dlq',
    group: 'g',
    metrics,
    log: createLogger('silent'),
    recordRetry: { initialDelayMs: 5, maxDelayMs: 20, budgetMs: 200 },
  };
  const ctx = { gates: { deliver: passThrough, deadLetter: passThrough }, signal: new AbortController().signal };
  const count = (name: string, labels: Record<string, string> = {}) => metricValue(metrics.registry, name, labels);
  return { deps, ctx, delivered, sent, count, registry: metrics.registry };
}

let offset = 0;
function record(value: object | string | null, headers?: ConsumedRecord['headers']): RecordInPartition {
  const r: ConsumedRecord = {
    key: Buffer.from('k'),
    value: value === null ? null : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
    headers,
    offset: String((offset += 1)),
    timestamp: '1796000000000',
  };
  return { record: r, topic: 'orders', partition: 2, classified: classify(r, 'orders', 2) };
}

describe('record pipeline', () => {
  it('classify: an order event carries its Kafka origin; an unknown type and a malformed value are told apart; it never throws', () => {
    const ok = record(events.placed('acme', 'o1'));
    expect(ok.classified).toMatchObject({
      kind: 'order-event',
      event: {
        orderId: 'o1',
        origin: { topic: 'orders', partition: 2, offset: ok.record.offset, timestamp: '1796000000000' },
      },
    });
    expect(record({ ...events.placed('acme', 'o1'), type: 'orders.OrderRefunded' }).classified).toMatchObject({
      kind: 'unknown-type',
      type: 'orders.OrderRefunded',
    });
    expect(record('{oops').classified).toMatchObject({ kind: 'malformed', error: { name: 'MalformedEventError' } });
    expect(record(null).classified.kind).toBe('malformed');
  });

  it('laneKey: an order event runs in its order’s lane, anything else in a lane of its own', () => {
    const a = record(events.placed('acme', 'o1'));
    const b = record(events.cancelled('acme', 'o1'));
    const junk = record('{oops');
    expect(laneKey(a)).toBe(laneKey(b));
    expect(laneKey(junk)).toBe(junk.record.offset);
  });

  it('route: an unknown type is ignored and counted, never delivered or dead-lettered', async () => {
    const f = fakes();
    const r = record({ ...events.placed('acme', 'o1'), type: 'orders.OrderRefunded' });
    expect(await processRecord(r, f.deps, f.ctx)).toBe('ignored');
    expect(f.delivered).toHaveLength(0);
    expect(f.sent).toHaveLength(0);
    expect(await f.count('fulfilment_unknown_event_types_total', { type: 'orders.OrderRefunded' })).toBe(1);
    if (r.classified.kind === 'unknown-type') expect(ignoreUnknownType(r, r.classified, f.deps)).toBe('ignored');
  });

  it(`route: unknown types are counted by name, the first ${MAX_UNKNOWN_TYPE_LABELS} distinct ones, later ones as "other"; malformed records apart`, async () => {
    const f = fakes();
    const names = Array.from({ length: MAX_UNKNOWN_TYPE_LABELS + 5 }, (_, i) => `orders.Unknown${i}`);
    for (const type of names) await processRecord(record({ ...events.placed('acme', 'o1'), type }), f.deps, f.ctx);
    await processRecord(record({ ...events.placed('acme', 'o1'), type: names[0] }), f.deps, f.ctx);
    const counted = (await f.registry.getSingleMetric('fulfilment_unknown_event_types_total')!.get()).values;
    expect(counted).toHaveLength(MAX_UNKNOWN_TYPE_LABELS + 1);
    expect(await f.count('fulfilment_unknown_event_types_total', { type: names[0]! })).toBe(2);
    expect(await f.count('fulfilment_unknown_event_types_total', { type: names.at(-1)! })).toBe(0);
    expect(await f.count('fulfilment_unknown_event_types_total', { type: 'other' })).toBe(5);
    expect(await f.count('fulfilment_malformed_records_total')).toBe(0);
    expect(await f.count('fulfilment_bridge_records_total', { type: 'unknown', outcome: 'ignored' })).toBe(
      names.length + 1,
    );
  });

  it('dedupe hint: an event handed over once is suppressed the second time, per tenant', async () => {
    const f = fakes();
    const e = events.placed('acme', 'o1') as OrderEvent;
    expect(await processRecord(record(e), f.deps, f.ctx)).toBe('accepted');
    expect(await processRecord(record(e), f.deps, f.ctx)).toBe('duplicate');
    expect(f.delivered).toHaveLength(1);
    expect(isRecentDuplicate({ ...e, tenantId: 'globex' }, f.deps)).toBe(false);
    expect(await f.count('fulfilment_duplicates_suppressed_total', { layer: 'bridge' })).toBe(1);
  });

  it('deliver: an event the store recorded because its run had closed is counted recorded-late and not remembered by the hint', async () => {
    const f = fakes(async () => 'recorded-late');
    const r = record(events.placed('acme', 'o1'));
    expect(await processRecord(r, f.deps, f.ctx)).toBe('recorded-late');
    expect(await processRecord(record(JSON.parse(r.record.value!.toString()) as object), f.deps, f.ctx)).toBe(
      'recorded-late',
    );
    expect(f.delivered).toHaveLength(2);
    expect(await f.count('fulfilment_bridge_records_total', { outcome: 'recorded-late' })).toBe(2);
  });

  it('deliver: a transient failure is never dead-lettered — it propagates to the gate, and an abandoned wait leaves the record unfinished', async () => {
    const f = fakes(async () => {
      throw new DependencyUnavailableError('Temporal unavailable');
    });
    const r = record(events.placed('acme', 'o1'));
    if (r.classified.kind !== 'order-event') throw new Error('expected an order event');
    await expect(deliver([r as OrderEventRecord], f.deps, f.ctx)).rejects.toBeInstanceOf(DependencyUnavailableError);
    await expect(
      processRecord(r, f.deps, { ...f.ctx, gates: { deliver: abandoning, deadLetter: passThrough } }),
    ).rejects.toBeInstanceOf(Abandoned);
    expect(f.sent).toHaveLength(0);
  });

  it('deliver → dead-letter: an event Temporal refuses for good goes to the DLQ with its bytes, attempts and reason', async () => {
    const f = fakes(async () => {
      throw new EventRejectedByTemporalError('Temporal rejected the event: too large');
    });
    const r = record(events.placed('acme', 'o1'), { traceparent: 'tp' });
    expect(await processRecord(r, f.deps, f.ctx)).toBe('dead-lettered');
    expect(f.sent).toHaveLength(1);
    const [dl] = f.sent[0]!.records;
    expect(f.sent[0]!.topic).toBe('dlq');
    expect(dl!.value).toEqual(r.record.value);
    expect(dl!.headers).toMatchObject({
      traceparent: 'tp',
      'dlq-error-class': 'EventRejectedByTemporalError',
      'dlq-original-partition': '2',
      'dlq-original-offset': r.record.offset,
      'dlq-attempts': '1',
      'dlq-stage': 'edge',
      'dlq-consumer-group': 'g',
    });
  });

  it("deliver: a failure only the order's workflow meets is retried alone, never through the gate, and delivered once it passes", async () => {
    let calls = 0;
    const f = fakes(async () => {
      calls += 1;
      if (calls < 3) throw new WorkflowBusyError('busy');
      return 'accepted';
    });
    // A gate that fails the test if the record's failure reached it as the partition's.
    const strict: Gate = {
      run: (work) =>
        work().catch((err: unknown) => {
          if (!(err instanceof WorkflowBusyError)) throw new Error('unexpected');
          throw err;
        }),
    };
    const r = record(events.placed('acme', 'o1'));
    expect(await processRecord(r, f.deps, { ...f.ctx, gates: { deliver: strict, deadLetter: passThrough } })).toBe(
      'accepted',
    );
    expect(calls).toBe(3);
    expect(await f.count('fulfilment_retries_total', { operation: 'deliver-record' })).toBe(2);
    expect(f.sent).toHaveLength(0);
  });

  it("deliver → dead-letter: past its retry budget the record is dead-lettered with the reason; a group of the order's events all at once", async () => {
    let calls = 0;
    const f = fakes(async () => {
      calls += 1;
      throw new WorkflowBusyError(
        "Temporal refuses more for this order's workflow now (RESOURCE_EXHAUSTED, BUSY_WORKFLOW)",
      );
    });
    const rs = [record(events.placed('acme', 'o1')), record(events.cancelled('acme', 'o1'))] as OrderEventRecord[];
    expect(await processOrderEvents(rs, f.deps, f.ctx)).toEqual(['dead-lettered', 'dead-lettered']);
    // One delivery carried both, retried until the 200 ms budget ran out; neither was delivered alone afterwards.
    expect(calls).toBeGreaterThan(2);
    expect(f.delivered.length).toBe(calls * 2);
    const headers = f.sent.flatMap((s) => s.records.map((x) => x.headers as Record<string, string>));
    expect(headers).toHaveLength(2);
    for (const h of headers) {
      expect(h['dlq-error-class']).toBe('RecordRetryBudgetSpentError');
      expect(h['dlq-error-message']).toMatch(/past the record's retry budget of 0.2 s: .*BUSY_WORKFLOW/);
      expect(h['dlq-attempts']).toBe(String(calls));
    }
  });

  it('deliver: a record retried alone is abandoned at once when its partition is left (shutdown, revocation)', async () => {
    const f = fakes(async () => {
      throw new WorkflowBusyError('busy');
    });
    const leave = new AbortController();
    const r = record(events.placed('acme', 'o1'));
    const work = processRecord(
      r,
      { ...f.deps, recordRetry: { initialDelayMs: 60_000, maxDelayMs: 60_000, budgetMs: 600_000 } },
      { ...f.ctx, signal: leave.signal },
    );
    leave.abort();
    await expect(work).rejects.toBeInstanceOf(Abandoned);
    expect(f.sent).toHaveLength(0);
  });

  it("one order's events queued together: the hint skips what it knows, the rest go in one delivery, each counted", async () => {
    const calls: OrderEvent[][] = [];
    const f = fakes();
    f.deps.starter = {
      async deliver(es) {
        calls.push([...es]);
        return 'accepted';
      },
    };
    const rs = [1, 2, 3].map((v) => record(events.placed('acme', 'o1', { orderVersion: v })) as OrderEventRecord);
    f.deps.hint.set(`acme/${rs[1]!.classified.event.eventId}`, true);
    expect(await processOrderEvents(rs, f.deps, f.ctx)).toEqual(['accepted', 'duplicate', 'accepted']);
    expect(calls.map((c) => c.map((e) => e.orderVersion))).toEqual([[1, 3]]);
    expect(await f.count('fulfilment_bridge_records_total', { outcome: 'accepted' })).toBe(2);
    expect(await f.count('fulfilment_bridge_records_total', { outcome: 'duplicate' })).toBe(1);
  });

  it("one order's events Temporal refuses together are delivered one by one: only the one at fault is dead-lettered", async () => {
    const calls: number[] = [];
    const f = fakes();
    const rs = [1, 2, 3].map((v) => record(events.placed('acme', 'o1', { orderVersion: v })) as OrderEventRecord);
    f.deps.starter = {
      async deliver(es) {
        calls.push(es.length);
        if (es.some((e) => e.orderVersion === 2))
          throw new EventRejectedByTemporalError('Temporal rejected the event: too large');
        return 'accepted';
      },
    };
    expect(await processOrderEvents(rs, f.deps, f.ctx)).toEqual(['accepted', 'dead-lettered', 'accepted']);
    expect(calls).toEqual([3, 1, 1, 1]);
    expect(f.sent).toHaveLength(1);
    expect(f.sent[0]!.records[0]!.value).toEqual(rs[1]!.record.value);
  });

  it('dead-letter: a malformed record goes to the DLQ at once, counted; a DLQ that is down leaves it unfinished', async () => {
    const f = fakes();
    const r = record('{oops');
    expect(await processRecord(r, f.deps, f.ctx)).toBe('dead-lettered');
    expect(f.delivered).toHaveLength(0);
    expect(await f.count('fulfilment_bridge_records_total', { outcome: 'dead-lettered' })).toBe(1);
    expect(await f.count('fulfilment_bridge_records_total', { type: 'malformed', outcome: 'dead-lettered' })).toBe(1);
    expect(await f.count('fulfilment_malformed_records_total', { error_class: 'MalformedEventError' })).toBe(1);
    expect(await f.count('fulfilment_unknown_event_types_total')).toBe(0);
    const failure = { error: new Error('x'), attempts: 1, firstFailureAt: new Date(), type: 'unknown' };
    await expect(
      deadLetter(r, failure, f.deps, { ...f.ctx, gates: { deliver: passThrough, deadLetter: abandoning } }),
    ).rejects.toBeInstanceOf(Abandoned);
  });
});

describe('record pipeline: a redriven record that fails again continues its history', () => {
  const firstFailure = '2026-01-05T08:00:00.000Z';
  /** The headers `dlq redrive` adds to a record it sends back (src/cli/dlq/redriven-record.ts redriveHeaders). */
  const history = (attempts: string, first = firstFailure, from = '0:3') => ({
    'dlq-redrive-attempts': attempts,
    'dlq-first-failure-at': first,
    'dlq-redriven-from': from,
    'redriven-from': from,
  });
  const headersOf = (f: ReturnType<typeof fakes>) => f.sent[0]!.records[0]!.headers as Record<string, string>;

  it('malformed again: attempts = previous + this one, the original first failure, and which dead letter it came from', async () => {
    const f = fakes();
    const before = Date.now();
    const r = record('{"eventId": "abc", oops', { note: 'kept', ...history('1') });
    expect(await processRecord(r, f.deps, f.ctx)).toBe('dead-lettered');
    const h = headersOf(f);
    expect(h).toMatchObject({
      'dlq-error-class': 'MalformedEventError',
      'dlq-attempts': '2',
      'dlq-first-failure-at': firstFailure,
      'dlq-redriven-from': '0:3',
      'redriven-from': '0:3',
      note: 'kept',
      // the origin is the redriven copy: a new dead letter, not a copy of the old one
      'dlq-original-topic': 'orders',
      'dlq-original-offset': r.record.offset,
    });
    expect(Date.parse(h['dlq-last-failure-at']!)).toBeGreaterThanOrEqual(before);
    // the count lives on in dlq-attempts only
    expect(h).not.toHaveProperty('dlq-redrive-attempts');
  });

  it('refused by Temporal again: the delivery attempts are added to the previous ones', async () => {
    let calls = 0;
    const f = fakes(async () => {
      calls += 1;
      throw new EventRejectedByTemporalError('Temporal rejected the event: too large');
    });
    const r = record(events.placed('acme', 'o1'), history('3'));
    expect(await processRecord(r, f.deps, f.ctx)).toBe('dead-lettered');
    expect(calls).toBe(1);
    expect(headersOf(f)).toMatchObject({
      'dlq-error-class': 'EventRejectedByTemporalError',
      'dlq-attempts': '4',
      'dlq-first-failure-at': firstFailure,
    });
  });

  it('a record without a history, or with one that does not parse, is dead-lettered as a first failure', async () => {
    for (const headers of [
      undefined,
      history('lots'),
      history('0'),
      history('2', 'yesterday'),
      { 'dlq-first-failure-at': firstFailure },
      { 'dlq-redrive-attempts': '2' },
    ]) {
      const f = fakes();
      const before = Date.now();
      expect(await processRecord(record('{oops', headers), f.deps, f.ctx)).toBe('dead-lettered');
      const h = headersOf(f);
      expect(h['dlq-attempts'], JSON.stringify(headers)).toBe('1');
      expect(Date.parse(h['dlq-first-failure-at']!), JSON.stringify(headers)).toBeGreaterThanOrEqual(before);
    }
  });

  it('a first failure claimed later than this one is not taken: the earlier of the two is kept', async () => {
    const f = fakes();
    const before = Date.now();
    const failure = { error: new Error('x'), attempts: 1, firstFailureAt: new Date(before), type: 'unknown' };
    await deadLetter(record('{oops', history('1', '2099-01-01T00:00:00.000Z')), failure, f.deps, f.ctx);
    expect(headersOf(f)).toMatchObject({ 'dlq-attempts': '2', 'dlq-first-failure-at': new Date(before).toISOString() });
  });
});
