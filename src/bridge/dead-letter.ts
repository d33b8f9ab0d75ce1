/**
 * Dead-lettering: the original key and value bytes untouched, the original headers kept, plus `dlq-*`
 * headers saying what failed, where the record came from and who it belonged to (when that could be read).
 * At-least-once like everything else: the source offset is committed only after the DLQ write is acknowledged.
 */
import type { IHeaders, KafkaMessage, Producer } from 'kafkajs';
import { headerString } from '../events/envelope.js';

export interface DeadLetter {
  message: KafkaMessage;
  topic: string;
  partition: number;
  group: string;
  error: Error;
  attempts: number;
  firstFailureAt: Date;
  lastFailureAt: Date;
}

/** Header names of the DLQ contract (DESIGN.md §2). */
export const DLQ_HEADERS = {
  errorClass: 'dlq-error-class',
  errorMessage: 'dlq-error-message',
  topic: 'dlq-original-topic',
  partition: 'dlq-original-partition',
  offset: 'dlq-original-offset',
  timestamp: 'dlq-original-timestamp',
  group: 'dlq-consumer-group',
  attempts: 'dlq-attempts',
  firstFailure: 'dlq-first-failure-at',
  lastFailure: 'dlq-last-failure-at',
  eventId: 'dlq-event-id',
  tenantId: 'dlq-tenant-id',
  correlationId: 'dlq-correlation-id',
} as const;

/** Best-effort read of identifying fields from a value that failed validation; never throws. */
function identify(value: Buffer | null): { eventId?: string; tenantId?: string; correlationId?: string } {
  if (!value || value.length === 0 || value.length > 1024 * 1024) return {};
  try {
    const obj = JSON.parse(value.toString('utf8')) as Record<string, unknown>;
    const pick = (k: string) => (typeof obj?.[k] === 'string' ? (obj[k] as string).slice(0, 200) : undefined);
    return { eventId: pick('eventId'), tenantId: pick('tenantId'), correlationId: pick('correlationId') };
  } catch {
    return {};
  }
}

export function deadLetterHeaders(d: DeadLetter): IHeaders {
  const ids = identify(d.message.value);
  const correlationId = ids.correlationId ?? headerString(d.message.headers, 'correlation-id');
  const headers: IHeaders = {
    ...(d.message.headers ?? {}),
    [DLQ_HEADERS.errorClass]: d.error.name,
    // Messages only, no stack: the DLQ is read by people and tools, not debuggers.
    [DLQ_HEADERS.errorMessage]: d.error.message.slice(0, 2000),
    [DLQ_HEADERS.topic]: d.topic,
    [DLQ_HEADERS.partition]: String(d.partition),
    [DLQ_HEADERS.offset]: d.message.offset,
    [DLQ_HEADERS.timestamp]: d.message.timestamp,
    [DLQ_HEADERS.group]: d.group,
    [DLQ_HEADERS.attempts]: String(d.attempts),
    [DLQ_HEADERS.firstFailure]: d.firstFailureAt.toISOString(),
    [DLQ_HEADERS.lastFailure]: d.lastFailureAt.toISOString(),
  };
  if (ids.eventId) headers[DLQ_HEADERS.eventId] = ids.eventId;
  if (ids.tenantId) headers[DLQ_HEADERS.tenantId] = ids.tenantId;
  if (correlationId) headers[DLQ_HEADERS.correlationId] = correlationId;
  return headers;
}

export async function sendToDeadLetter(producer: Producer, dlqTopic: string, d: DeadLetter): Promise<void> {
  await producer.send({
    topic: dlqTopic,
    acks: -1,
    messages: [{ key: d.message.key, value: d.message.value, headers: deadLetterHeaders(d) }],
  });
}
