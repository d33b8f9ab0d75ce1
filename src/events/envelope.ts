/**
 * Parses and validates one Kafka record into an order event — the trust boundary. A tolerant reader:
 * unknown fields are dropped, unknown event types are reported as such (never an error), and anything
 * else that is not a valid event throws MalformedEventError naming the field and what was expected.
 */
import { z } from 'zod';
import { MalformedEventError } from '../errors.js';
import { ID_PATTERN, ORDER_CANCELLED, ORDER_PLACED, type OrderEvent, type EventOrigin } from '../../workflows/api.js';

/** Largest record value accepted, bytes. Anything larger is malformed (Temporal payloads are capped too). */
export const MAX_VALUE_BYTES = 256 * 1024;

const id = z
  .string({ invalid_type_error: 'a string' })
  .regex(ID_PATTERN, 'an id of 1–64 letters, digits, ".", "_", ":" or "-" starting with a letter or digit');

const base = z.object({
  eventId: z.string({ invalid_type_error: 'a string' }).min(1, 'a non-empty string').max(128, 'at most 128 characters'),
  type: z.string({ invalid_type_error: 'a string' }).min(1, 'a non-empty string'),
  schemaVersion: z.number({ invalid_type_error: 'an integer ≥ 1' }).int('an integer ≥ 1').min(1, 'an integer ≥ 1'),
  occurredAt: z.string({ invalid_type_error: 'an RFC 3339 timestamp' }).datetime({ offset: true, message: 'an RFC 3339 timestamp such as 2026-01-31T12:00:00Z' }),
  tenantId: id,
  orderId: id,
  orderVersion: z.number({ invalid_type_error: 'an integer ≥ 1' }).int('an integer ≥ 1').min(1, 'an integer ≥ 1'),
  correlationId: z.string({ invalid_type_error: 'a string' }).max(200, 'at most 200 characters').optional(),
});

const placedData = z.object({
  customerId: z.string({ invalid_type_error: 'a string' }).min(1, 'a non-empty string').max(128, 'at most 128 characters'),
  lines: z
    .array(
      z.object({
        sku: z.string({ invalid_type_error: 'a string' }).min(1, 'a non-empty string').max(64, 'at most 64 characters'),
        quantity: z.number({ invalid_type_error: 'an integer ≥ 1' }).int('an integer ≥ 1').min(1, 'an integer ≥ 1').max(100_000, 'at most 100000'),
      }),
      { invalid_type_error: 'an array of {sku, quantity}' },
    )
    .min(1, 'at least one line')
    .max(1000, 'at most 1000 lines'),
  shippingAddress: z.record(z.unknown(), { invalid_type_error: 'an object' }).optional(),
});

const cancelledData = z.object({
  reason: z.string({ invalid_type_error: 'a string' }).max(1000, 'at most 1000 characters').optional(),
});

const dataOf = (schema: z.ZodTypeAny) => z.object({ data: schema });

export type ParsedRecord =
  | { kind: 'order-event'; event: OrderEvent }
  /** A type this consumer does not handle: ignore and count, never an error. */
  | { kind: 'unknown-type'; type: string; eventId?: string; tenantId?: string };

export interface RawRecord {
  value: Buffer | null;
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
  origin?: EventOrigin;
}

export function headerString(headers: RawRecord['headers'], name: string): string | undefined {
  const raw = headers?.[name];
  const first = Array.isArray(raw) ? raw[0] : raw;
  return first === undefined ? undefined : first.toString();
}

export function parseRecord(record: RawRecord): ParsedRecord {
  const { value } = record;
  if (value === null || value.length === 0) throw new MalformedEventError('record has an empty value: expected a JSON object', '');
  if (value.length > MAX_VALUE_BYTES) {
    throw new MalformedEventError(`record value is ${value.length} bytes: expected at most ${MAX_VALUE_BYTES}`, '');
  }
  let json: unknown;
  try {
    json = JSON.parse(value.toString('utf8'));
  } catch (err) {
    throw new MalformedEventError(`record value is not JSON (${(err as Error).message}): expected a JSON object`, '');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new MalformedEventError(`record value is ${Array.isArray(json) ? 'an array' : typeof json}: expected a JSON object`, '');
  }
  const obj = json as Record<string, unknown>;
  if (typeof obj.type === 'string' && obj.type !== ORDER_PLACED && obj.type !== ORDER_CANCELLED) {
    return {
      kind: 'unknown-type',
      type: obj.type.slice(0, 200),
      eventId: typeof obj.eventId === 'string' ? obj.eventId.slice(0, 128) : undefined,
      tenantId: typeof obj.tenantId === 'string' ? obj.tenantId.slice(0, 64) : undefined,
    };
  }
  const envelope = check(base, obj, '');
  const data = check(dataOf(envelope.type === ORDER_PLACED ? placedData : cancelledData), obj, '');
  const correlationId = envelope.correlationId ?? headerString(record.headers, 'correlation-id')?.slice(0, 200);
  const event = {
    ...envelope,
    ...(correlationId ? { correlationId } : {}),
    data: data.data,
    ...(record.origin ? { origin: record.origin } : {}),
  } as OrderEvent;
  return { kind: 'order-event', event };
}

function check<T extends z.ZodTypeAny>(schema: T, input: unknown, prefix: string): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = [prefix, ...issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`))].join('').replace(/^\./, '').replace(/\.\[/g, '[');
  const got = describe(issue.path.reduce<unknown>((v, k) => (v as Record<string | number, unknown> | undefined)?.[k], input));
  const expected = issue.code === 'invalid_type' && issue.received === 'undefined' ? 'required' : issue.message;
  throw new MalformedEventError(`field ${field || '(root)'}: ${expected === 'required' ? 'is required' : `expected ${expected}, got ${got}`}`, field);
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s === undefined ? typeof v : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
