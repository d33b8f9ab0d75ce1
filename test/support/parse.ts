/** Parser helpers for the envelope's unit tests: parse a value (an object is serialised), expect a verdict. */
import { expect } from 'vitest';
import { MalformedEventError } from '../../src/base/errors.js';
import { parseRecord, type ParsedRecord, type RawRecord } from '../../src/adapters/events/envelope.js';

export type KafkaHeaders = RawRecord['headers'];

export const parse = (v: unknown, headers?: KafkaHeaders): ParsedRecord =>
  parseRecord({ value: Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)), headers });

/** The order event `v` parses into; throws when it is anything else. */
export function acceptedRecord(v: unknown, headers?: KafkaHeaders): Extract<ParsedRecord, { kind: 'order-event' }> {
  const r = parse(v, headers);
  if (r.kind !== 'order-event') throw new Error(`expected an order event, got ${r.kind}`);
  return r;
}

/** The MalformedEventError `v` is refused with; fails the test when it is accepted or throws anything else. */
export function failure(v: unknown, headers?: KafkaHeaders): MalformedEventError {
  try {
    parse(v, headers);
  } catch (err) {
    expect(err).toBeInstanceOf(MalformedEventError);
    return err as MalformedEventError;
  }
  throw new Error('expected a MalformedEventError');
}
