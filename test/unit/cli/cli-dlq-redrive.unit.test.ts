/** The pure parts of `dlq redrive` and `dlq purge`: what a redriven record carries, the re-validation, the checks. */
import { describe, expect, it } from 'vitest';
import { defaultOperator, operatorName } from '../../../src/cli/dlq/audit.js';
import { redriveLogKey, redriveLogTopicOf } from '../../../src/cli/dlq/redrive-log.js';
import { checkPurgeOptions } from '../../../src/cli/dlq/purge-options.js';
import type { DlqRecord } from '../../../src/cli/dlq/record.js';
import { refusalOf, type RedriveResult } from '../../../src/cli/dlq/redrive.js';
import { historyOf, redriveHeaders, revalidate } from '../../../src/cli/dlq/redriven-record.js';
import { UsageError } from '../../../src/cli/cli-errors.js';
import { carryForward, redriveHistory } from '../../../src/adapters/dlq/dead-letter.js';
import { events } from '../../support/events.js';

const dlqHeaders = {
  'dlq-error-class': 'MalformedEventError',
  'dlq-error-message': 'field eventId: is required',
  'dlq-original-topic': 'orders',
  'dlq-original-partition': '1',
  'dlq-original-offset': '41',
  'dlq-consumer-group': 'fulfilment',
  'dlq-attempts': '3',
  'dlq-first-failure-at': '2026-01-05T08:00:00.000Z',
  'dlq-last-failure-at': '2026-01-06T09:00:00.000Z',
  'dlq-redriven-from': '0:1',
};

function dlqRecord(
  value: object | string | null,
  headers: Record<string, string> = dlqHeaders,
  at = { partition: 0, offset: '7' },
): DlqRecord {
  return {
    ...at,
    timestamp: String(Date.parse('2026-01-06T09:00:01.000Z')),
    key: Buffer.from('k'),
    value: value === null ? null : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
    headers,
  };
}

describe('dlq redrive: what a redriven record carries', () => {
  it('the original headers, its DLQ position, and its history: previous attempts, original first failure', () => {
    const r = dlqRecord('{}', { traceparent: 'tp', 'redriven-from': '0:0', ...dlqHeaders });
    expect(redriveHeaders(r)).toEqual({
      traceparent: 'tp',
      'redriven-from': '0:7',
      'dlq-redrive-attempts': '3',
      'dlq-first-failure-at': '2026-01-05T08:00:00.000Z',
      'dlq-redriven-from': '0:7',
    });
  });

  it('the bridge reads back exactly that history, and a failure continues it', () => {
    const r = dlqRecord('{}');
    const history = redriveHistory(redriveHeaders(r));
    expect(history).toEqual({ attempts: 3, firstFailureAt: new Date('2026-01-05T08:00:00.000Z'), from: '0:7' });
    expect(carryForward({ attempts: 1, firstFailureAt: new Date('2026-02-01T00:00:00Z') }, history)).toEqual({
      attempts: 4,
      firstFailureAt: new Date('2026-01-05T08:00:00.000Z'),
    });
  });

  it('a dead letter without attempts or a first failure passes on 1 and its last failure (else its DLQ write time)', () => {
    expect(
      historyOf(dlqRecord('{}', { 'dlq-last-failure-at': '2026-01-06T09:00:00.000Z', 'dlq-attempts': 'many' })),
    ).toEqual({
      attempts: 1,
      firstFailureAt: new Date('2026-01-06T09:00:00.000Z'),
      from: '0:7',
    });
    expect(historyOf(dlqRecord('{}', {})).firstFailureAt).toEqual(new Date('2026-01-06T09:00:01.000Z'));
  });
});

describe("dlq redrive: re-validation with the bridge's edge parser", () => {
  it('a valid event, an unknown type, and a record still malformed (naming the field)', () => {
    expect(revalidate(dlqRecord(events.placed('acme', 'o1')), 'orders')).toMatchObject({
      kind: 'order-event',
      event: { orderId: 'o1' },
    });
    expect(
      revalidate(dlqRecord({ ...events.placed('acme', 'o1'), type: 'orders.OrderRefunded' }), 'orders'),
    ).toMatchObject({ kind: 'unknown-type', type: 'orders.OrderRefunded' });
    expect(revalidate(dlqRecord({ ...events.placed('acme', 'o1'), eventId: undefined }), 'orders')).toMatchObject({
      kind: 'malformed',
      error: { name: 'MalformedEventError', field: 'eventId', message: expect.stringContaining('field eventId') },
    });
    expect(revalidate(dlqRecord('{oops'), 'orders')).toMatchObject({
      kind: 'malformed',
      error: { message: expect.stringContaining('not JSON') },
    });
  });

  it('judges the record with the headers it would carry: an unsafe correlation-id header is still malformed', () => {
    const { correlationId: _c, ...event } = events.placed('acme', 'o1');
    const v = revalidate(dlqRecord(event, { ...dlqHeaders, 'correlation-id': 'has space' }), 'orders');
    expect(v).toMatchObject({ kind: 'malformed', error: { field: 'header correlation-id' } });
  });

  it('a real run that refused dead letters ends with an error naming them; a dry run or a run without refusals does not', () => {
    const base: RedriveResult = {
      dryRun: false,
      operator: 'o',
      redriveLogTopic: 't',
      selected: [],
      sent: [],
      planned: [],
      skipped: [],
      alreadyRedriven: [],
      refused: [],
      folded: [],
    };
    expect(refusalOf(base)).toBeUndefined();
    const refused = { ...base, refused: [{ position: '0:3', field: 'eventId', reason: 'field eventId: is required' }] };
    expect(refusalOf({ ...refused, dryRun: true })).toBeUndefined();
    expect(refusalOf(refused)?.message).toBe(
      '1 dead letter(s) refused as still malformed and not sent (0:3): fix the producer and purge it, or send it anyway with --force',
    );
  });
});

describe('dlq redrive log keys', () => {
  it('copies of one origin share a key; a dead letter without origin headers is keyed by its position', () => {
    expect(redriveLogTopicOf('orders.dlq')).toBe('orders.dlq.redrives');
    const a = dlqRecord('{}', dlqHeaders, { partition: 0, offset: '1' });
    const b = dlqRecord('{}', dlqHeaders, { partition: 2, offset: '9' });
    expect(redriveLogKey(a)).toBe(redriveLogKey(b));
    expect(redriveLogKey(dlqRecord('{}', {}, { partition: 2, offset: '9' }))).toBe('["dlq-position","2:9"]');
  });
});

describe('dlq purge and --operator: checks of the options alone', () => {
  const now = Date.parse('2026-03-01T12:00:00Z');
  it('refuses a time in the future and --yes with --dry-run; accepts now and the past', () => {
    expect(() => checkPurgeOptions({ before: new Date(now + 60_000) }, now)).toThrow(UsageError);
    expect(() => checkPurgeOptions({ before: new Date(now - 1), yes: true, dryRun: true }, now)).toThrow(/contradict/);
    expect(() => checkPurgeOptions({ before: new Date(now) }, now)).not.toThrow();
    expect(() => checkPurgeOptions({ before: new Date(now - 86_400_000), yes: true }, now)).not.toThrow();
  });

  it('an operator is a trimmed name without control characters; the default is the OS user', () => {
    expect(operatorName('  jane.doe ')).toBe('jane.doe');
    expect(operatorName('Jane Doe')).toBe('Jane Doe');
    for (const bad of ['', '   ', 'a\nb', 'x'.repeat(129)]) expect(() => operatorName(bad)).toThrow(/expected a name/);
    expect(defaultOperator()).toMatch(/\S/);
  });
});
