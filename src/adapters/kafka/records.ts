/**
 * The Kafka port's own vocabulary: records as the service reads and writes them, and the errors a client
 * reports that the service acts on. Nothing outside src/adapters/kafka/ imports the Kafka client library; a client swap
 * touches this folder only.
 */

/** Record headers: each value bytes or text, possibly repeated. */
export type RecordHeaders = Record<string, Buffer | string | (Buffer | string)[] | undefined>;

/** The first value of header `name` as text (a repeated header's first; bytes read as UTF-8); undefined when absent. */
export function headerString(headers: RecordHeaders | undefined, name: string): string | undefined {
  const raw = headers?.[name];
  const first: unknown = Array.isArray(raw) ? raw[0] : raw;
  if (typeof first === 'string') return first;
  return first instanceof Uint8Array
    ? Buffer.from(first.buffer, first.byteOffset, first.byteLength).toString('utf8')
    : undefined;
}

/** A record as fetched from a partition. */
export interface ConsumedRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers?: RecordHeaders;
  offset: string;
  /** Broker timestamp, epoch milliseconds as a string. */
  timestamp: string;
}

/** A record to write. */
export interface OutgoingRecord {
  key?: Buffer | string | null;
  value: Buffer | string | null;
  headers?: RecordHeaders;
  partition?: number;
}

/** Where a record was written. */
export interface RecordPosition {
  topic: string;
  partition: number;
  offset: string;
}

/** Writes records, each send acknowledged by all in-sync replicas before it resolves. */
export interface RecordSender {
  send(topic: string, records: OutgoingRecord[]): Promise<void>;
}

/** Thrown by a batch's commit or heartbeat when this member's generation is over: its partitions may be another's. */
export class MembershipLost extends Error {
  override name = 'MembershipLost';
}

/** The broker's error type name (e.g. `MESSAGE_TOO_LARGE`) anywhere in the cause chain, if the error carries one. */
export function kafkaErrorType(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e; i += 1) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string') return type;
    e = (e as { cause?: unknown }).cause ?? (e as { originalError?: unknown }).originalError;
  }
  return undefined;
}

/** Whether `err` was raised by the Kafka client library itself (its messages say what failed, not where). */
export function isKafkaClientError(err: unknown): err is Error {
  return err instanceof Error && err.name.startsWith('KafkaJS');
}
