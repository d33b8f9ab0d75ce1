/**
 * Parses and validates one Kafka record into an order event — the trust boundary. A tolerant reader:
 * unknown fields are dropped (and reported, so they can be counted), unknown event types are reported as such
 * (never an error), and anything else that is not a valid event throws MalformedEventError naming the field and
 * what was expected. Whatever passes here can be stored (PostgreSQL text, jsonb, integer) and sent (HTTP headers,
 * JSON bodies) without failing for its data alone; whatever the bytes, the only error thrown is MalformedEventError.
 *
 * Schema versions: a record of a handled type is read by its `schemaVersion` first — validated with that version's
 * schema (schema-v1.ts, schema-v2.ts, …, every one built from the shared rules in rules.ts) and upcast to the
 * internal model (upcast.ts); the versions known are listed in versions.ts. Any other version is malformed.
 * Lengths are counted in UTF-16 code units ("characters"), as JavaScript strings count them.
 */
import type { z } from 'zod';
import { MalformedEventError } from '../../base/errors.js';
import { headerString } from '../kafka/records.js';
import {
  ORDER_PLACED,
  isOrderEventType,
  type OrderEvent,
  type EventOrigin,
  type OrderEventType,
} from '../../vocabulary/order.js';
import {
  TOKEN_EXPECTED,
  cap,
  describe,
  isPlainObject,
  isSafeToken,
  printable,
  quote,
  sanitize,
  sanitizeName,
} from './rules.js';
import { SCHEMA_VERSIONS, SUPPORTED_SCHEMA_VERSIONS, type SchemaVersion } from './versions.js';

export {
  ADDRESS_LIMITS,
  MAX_ORDER_VERSION,
  SAFE_TOKEN_PATTERN,
  isRfc3339Instant,
  isSafeText,
  isSafeToken,
  isWellFormed,
} from './rules.js';
export { SUPPORTED_SCHEMA_VERSIONS } from './versions.js';

/** Largest record value accepted, bytes. Anything larger is malformed (Temporal payloads are capped too). */
export const MAX_VALUE_BYTES = 256 * 1024;

/** Deepest nesting of objects and arrays accepted in a record value; the value object itself is level 1. */
export const MAX_NESTING_DEPTH = 32;

/** At most this many unknown field names are reported per record; the rest are dropped unreported. */
export const MAX_UNKNOWN_FIELDS = 20;

/** Longest unknown field name reported, characters (a `data.` field's prefix included). */
export const MAX_UNKNOWN_FIELD_LENGTH = 64;

/** Longest error message produced, characters. */
const MAX_MESSAGE_LENGTH = 1000;

export type ParsedRecord =
  /**
   * `unknownFields`: the top-level and `data` fields the record's version does not define, dropped — `extra`,
   * `data.extra` — when there are any: at most MAX_UNKNOWN_FIELDS distinct names of at most
   * MAX_UNKNOWN_FIELD_LENGTH characters, control and format characters and unpaired surrogates replaced by U+FFFD.
   */
  | { kind: 'order-event'; event: OrderEvent; unknownFields?: string[] }
  /** A type this consumer does not handle: ignore and count, never an error. Strings are sanitised and capped. */
  | { kind: 'unknown-type'; type: string; eventId?: string; tenantId?: string };

export interface RawRecord {
  value: Buffer | null;
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
  origin?: EventOrigin;
}

export function parseRecord(record: RawRecord): ParsedRecord {
  try {
    return parseUnchecked(record);
  } catch (err) {
    if (err instanceof MalformedEventError) throw err;
    throw malformed(
      `record could not be validated (${errorSummary(err)}): expected a JSON object that is an order event`,
      '',
    );
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

const TYPE_EXPECTED = `a non-empty event type name such as ${ORDER_PLACED}`;
const SUPPORTED = `supported schema versions: ${SUPPORTED_SCHEMA_VERSIONS.join(', ')}`;

function parseUnchecked(record: RawRecord): ParsedRecord {
  const obj = decodeValue(record.value);
  const unknown = unknownType(obj);
  if (unknown) return unknown;
  const type = handledType(obj);
  const version = schemaVersionOf(obj);
  const { correlationId: bodyCorrelationId, ...model } = version.read(obj, type, check);
  const correlationId = bodyCorrelationId ?? headerCorrelationId(record.headers);
  const event: OrderEvent = {
    ...model,
    schemaVersion: version.version,
    ...(correlationId !== undefined ? { correlationId } : {}),
    ...(record.origin ? { origin: record.origin } : {}),
  };
  const unknownFields = unknownFieldsOf(obj, version, type);
  return { kind: 'order-event', event, ...(unknownFields.length > 0 ? { unknownFields } : {}) };
}

/** The record value as a JSON object of at most MAX_NESTING_DEPTH levels. */
function decodeValue(value: Buffer | null): Record<string, unknown> {
  if (value === null || value.length === 0) throw malformed('record has an empty value: expected a JSON object', '');
  if (value.length > MAX_VALUE_BYTES) {
    throw malformed(`record value is ${value.length} bytes: expected at most ${MAX_VALUE_BYTES}`, '');
  }
  const decoded = value.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(decoded);
  } catch (err) {
    throw malformed(`record value is not JSON (${errorSummary(err, false)}): expected a JSON object`, '');
  }
  if (!isPlainObject(json)) {
    throw malformed(
      `record value is ${Array.isArray(json) ? 'an array' : json === null ? 'null' : typeof json}: expected a JSON object`,
      '',
    );
  }
  const depth = nestingDepth(json);
  if (depth > MAX_NESTING_DEPTH)
    throw malformed(`record value nests ${depth} levels deep: expected at most ${MAX_NESTING_DEPTH}`, '');
  return json;
}

/** Levels of objects and arrays in a JSON value (a scalar is 0), walked without recursion. */
function nestingDepth(root: unknown): number {
  let deepest = 0;
  const stack: { value: unknown; level: number }[] = [{ value: root, level: 1 }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    if (typeof item.value !== 'object' || item.value === null) continue;
    deepest = Math.max(deepest, item.level);
    for (const child of Object.values(item.value)) {
      if (typeof child === 'object' && child !== null) stack.push({ value: child, level: item.level + 1 });
    }
  }
  return deepest;
}

/**
 * An unknown-type result when `type` names an event this service does not handle, whatever its schemaVersion:
 * versions are the contract of the types this service reads, and another type's versioning is not its business.
 */
function unknownType(obj: Record<string, unknown>): ParsedRecord | undefined {
  const { type } = obj;
  if (typeof type !== 'string' || type === '' || isOrderEventType(type)) return undefined;
  return {
    kind: 'unknown-type',
    type: sanitize(type, 200),
    eventId: typeof obj.eventId === 'string' ? sanitize(obj.eventId, 128) : undefined,
    tenantId: typeof obj.tenantId === 'string' ? sanitize(obj.tenantId, 64) : undefined,
  };
}

/** The record's type once unknownType has passed it: a handled type, or malformed. */
function handledType(obj: Record<string, unknown>): OrderEventType {
  const { type } = obj;
  if (isOrderEventType(type)) return type;
  if (type === undefined) return fail('field type: is required', 'type');
  return fail(`field type: expected ${TYPE_EXPECTED}, got ${describe(type)}`, 'type');
}

/** The version `schemaVersion` names, read before any other field; missing, not an integer ≥ 1, or unknown is malformed. */
function schemaVersionOf(obj: Record<string, unknown>): SchemaVersion {
  const v = obj.schemaVersion;
  if (v === undefined) return fail(`field schemaVersion: is required (${SUPPORTED})`, 'schemaVersion');
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
    return fail(`field schemaVersion: expected an integer ≥ 1 (${SUPPORTED}), got ${describe(v)}`, 'schemaVersion');
  }
  return (
    SCHEMA_VERSIONS.get(v) ?? fail(`field schemaVersion: version ${v} is not supported (${SUPPORTED})`, 'schemaVersion')
  );
}

/**
 * The top-level and `data` fields of `obj` its version does not define (dropped by the schema), as reported names:
 * `extra`, `data.extra`; distinct, at most MAX_UNKNOWN_FIELDS, each sanitised and capped.
 */
function unknownFieldsOf(obj: Record<string, unknown>, version: SchemaVersion, type: OrderEventType): string[] {
  const names = new Set<string>();
  const report = (keys: string[], known: ReadonlySet<string>, prefix: string) => {
    for (const key of keys) {
      if (names.size >= MAX_UNKNOWN_FIELDS) return;
      if (!known.has(key))
        names.add(sanitizeName(`${prefix}${key === '' ? '(empty)' : key}`, MAX_UNKNOWN_FIELD_LENGTH));
    }
  };
  report(Object.keys(obj), version.fields.top, '');
  if (isPlainObject(obj.data)) report(Object.keys(obj.data), version.fields.data[type], 'data.');
  return [...names];
}

/** The `correlation-id` header when present; an unsafe value is malformed, never normalised. */
function headerCorrelationId(headers: RawRecord['headers']): string | undefined {
  const value = headerString(headers, 'correlation-id');
  if (value === undefined || isSafeToken(value)) return value;
  throw malformed(`header correlation-id: expected ${TOKEN_EXPECTED}, got ${describe(value)}`, 'header correlation-id');
}

function check<T extends z.ZodTypeAny>(schema: T, input: Record<string, unknown>): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw malformed('record value does not match the order event schema', '');
  const field = renderPath(issue.path);
  const name = field || '(root)';
  if (issue.code === 'invalid_type' && issue.received === 'undefined') return fail(`field ${name}: is required`, field);
  const got =
    issue.code === 'custom' && typeof issue.params?.got === 'string'
      ? issue.params.got
      : describe(valueAt(input, issue.path));
  return fail(`field ${name}: expected ${issue.message}, got ${got}`, field);
}

function fail(message: string, field: string): never {
  throw malformed(message, field);
}

/** A MalformedEventError whose message and field are printable, well-formed and capped. */
function malformed(message: string, field: string): MalformedEventError {
  return new MalformedEventError(cap(printable(message), MAX_MESSAGE_LENGTH), cap(printable(field), 200));
}

/** A dotted path such as `data.lines[0].sku`; keys that are not identifiers are quoted: `data.shippingAddress["a b"]`. */
function renderPath(path: (string | number)[]): string {
  return path
    .map((p, i) =>
      typeof p === 'number'
        ? `[${p}]`
        : IDENTIFIER.test(p) && p.length <= 64
          ? `${i === 0 ? '' : '.'}${p}`
          : `[${quote(p, 40)}]`,
    )
    .join('');
}

function valueAt(input: unknown, path: (string | number)[]): unknown {
  let v = input;
  for (const key of path)
    v = typeof v === 'object' && v !== null ? (v as Record<string | number, unknown>)[key] : undefined;
  return v;
}

function errorSummary(err: unknown, withName = true): string {
  try {
    if (!(err instanceof Error)) return typeof err;
    return cap(withName ? `${err.name}: ${err.message}` : err.message, 200);
  } catch {
    return 'unknown error';
  }
}
