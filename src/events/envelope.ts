/**
 * Parses and validates one Kafka record into an order event — the trust boundary. A tolerant reader:
 * unknown fields are dropped, unknown event types are reported as such (never an error), and anything
 * else that is not a valid event throws MalformedEventError naming the field and what was expected.
 * Whatever passes here can be stored (PostgreSQL text, jsonb, integer) and sent (HTTP headers, JSON bodies)
 * without failing for its data alone; whatever the bytes, the only error thrown is MalformedEventError.
 * Lengths are counted in UTF-16 code units ("characters"), as JavaScript strings count them.
 */
import { z } from 'zod';
import { MalformedEventError } from '../errors.js';
import { ID_PATTERN, ORDER_CANCELLED, ORDER_PLACED, type OrderEvent, type EventOrigin } from '../../workflows/api.js';

/** Largest record value accepted, bytes. Anything larger is malformed (Temporal payloads are capped too). */
export const MAX_VALUE_BYTES = 256 * 1024;

/** Deepest nesting of objects and arrays accepted in a record value; the value object itself is level 1. */
export const MAX_NESTING_DEPTH = 32;

/** Largest order version the store's `integer` column holds. */
export const MAX_ORDER_VERSION = 2_147_483_647;

/** The only schema version this service understands. */
export const SUPPORTED_SCHEMA_VERSION = 1;

/**
 * A safe token: 1–200 visible ASCII characters (0x21–0x7E). Always a valid HTTP header value, and one that
 * header handling (undici trims spaces and tabs) never changes.
 */
export const SAFE_TOKEN_PATTERN = /^[\x21-\x7e]{1,200}$/;

/** Limits of the free-form shipping address. Levels count objects and arrays, the address itself being level 1. */
export const ADDRESS_LIMITS = { levels: 4, entries: 64, bytes: 8192, keyLength: 64, stringLength: 1000 } as const;

/** Longest error message produced, characters. */
const MAX_MESSAGE_LENGTH = 1000;

/** Longest quoted value in an error message, characters. */
const MAX_QUOTE_LENGTH = 60;

export type ParsedRecord =
  | { kind: 'order-event'; event: OrderEvent }
  /** A type this consumer does not handle: ignore and count, never an error. Strings are sanitised and capped. */
  | { kind: 'unknown-type'; type: string; eventId?: string; tenantId?: string };

export interface RawRecord {
  value: Buffer | null;
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
  origin?: EventOrigin;
}

/** True when `v` is a safe token (see SAFE_TOKEN_PATTERN). */
export function isSafeToken(v: unknown): v is string {
  return typeof v === 'string' && SAFE_TOKEN_PATTERN.test(v);
}

/** True when `s` is well-formed UTF-16: every surrogate is part of a pair. */
export function isWellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i += 1) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c > 0xdbff || !isLowSurrogate(s.charCodeAt(i + 1))) return false;
    i += 1;
  }
  return true;
}

/** True when `s` can be stored as PostgreSQL text/jsonb and encoded as UTF-8 unchanged: well-formed, no U+0000. */
export function isSafeText(s: string): boolean {
  return !s.includes('\u0000') && isWellFormed(s);
}

/**
 * True when `s` is an RFC 3339 instant: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, `t` and `z` in either case,
 * a real calendar date, hours 00–23, minutes and seconds 00–59 (the leap second 60 is refused), offsets up to
 * ±23:59, at most 9 fraction digits, and a finite `Date.parse`.
 */
export function isRfc3339Instant(s: string): boolean {
  const m = RFC3339.exec(s);
  if (!m) return false;
  const n = (i: number) => Number(m[i] ?? 0);
  const [year, month, day, hour, minute, second, offsetHour, offsetMinute] = [n(1), n(2), n(3), n(4), n(5), n(6), n(7), n(8)];
  return (
    month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) &&
    hour <= 23 && minute <= 59 && second <= 59 && offsetHour <= 23 && offsetMinute <= 59 &&
    Number.isFinite(Date.parse(s))
  );
}

export function headerString(headers: RawRecord['headers'], name: string): string | undefined {
  const raw = headers?.[name];
  const first: unknown = Array.isArray(raw) ? raw[0] : raw;
  if (typeof first === 'string') return first;
  return first instanceof Uint8Array ? Buffer.from(first.buffer, first.byteOffset, first.byteLength).toString('utf8') : undefined;
}

export function parseRecord(record: RawRecord): ParsedRecord {
  try {
    return parseUnchecked(record);
  } catch (err) {
    if (err instanceof MalformedEventError) throw err;
    throw malformed(`record could not be validated (${errorSummary(err)}): expected a JSON object that is an order event`, '');
  }
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

const TEXT_RULE = 'without NUL or unpaired surrogates';
const TOKEN_EXPECTED = 'a token of 1–200 visible ASCII characters (0x21–0x7E)';
const TYPE_EXPECTED = `a non-empty event type name such as ${ORDER_PLACED}`;
const SCHEMA_VERSION_EXPECTED = `the integer ${SUPPORTED_SCHEMA_VERSION} (supported schema versions: ${SUPPORTED_SCHEMA_VERSION})`;
const TIMESTAMP_EXPECTED =
  'an RFC 3339 timestamp such as 2026-01-31T12:00:00Z (a real date and time, offset Z or ±HH:MM up to ±23:59, at most 9 fraction digits)';
const ID_EXPECTED = 'an id of 1–64 letters, digits, ".", "_", ":" or "-" starting with a letter or digit';

const span = (min: number, max: number) => (min === 0 ? `at most ${max}` : `${min}–${max}`);

/** A string of min..max characters that passes isSafeText. */
function text(min: number, max: number) {
  const expected = `a string of ${span(min, max)} characters ${TEXT_RULE}`;
  return z.string({ invalid_type_error: expected }).min(min, expected).max(max, expected).refine(isSafeText, expected);
}

/** An integer in min..max. */
function integer(min: number, max: number) {
  const expected = `an integer from ${min} to ${max}`;
  return z.number({ invalid_type_error: expected }).int(expected).min(min, expected).max(max, expected);
}

const id = z.string({ invalid_type_error: ID_EXPECTED }).regex(ID_PATTERN, ID_EXPECTED);

const base = z.object({
  eventId: text(1, 128),
  type: z.string({ invalid_type_error: TYPE_EXPECTED }).min(1, TYPE_EXPECTED),
  schemaVersion: z.number({ invalid_type_error: SCHEMA_VERSION_EXPECTED }).refine((v) => v === SUPPORTED_SCHEMA_VERSION, SCHEMA_VERSION_EXPECTED),
  occurredAt: z.string({ invalid_type_error: TIMESTAMP_EXPECTED }).refine(isRfc3339Instant, TIMESTAMP_EXPECTED),
  tenantId: id,
  orderId: id,
  orderVersion: integer(1, MAX_ORDER_VERSION),
  correlationId: z.string({ invalid_type_error: TOKEN_EXPECTED }).regex(SAFE_TOKEN_PATTERN, TOKEN_EXPECTED).optional(),
});

const LINE_EXPECTED = 'a line {sku, quantity}';
const LINES_EXPECTED = 'an array of 1–1000 lines {sku, quantity}';

const shippingAddress = z
  .custom<Record<string, unknown>>()
  .superRefine((value, ctx) => {
    const problem = addressProblem(value);
    if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem.expected, path: problem.path, params: { got: problem.got } });
  })
  .optional();

const placedData = z.object(
  {
    customerId: text(1, 128),
    lines: z
      .array(z.object({ sku: text(1, 64), quantity: integer(1, 100_000) }, { invalid_type_error: LINE_EXPECTED }), { invalid_type_error: LINES_EXPECTED })
      .min(1, LINES_EXPECTED)
      .max(1000, LINES_EXPECTED),
    shippingAddress,
  },
  { invalid_type_error: 'an object' },
);

const cancelledData = z.object({ reason: text(0, 1000).optional() }, { invalid_type_error: 'an object' });

const placedEnvelope = z.object({ data: placedData });
const cancelledEnvelope = z.object({ data: cancelledData });

function parseUnchecked(record: RawRecord): ParsedRecord {
  const obj = decodeValue(record.value);
  const unknown = unknownType(obj);
  if (unknown) return unknown;
  const { type, correlationId: bodyCorrelationId, ...fields } = check(base, obj);
  const correlationId = bodyCorrelationId ?? headerCorrelationId(record.headers);
  const common = { ...fields, ...(correlationId !== undefined ? { correlationId } : {}) };
  const origin = record.origin ? { origin: record.origin } : {};
  const event: OrderEvent =
    type === ORDER_PLACED
      ? { type: ORDER_PLACED, ...common, data: check(placedEnvelope, obj).data, ...origin }
      : { type: ORDER_CANCELLED, ...common, data: check(cancelledEnvelope, obj).data, ...origin };
  return { kind: 'order-event', event };
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
    throw malformed(`record value is ${Array.isArray(json) ? 'an array' : json === null ? 'null' : typeof json}: expected a JSON object`, '');
  }
  const depth = nestingDepth(json);
  if (depth > MAX_NESTING_DEPTH) throw malformed(`record value nests ${depth} levels deep: expected at most ${MAX_NESTING_DEPTH}`, '');
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

/** An unknown-type result when `type` names an event this service does not handle. */
function unknownType(obj: Record<string, unknown>): ParsedRecord | undefined {
  const { type } = obj;
  if (typeof type !== 'string' || type === '' || type === ORDER_PLACED || type === ORDER_CANCELLED) return undefined;
  return {
    kind: 'unknown-type',
    type: sanitize(type, 200),
    eventId: typeof obj.eventId === 'string' ? sanitize(obj.eventId, 128) : undefined,
    tenantId: typeof obj.tenantId === 'string' ? sanitize(obj.tenantId, 64) : undefined,
  };
}

/** The `correlation-id` header when present; an unsafe value is malformed, never normalised. */
function headerCorrelationId(headers: RawRecord['headers']): string | undefined {
  const value = headerString(headers, 'correlation-id');
  if (value === undefined || isSafeToken(value)) return value;
  throw malformed(`header correlation-id: expected ${TOKEN_EXPECTED}, got ${describe(value)}`, 'header correlation-id');
}

interface AddressProblem {
  path: (string | number)[];
  expected: string;
  got: string;
}

const ADDRESS_EXPECTED = `a JSON object of at most ${ADDRESS_LIMITS.levels} levels, ${ADDRESS_LIMITS.entries} keys and elements and ${ADDRESS_LIMITS.bytes} bytes`;

/**
 * The first way `address` breaks ADDRESS_LIMITS, if any, walked without recursion. Values are described by
 * kind and size only, never quoted: an address is personal data.
 */
function addressProblem(address: unknown): AddressProblem | undefined {
  if (!isPlainObject(address)) return { path: [], expected: ADDRESS_EXPECTED, got: kindOf(address) };
  let entries = 0;
  const stack: { value: object; path: (string | number)[]; level: number }[] = [{ value: address, path: [], level: 1 }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    if (item.level > ADDRESS_LIMITS.levels) {
      return { path: item.path, expected: `at most ${ADDRESS_LIMITS.levels} levels of objects and arrays (the address is level 1)`, got: `level ${item.level}` };
    }
    const children: [string | number, unknown][] = Array.isArray(item.value) ? item.value.map((v: unknown, i) => [i, v]) : Object.entries(item.value);
    entries += children.length;
    if (entries > ADDRESS_LIMITS.entries) return { path: [], expected: ADDRESS_EXPECTED, got: `more than ${ADDRESS_LIMITS.entries} keys and elements` };
    for (const [key, child] of children) {
      const path = [...item.path, key];
      const problem = addressKeyProblem(key, path) ?? addressValueProblem(child, path);
      if (problem) return problem;
      if (typeof child === 'object' && child !== null) stack.push({ value: child, path, level: item.level + 1 });
    }
  }
  const bytes = Buffer.byteLength(JSON.stringify(address), 'utf8');
  return bytes > ADDRESS_LIMITS.bytes ? { path: [], expected: ADDRESS_EXPECTED, got: `${bytes} bytes` } : undefined;
}

function addressKeyProblem(key: string | number, path: (string | number)[]): AddressProblem | undefined {
  if (typeof key === 'number' || (key.length >= 1 && key.length <= ADDRESS_LIMITS.keyLength && isSafeText(key))) return undefined;
  return { path, expected: `a key of 1–${ADDRESS_LIMITS.keyLength} characters ${TEXT_RULE}`, got: `the key ${quote(key, 40)}` };
}

function addressValueProblem(value: unknown, path: (string | number)[]): AddressProblem | undefined {
  if (typeof value === 'string' && (value.length > ADDRESS_LIMITS.stringLength || !isSafeText(value))) {
    return { path, expected: `a string of at most ${ADDRESS_LIMITS.stringLength} characters ${TEXT_RULE}`, got: kindOf(value) };
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return { path, expected: 'a finite number', got: String(value) };
  return undefined;
}

/** A value described by kind and size, without its content. */
function kindOf(v: unknown): string {
  if (typeof v === 'string') {
    const flaw = v.includes('\u0000') ? ' containing U+0000' : isWellFormed(v) ? '' : ' containing an unpaired surrogate';
    return `a string of ${v.length} characters${flaw}`;
  }
  if (Array.isArray(v)) return `an array of ${v.length} elements`;
  return v === null ? 'null' : v === undefined ? 'nothing' : typeof v;
}

function check<T extends z.ZodTypeAny>(schema: T, input: Record<string, unknown>): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw malformed('record value does not match the order event schema', '');
  const field = renderPath(issue.path);
  const name = field || '(root)';
  if (issue.code === 'invalid_type' && issue.received === 'undefined') return fail(`field ${name}: is required`, field);
  const got = issue.code === 'custom' && typeof issue.params?.got === 'string' ? issue.params.got : describe(valueAt(input, issue.path));
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
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : IDENTIFIER.test(p) && p.length <= 64 ? `${i === 0 ? '' : '.'}${p}` : `[${quote(p, 40)}]`))
    .join('');
}

function valueAt(input: unknown, path: (string | number)[]): unknown {
  let v = input;
  for (const key of path) v = typeof v === 'object' && v !== null ? (v as Record<string | number, unknown>)[key] : undefined;
  return v;
}

/** A short, printable rendering of a value for an error message; never throws. */
function describe(v: unknown): string {
  try {
    if (v === undefined) return 'nothing';
    if (typeof v === 'string') return quote(v, MAX_QUOTE_LENGTH);
    if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' || v === null) return String(v);
    const s = JSON.stringify(v);
    return s === undefined ? typeof v : cap(printable(s), MAX_QUOTE_LENGTH);
  } catch {
    return 'a value that cannot be shown';
  }
}

/** `s` as a printable JSON string literal of at most `max` characters, ending in "..." when cut. */
function quote(s: string, max: number): string {
  const head = truncate(s, max);
  const literal = printable(JSON.stringify(head));
  return head.length === s.length && literal.length <= max ? literal : `${truncate(literal, max - 3)}...`;
}

/** `s` cut to at most `max` characters, ending in "..." when cut. */
function cap(s: string, max: number): string {
  return s.length <= max ? s : `${truncate(s, max - 3)}...`;
}

/** At most `max` characters of `s`, never splitting a surrogate pair. */
function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  const end = isHighSurrogate(s.charCodeAt(max - 1)) && isLowSurrogate(s.charCodeAt(max)) ? max - 1 : max;
  return s.slice(0, end);
}

/** `s` cut to `max` characters with unpaired surrogates and U+0000 replaced by U+FFFD. */
function sanitize(s: string, max: number): string {
  const head = truncate(s, max);
  let out = '';
  for (let i = 0; i < head.length; i += 1) {
    const c = head.charCodeAt(i);
    if (isHighSurrogate(c) && isLowSurrogate(head.charCodeAt(i + 1))) {
      out += head.slice(i, i + 2);
      i += 1;
    } else out += c === 0 || isSurrogate(c) ? '\ufffd' : head[i];
  }
  return out;
}

/** `s` with control, format-direction and line-separator characters and unpaired surrogates escaped as \uXXXX. */
function printable(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i += 1) {
    const c = s.charCodeAt(i);
    if (isHighSurrogate(c) && isLowSurrogate(s.charCodeAt(i + 1))) {
      out += s.slice(i, i + 2);
      i += 1;
    } else out += needsEscape(c) ? `\\u${c.toString(16).padStart(4, '0')}` : s[i];
  }
  return out;
}

function needsEscape(c: number): boolean {
  return (
    c < 0x20 || (c >= 0x7f && c <= 0x9f) || isSurrogate(c) || c === 0x2028 || c === 0x2029 || c === 0xfeff ||
    c === 0x200e || c === 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)
  );
}

function errorSummary(err: unknown, withName = true): string {
  try {
    if (!(err instanceof Error)) return typeof err;
    return cap(withName ? `${err.name}: ${err.message}` : err.message, 200);
  } catch {
    return 'unknown error';
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;
const isSurrogate = (c: number) => c >= 0xd800 && c <= 0xdfff;
