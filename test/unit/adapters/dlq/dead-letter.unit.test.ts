/** The dead-letter contract: what a dead letter carries, how it is reduced to fit, and how it is written. */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  DLQ_HEADERS,
  deadLetterMessage,
  kafkaErrorType,
  publishDeadLetter,
  reducedDeadLetterMessage,
  type DeadLetter,
} from '../../../../src/adapters/dlq/dead-letter.js';
import { loadConfig } from '../../../../src/base/config.js';
import { DependencyUnavailableError, TransientError } from '../../../../src/base/errors.js';

type Written = ReturnType<typeof deadLetterMessage>;
type Headers = Written['headers'];
type Sender = Parameters<typeof publishDeadLetter>[0];

const VALUE = JSON.stringify({
  eventId: 'evt-1',
  type: 'orders.OrderPlaced',
  schemaVersion: 99,
  tenantId: 'acme',
  orderId: 'o-1',
  correlationId: 'corr-body',
});

function letter(over: Partial<DeadLetter> = {}): DeadLetter {
  return {
    key: Buffer.from('acme/o-1'),
    value: Buffer.from(VALUE),
    headers: { 'correlation-id': Buffer.from('corr-header'), traceparent: '00-abc-def-01' },
    origin: { topic: 'orders', partition: 3, offset: '1234', timestamp: '1700000000000' },
    group: 'fulfilment-bridge',
    error: { name: 'MalformedEventError', message: 'schemaVersion: supported schema versions: 1' },
    attempts: 1,
    firstFailureAt: new Date('2024-05-01T10:00:00.000Z'),
    lastFailureAt: new Date('2024-05-01T10:00:05.000Z'),
    stage: 'edge',
    ...over,
  };
}

/** A header value as text (kafkajs headers may be strings or Buffers). */
function text(headers: Headers, name: string): string | undefined {
  const v = headers?.[name];
  if (v === undefined) return undefined;
  if (Array.isArray(v)) throw new Error(`header ${name} has several values`);
  return Buffer.isBuffer(v) ? v.toString('utf8') : v;
}

const contractNames = Object.values(DLQ_HEADERS) as string[];
const contractOnly = (h: Headers) =>
  Object.keys(h ?? {})
    .filter((k) => contractNames.includes(k))
    .sort();

describe('deadLetterMessage (the dead letter as first written)', () => {
  it('keeps the original key, value bytes and headers, and adds every contract header with its value', () => {
    const d = letter();
    const m = deadLetterMessage(d);
    expect(m.key).toBe(d.key);
    expect(m.value).toBe(d.value);
    expect(m.headers!['traceparent']).toBe('00-abc-def-01');
    expect(text(m.headers, 'correlation-id')).toBe('corr-header');
    expect({
      errorClass: text(m.headers, DLQ_HEADERS.errorClass),
      errorMessage: text(m.headers, DLQ_HEADERS.errorMessage),
      topic: text(m.headers, DLQ_HEADERS.topic),
      partition: text(m.headers, DLQ_HEADERS.partition),
      offset: text(m.headers, DLQ_HEADERS.offset),
      timestamp: text(m.headers, DLQ_HEADERS.timestamp),
      group: text(m.headers, DLQ_HEADERS.group),
      attempts: text(m.headers, DLQ_HEADERS.attempts),
      firstFailure: text(m.headers, DLQ_HEADERS.firstFailure),
      lastFailure: text(m.headers, DLQ_HEADERS.lastFailure),
      eventId: text(m.headers, DLQ_HEADERS.eventId),
      tenantId: text(m.headers, DLQ_HEADERS.tenantId),
      correlationId: text(m.headers, DLQ_HEADERS.correlationId),
      stage: text(m.headers, DLQ_HEADERS.stage),
    }).toEqual({
      errorClass: 'MalformedEventError',
      errorMessage: 'schemaVersion: supported schema versions: 1',
      topic: 'orders',
      partition: '3',
      offset: '1234',
      timestamp: '1700000000000',
      group: 'fulfilment-bridge',
      attempts: '1',
      firstFailure: '2024-05-01T10:00:00.000Z',
      lastFailure: '2024-05-01T10:00:05.000Z',
      eventId: 'evt-1',
      tenantId: 'acme',
      correlationId: 'corr-body',
      stage: 'edge',
    });
    // The whole form says nothing about a reduced value.
    for (const name of [
      DLQ_HEADERS.valueForm,
      DLQ_HEADERS.valueSize,
      DLQ_HEADERS.valueSha256,
      DLQ_HEADERS.headersOmitted,
    ]) {
      expect(m.headers![name]).toBeUndefined();
    }
  });

  it('every contract header is a dlq-* name, and the whole (clear and encrypted) and reduced forms together carry all of them', () => {
    for (const name of contractNames) expect(name).toMatch(/^dlq-[a-z0-9-]+$/);
    const d = letter({ headers: { big: 'x'.repeat(20_000) } });
    const keys = loadConfig({ PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}` }).payloadEncryption;
    const seen = new Set([
      ...contractOnly(deadLetterMessage(d).headers),
      ...contractOnly(deadLetterMessage(d, keys).headers),
      ...contractOnly(reducedDeadLetterMessage(d, true).headers),
    ]);
    expect([...seen].sort()).toEqual([...contractNames].sort());
  });

  it('takes the identity given in ids over what the value says', () => {
    const m = deadLetterMessage(
      letter({ ids: { eventId: 'evt-known', tenantId: 'globex', correlationId: 'corr-known' } }),
    );
    expect(text(m.headers, DLQ_HEADERS.eventId)).toBe('evt-known');
    expect(text(m.headers, DLQ_HEADERS.tenantId)).toBe('globex');
    expect(text(m.headers, DLQ_HEADERS.correlationId)).toBe('corr-known');
  });

  it('reads the identity from a value that failed validation, best effort; a value that is not JSON has none', () => {
    const fromString = deadLetterMessage(letter({ value: VALUE, headers: undefined }));
    expect(text(fromString.headers, DLQ_HEADERS.eventId)).toBe('evt-1');
    expect(text(fromString.headers, DLQ_HEADERS.tenantId)).toBe('acme');
    for (const value of [
      Buffer.from('{not json'),
      Buffer.from('[1,2]'),
      Buffer.from('"s"'),
      Buffer.from('null'),
      Buffer.alloc(0),
      null,
    ]) {
      const m = deadLetterMessage(letter({ value, headers: undefined }));
      expect(m.value).toBe(value);
      expect(m.headers![DLQ_HEADERS.eventId]).toBeUndefined();
      expect(m.headers![DLQ_HEADERS.tenantId]).toBeUndefined();
      expect(m.headers![DLQ_HEADERS.correlationId]).toBeUndefined();
      expect(text(m.headers, DLQ_HEADERS.errorClass)).toBe('MalformedEventError');
    }
    // Identity fields of the wrong type are not taken.
    const wrong = deadLetterMessage(
      letter({ value: JSON.stringify({ eventId: 42, tenantId: { x: 1 } }), headers: undefined }),
    );
    expect(wrong.headers![DLQ_HEADERS.eventId]).toBeUndefined();
    expect(wrong.headers![DLQ_HEADERS.tenantId]).toBeUndefined();
  });

  it("takes the correlation id from the record's correlation-id header when the body has none", () => {
    const body = JSON.stringify({ eventId: 'evt-2', tenantId: 'acme' });
    expect(text(deadLetterMessage(letter({ value: body })).headers, DLQ_HEADERS.correlationId)).toBe('corr-header');
    const asString = deadLetterMessage(letter({ value: body, headers: { 'correlation-id': 'corr-string' } }));
    expect(text(asString.headers, DLQ_HEADERS.correlationId)).toBe('corr-string');
    const viaIds = deadLetterMessage(letter({ ids: { eventId: 'evt-2' } }));
    expect(text(viaIds.headers, DLQ_HEADERS.correlationId)).toBe('corr-header');
    const none = deadLetterMessage(letter({ value: body, headers: {} }));
    expect(none.headers![DLQ_HEADERS.correlationId]).toBeUndefined();
  });

  it('caps the error message at 2000 characters and carries no stack', () => {
    const m = deadLetterMessage(letter({ error: { name: 'Error', message: 'm'.repeat(5000) } }));
    expect(text(m.headers, DLQ_HEADERS.errorMessage)).toBe('m'.repeat(2000));
    const short = deadLetterMessage(letter({ error: { name: 'Error', message: 'short' } }));
    expect(text(short.headers, DLQ_HEADERS.errorMessage)).toBe('short');
  });

  it('names the stage and, for a re-encoded value, its form; an unknown timestamp is left out', () => {
    const m = deadLetterMessage(
      letter({
        stage: 'workflow',
        valueForm: 'validated-event',
        attempts: 35,
        origin: { topic: 'orders', partition: 0, offset: '7' },
      }),
    );
    expect(text(m.headers, DLQ_HEADERS.stage)).toBe('workflow');
    expect(text(m.headers, DLQ_HEADERS.valueForm)).toBe('validated-event');
    expect(text(m.headers, DLQ_HEADERS.attempts)).toBe('35');
    expect(text(m.headers, DLQ_HEADERS.partition)).toBe('0');
    expect(m.headers![DLQ_HEADERS.timestamp]).toBeUndefined();
  });
});

describe('reducedDeadLetterMessage (a dead letter the topic could not hold)', () => {
  it('omits the value and says what it was: form too-large, its byte size and SHA-256', () => {
    const value = `{"note":"caf\u00e9 \u2603 \u{1F600}","pad":"${'p'.repeat(3000)}"}`;
    const m = reducedDeadLetterMessage(letter({ value }), true);
    expect(m.value).toBeNull();
    expect(m.key).toEqual(Buffer.from('acme/o-1'));
    expect(text(m.headers, DLQ_HEADERS.valueForm)).toBe('too-large');
    expect(text(m.headers, DLQ_HEADERS.valueSize)).toBe(String(Buffer.byteLength(value)));
    expect(Buffer.byteLength(value)).toBeGreaterThan(value.length);
    expect(text(m.headers, DLQ_HEADERS.valueSha256)).toBe(createHash('sha256').update(value).digest('hex'));

    const bytes = Buffer.from(VALUE);
    const fromBuffer = reducedDeadLetterMessage(letter({ value: bytes }), true);
    expect(text(fromBuffer.headers, DLQ_HEADERS.valueSha256)).toBe(createHash('sha256').update(bytes).digest('hex'));
  });

  it('a null value is described as empty', () => {
    const m = reducedDeadLetterMessage(letter({ value: null }), true);
    expect(text(m.headers, DLQ_HEADERS.valueSize)).toBe('0');
    expect(text(m.headers, DLQ_HEADERS.valueSha256)).toBe(createHash('sha256').update(Buffer.alloc(0)).digest('hex'));
  });

  it('too-large replaces a validated-event form: the value is gone either way', () => {
    const m = reducedDeadLetterMessage(letter({ valueForm: 'validated-event', stage: 'workflow' }), true);
    expect(text(m.headers, DLQ_HEADERS.valueForm)).toBe('too-large');
  });

  it('keeps the contract headers, with the identity still read from the original value', () => {
    const m = reducedDeadLetterMessage(letter(), true);
    expect(text(m.headers, DLQ_HEADERS.eventId)).toBe('evt-1');
    expect(text(m.headers, DLQ_HEADERS.tenantId)).toBe('acme');
    expect(text(m.headers, DLQ_HEADERS.correlationId)).toBe('corr-body');
    expect(text(m.headers, DLQ_HEADERS.topic)).toBe('orders');
    expect(text(m.headers, DLQ_HEADERS.partition)).toBe('3');
    expect(text(m.headers, DLQ_HEADERS.offset)).toBe('1234');
    expect(text(m.headers, DLQ_HEADERS.group)).toBe('fulfilment-bridge');
    expect(text(m.headers, DLQ_HEADERS.stage)).toBe('edge');
  });

  it('keeps small original headers, without the omitted flag', () => {
    const m = reducedDeadLetterMessage(letter(), true);
    expect(m.headers!['traceparent']).toBe('00-abc-def-01');
    expect(text(m.headers, 'correlation-id')).toBe('corr-header');
    expect(m.headers![DLQ_HEADERS.headersOmitted]).toBeUndefined();
  });

  it('drops original headers larger than 16 KiB in total and flags dlq-original-headers-omitted', () => {
    // Counted as name plus value bytes: exactly 16 KiB is kept, one byte more is not.
    const atLimit = { big: 'x'.repeat(16 * 1024 - 3) };
    const kept = reducedDeadLetterMessage(letter({ headers: atLimit }), true);
    expect(kept.headers!['big']).toBe(atLimit.big);
    expect(kept.headers![DLQ_HEADERS.headersOmitted]).toBeUndefined();

    const over = { big: 'x'.repeat(16 * 1024 - 2), traceparent: 't' };
    const dropped = reducedDeadLetterMessage(letter({ headers: over }), true);
    expect(dropped.headers!['big']).toBeUndefined();
    expect(dropped.headers!['traceparent']).toBeUndefined();
    expect(text(dropped.headers, DLQ_HEADERS.headersOmitted)).toBe('true');

    // Many small headers add up, including every value of a repeated header.
    const many = { multi: Array.from({ length: 40 }, () => Buffer.alloc(500, 'a')) };
    const droppedMany = reducedDeadLetterMessage(letter({ headers: many }), true);
    expect(droppedMany.headers!['multi']).toBeUndefined();
    expect(text(droppedMany.headers, DLQ_HEADERS.headersOmitted)).toBe('true');
  });

  it('without keepHeaders drops the original headers whatever their size, and flags it', () => {
    const m = reducedDeadLetterMessage(letter(), false);
    expect(m.headers!['traceparent']).toBeUndefined();
    expect(m.headers!['correlation-id']).toBeUndefined();
    expect(text(m.headers, DLQ_HEADERS.headersOmitted)).toBe('true');
    // The correlation id the dropped header carried survives as a contract header.
    expect(text(reducedDeadLetterMessage(letter({ value: '{}' }), false).headers, DLQ_HEADERS.correlationId)).toBe(
      'corr-header',
    );
  });

  it('a record that had no headers is not flagged as having lost any', () => {
    for (const headers of [undefined, {}]) {
      expect(reducedDeadLetterMessage(letter({ headers }), false).headers![DLQ_HEADERS.headersOmitted]).toBeUndefined();
      expect(reducedDeadLetterMessage(letter({ headers }), true).headers![DLQ_HEADERS.headersOmitted]).toBeUndefined();
    }
  });

  it('caps the error message at 500 characters', () => {
    const m = reducedDeadLetterMessage(letter({ error: { name: 'Error', message: 'é'.repeat(3000) } }), true);
    expect(text(m.headers, DLQ_HEADERS.errorMessage)).toBe('é'.repeat(500));
  });
});

/**
 * A hand-written sender (the one method publishDeadLetter uses) whose every send is answered by the next entry of
 * `answers`: an error to throw, or undefined for an acknowledged write.
 */
function fakeSender(answers: (Error | undefined)[]) {
  const sent: { topic: string; records: Written[] }[] = [];
  const sender: Sender = {
    send: async (topic: string, records: Written[]) => {
      sent.push({ topic, records });
      if (answers.length === 0) throw new Error('fake sender: unexpected send');
      const answer = answers.shift();
      if (answer) throw answer;
    },
  };
  return { sender, sent, message: (i: number): Written => sent[i]!.records[0]! };
}

/** An error shaped like a kafkajs protocol error. */
const kafkaError = (type: string, message = `broker says ${type}`) =>
  Object.assign(new Error(message), { type, retriable: false });

describe('publishDeadLetter', () => {
  it('writes the dead letter whole, as one record, to the DLQ topic', async () => {
    const fake = fakeSender([undefined]);
    const d = letter();
    await expect(publishDeadLetter(fake.sender, 'orders.fulfilment.dlq', d)).resolves.toBe('whole');
    expect(fake.sent).toHaveLength(1);
    expect(fake.sent[0]!.topic).toBe('orders.fulfilment.dlq');
    expect(fake.sent[0]!.records).toEqual([deadLetterMessage(d)]);
  });

  it('a record the broker refuses as too large is written again without its value (original headers kept)', async () => {
    const fake = fakeSender([kafkaError('MESSAGE_TOO_LARGE'), undefined]);
    const d = letter();
    await expect(publishDeadLetter(fake.sender, 'dlq', d)).resolves.toBe('value-omitted');
    expect(fake.sent).toHaveLength(2);
    expect(fake.message(1)).toEqual(reducedDeadLetterMessage(d, true));
    expect(fake.message(1).value).toBeNull();
    expect(fake.message(1).headers!['traceparent']).toBe('00-abc-def-01');
    expect(fake.sent[1]!.topic).toBe('dlq');
    expect(fake.sent[1]!.records).toHaveLength(1);
  });

  it('recognises the refusal when kafkajs wraps it (as cause, or as originalError after retries)', async () => {
    const wrapped = new Error('retries exhausted', { cause: kafkaError('MESSAGE_TOO_LARGE') });
    const viaOriginal = Object.assign(new Error('KafkaJSNumberOfRetriesExceeded'), {
      originalError: kafkaError('RECORD_LIST_TOO_LARGE'),
    });
    for (const error of [wrapped, viaOriginal]) {
      const fake = fakeSender([error, undefined]);
      await expect(publishDeadLetter(fake.sender, 'dlq', letter())).resolves.toBe('value-omitted');
    }
  });

  it.each(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'POLICY_VIOLATION'])(
    'a %s refusal is met by reducing the dead letter, never by retrying it as it was',
    async (type) => {
      const fake = fakeSender([kafkaError(type), undefined]);
      await expect(publishDeadLetter(fake.sender, 'dlq', letter())).resolves.toBe('value-omitted');
      expect(fake.message(1).value).toBeNull();
    },
  );

  it('if the reduced form is refused too, it is written without the original headers as well', async () => {
    const fake = fakeSender([kafkaError('MESSAGE_TOO_LARGE'), kafkaError('MESSAGE_TOO_LARGE'), undefined]);
    const d = letter();
    await expect(publishDeadLetter(fake.sender, 'dlq', d)).resolves.toBe('value-and-headers-omitted');
    expect(fake.sent).toHaveLength(3);
    expect(fake.message(2)).toEqual(reducedDeadLetterMessage(d, false));
    expect(fake.message(2).headers!['traceparent']).toBeUndefined();
    expect(text(fake.message(2).headers, DLQ_HEADERS.headersOmitted)).toBe('true');
  });

  it('refused three times: a DependencyUnavailableError naming the topic (retried with backoff, never lost)', async () => {
    const fake = fakeSender([
      kafkaError('MESSAGE_TOO_LARGE'),
      kafkaError('MESSAGE_TOO_LARGE'),
      kafkaError('MESSAGE_TOO_LARGE'),
    ]);
    const error = await publishDeadLetter(fake.sender, 'orders.fulfilment.dlq', letter()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DependencyUnavailableError);
    expect(error).toBeInstanceOf(TransientError);
    expect((error as Error).message).toContain('orders.fulfilment.dlq');
    expect((error as Error).message).toContain('MESSAGE_TOO_LARGE');
    expect(fake.sent).toHaveLength(3);
  });

  it('any other failure is a DependencyUnavailableError at once, carrying the cause; nothing reduced is tried', async () => {
    const failures = [
      new Error('Connection error: connect ECONNREFUSED 127.0.0.1:19092'),
      kafkaError('NOT_LEADER_FOR_PARTITION'),
      kafkaError('REQUEST_TIMED_OUT'),
      Object.assign(new Error('odd'), { type: 42 }),
    ];
    for (const failure of failures) {
      const fake = fakeSender([failure]);
      const error = await publishDeadLetter(fake.sender, 'dlq', letter()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DependencyUnavailableError);
      expect((error as Error).cause).toBe(failure);
      expect((error as Error).message).toContain(failure.message);
      expect(fake.sent).toHaveLength(1);
    }
  });

  it('a transient failure while writing the reduced form is a DependencyUnavailableError too', async () => {
    const outage = new Error('Connection error');
    const fake = fakeSender([kafkaError('MESSAGE_TOO_LARGE'), outage]);
    const error = await publishDeadLetter(fake.sender, 'dlq', letter()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DependencyUnavailableError);
    expect((error as Error).cause).toBe(outage);
    expect(fake.sent).toHaveLength(2);
  });
});

describe('a dead letter never blocks its partition', () => {
  /** Bytes a record puts on the wire, roughly: key, value, and every header name and value. */
  const recordBytes = (r: Written) => {
    let n = (r.key == null ? 0 : Buffer.byteLength(r.key)) + (r.value === null ? 0 : Buffer.byteLength(r.value));
    for (const [k, v] of Object.entries(r.headers ?? {}))
      for (const part of Array.isArray(v) ? v : [v])
        n += Buffer.byteLength(k) + (part === undefined ? 0 : Buffer.byteLength(part));
    return n;
  };

  /** A DLQ topic whose max.message.bytes is `limit`: anything larger is refused as the broker does. */
  function boundedTopic(limit: number) {
    const sizes: number[] = [];
    const sender: Sender = {
      send: async (_topic: string, records: Written[]) => {
        for (const r of records) {
          sizes.push(recordBytes(r));
          if (recordBytes(r) > limit) throw kafkaError('MESSAGE_TOO_LARGE');
        }
      },
    };
    return { sender, sizes };
  }

  it('a huge value is written without it to a topic that holds far less than the record', async () => {
    const topic = boundedTopic(64 * 1024);
    const d = letter({ value: Buffer.alloc(5 * 1024 * 1024, 0x41) });
    await expect(publishDeadLetter(topic.sender, 'dlq', d)).resolves.toBe('value-omitted');
    expect(topic.sizes[1]!).toBeLessThan(4 * 1024);
  });

  it('huge original headers are dropped so the dead letter fits', async () => {
    const topic = boundedTopic(64 * 1024);
    const d = letter({ headers: { 'x-trace-blob': Buffer.alloc(200 * 1024, 0x42), traceparent: 't' } });
    await expect(publishDeadLetter(topic.sender, 'dlq', d)).resolves.toBe('value-omitted');
    expect(topic.sizes.at(-1)!).toBeLessThan(4 * 1024);
  });

  // The identity headers are capped whatever their source: an oversized correlation-id header (refused at the edge)
  // must not follow the dead letter into its reduced forms, or a DLQ topic that cannot hold it would refuse them all.
  it('an oversized correlation-id header does not follow the dead letter into its reduced form', async () => {
    const topic = boundedTopic(64 * 1024);
    const d = letter({
      value: Buffer.from('{"eventId":"evt-1","tenantId":"acme"}'),
      headers: { 'correlation-id': 'c'.repeat(100 * 1024) },
    });
    await expect(publishDeadLetter(topic.sender, 'dlq', d)).resolves.toBe('value-omitted');
    expect(topic.sizes.at(-1)!).toBeLessThan(4 * 1024);
  });
});

describe('kafkaErrorType', () => {
  it('finds the protocol error type on the error itself or down its cause chain', () => {
    expect(kafkaErrorType(kafkaError('MESSAGE_TOO_LARGE'))).toBe('MESSAGE_TOO_LARGE');
    expect(kafkaErrorType(new Error('outer', { cause: kafkaError('INVALID_RECORD') }))).toBe('INVALID_RECORD');
    expect(kafkaErrorType(new Error('a', { cause: new Error('b', { cause: kafkaError('POLICY_VIOLATION') }) }))).toBe(
      'POLICY_VIOLATION',
    );
    expect(
      kafkaErrorType(Object.assign(new Error('retries'), { originalError: kafkaError('RECORD_LIST_TOO_LARGE') })),
    ).toBe('RECORD_LIST_TOO_LARGE');
    expect(kafkaErrorType({ type: 'PLAIN_OBJECT' })).toBe('PLAIN_OBJECT');
  });

  it('the outermost type wins', () => {
    const inner = kafkaError('MESSAGE_TOO_LARGE');
    expect(kafkaErrorType(Object.assign(new Error('outer', { cause: inner }), { type: 'REQUEST_TIMED_OUT' }))).toBe(
      'REQUEST_TIMED_OUT',
    );
  });

  it('is undefined for errors without one, non-string types, and anything that is not an error', () => {
    expect(kafkaErrorType(new Error('plain'))).toBeUndefined();
    expect(kafkaErrorType(new Error('outer', { cause: new Error('inner') }))).toBeUndefined();
    expect(kafkaErrorType(Object.assign(new Error('numeric'), { type: 10 }))).toBeUndefined();
    for (const v of [undefined, null, 0, '', 'MESSAGE_TOO_LARGE', 42]) expect(kafkaErrorType(v)).toBeUndefined();
  });

  it('ends on a cyclic cause chain', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(kafkaErrorType(a)).toBeUndefined();
  });
});
