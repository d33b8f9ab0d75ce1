/**
 * The rules of the input contract that every schema version shares: what a string, an id, a token, a timestamp,
 * an order version, an order line and a shipping address may be. Each version's schema (schema-v1.ts,
 * schema-v2.ts, …) is built from these, so a rule is written once and holds for every version alike.
 * Also the text helpers the parser's error messages use (quoting, escaping, capping), pure and never throwing.
 * Lengths are counted in UTF-16 code units ("characters"), as JavaScript strings count them.
 */
import { z } from 'zod';
import { ID_PATTERN } from '../../vocabulary/order.js';

/** Largest order version the store's `integer` column holds. */
export const MAX_ORDER_VERSION = 2_147_483_647;

/**
 * A safe token: 1–200 visible ASCII characters (0x21–0x7E). Always a valid HTTP header value, and one that
 * header handling (undici trims spaces and tabs) never changes.
 */
export const SAFE_TOKEN_PATTERN = /^[\x21-\x7e]{1,200}$/;

/** Limits of the free-form shipping address. Levels count objects and arrays, the address itself being level 1. */
export const ADDRESS_LIMITS = { levels: 4, entries: 64, bytes: 8192, keyLength: 64, stringLength: 1000 } as const;

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
  const [year, month, day, hour, minute, second, offsetHour, offsetMinute] = [
    n(1),
    n(2),
    n(3),
    n(4),
    n(5),
    n(6),
    n(7),
    n(8),
  ];
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth(year, month) &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59 &&
    offsetHour <= 23 &&
    offsetMinute <= 59 &&
    Number.isFinite(Date.parse(s))
  );
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

export const TEXT_RULE = 'without NUL or unpaired surrogates';
export const TOKEN_EXPECTED = 'a token of 1–200 visible ASCII characters (0x21–0x7E)';
const TIMESTAMP_EXPECTED =
  'an RFC 3339 timestamp such as 2026-01-31T12:00:00Z (a real date and time, offset Z or ±HH:MM up to ±23:59, at most 9 fraction digits)';
const ID_EXPECTED = 'an id of 1–64 letters, digits, ".", "_", ":" or "-" starting with a letter or digit';

// ---------------------------------------------------------------------------------------------------------------
// Field rules, as zod schemas. Every message is the "expected …" part of a MalformedEventError.

const span = (min: number, max: number) => (min === 0 ? `at most ${max}` : `${min}–${max}`);

/** A string of min..max characters that passes isSafeText. */
export function text(min: number, max: number) {
  const expected = `a string of ${span(min, max)} characters ${TEXT_RULE}`;
  return z.string({ invalid_type_error: expected }).min(min, expected).max(max, expected).refine(isSafeText, expected);
}

/** An integer in min..max. */
export function integer(min: number, max: number) {
  const expected = `an integer from ${min} to ${max}`;
  return z.number({ invalid_type_error: expected }).int(expected).min(min, expected).max(max, expected);
}

/** A tenant or order id: it forms the workflow id (ID_PATTERN). */
export const id = z.string({ invalid_type_error: ID_EXPECTED }).regex(ID_PATTERN, ID_EXPECTED);

/** A safe token (SAFE_TOKEN_PATTERN), e.g. a correlation id. */
export const token = z.string({ invalid_type_error: TOKEN_EXPECTED }).regex(SAFE_TOKEN_PATTERN, TOKEN_EXPECTED);

/** An RFC 3339 instant (isRfc3339Instant). */
export const timestamp = z
  .string({ invalid_type_error: TIMESTAMP_EXPECTED })
  .refine(isRfc3339Instant, TIMESTAMP_EXPECTED);

/** An order version the store can hold. */
export const orderVersion = integer(1, MAX_ORDER_VERSION);

/** The envelope fields every version shares so far, in the order their errors are reported. */
export const envelopeFields = {
  eventId: text(1, 128),
  occurredAt: timestamp,
  tenantId: id,
  orderId: id,
  orderVersion,
  correlationId: token.optional(),
};

/** An object; the message of a `data` that is not one. */
export const AN_OBJECT = { invalid_type_error: 'an object' } as const;

/** 1–1000 order lines `{sku, quantity}`; `noun` names them in messages as the version's field does (lines, items). */
export function orderLines(noun: string) {
  const one = `a line {sku, quantity}`;
  const expected = `an array of 1–1000 ${noun} {sku, quantity}`;
  return z
    .array(z.object({ sku: text(1, 64), quantity: integer(1, 100_000) }, { invalid_type_error: one }), {
      invalid_type_error: expected,
    })
    .min(1, expected)
    .max(1000, expected);
}

/** The optional free-form shipping address, within ADDRESS_LIMITS. */
export const shippingAddress = z
  .custom<Record<string, unknown>>()
  .superRefine((value, ctx) => {
    const problem = addressProblem(value);
    if (problem)
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: problem.expected,
        path: problem.path,
        params: { got: problem.got },
      });
  })
  .optional();

/** The optional reason of a cancellation. */
export const cancellationReason = text(0, 1000).optional();

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
      return {
        path: item.path,
        expected: `at most ${ADDRESS_LIMITS.levels} levels of objects and arrays (the address is level 1)`,
        got: `level ${item.level}`,
      };
    }
    const children: [string | number, unknown][] = Array.isArray(item.value)
      ? item.value.map((v: unknown, i) => [i, v])
      : Object.entries(item.value);
    entries += children.length;
    if (entries > ADDRESS_LIMITS.entries)
      return { path: [], expected: ADDRESS_EXPECTED, got: `more than ${ADDRESS_LIMITS.entries} keys and elements` };
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

/**
 * Keys a JavaScript consumer that merges objects (Object.assign into a plain object, lodash.merge, a recursive copy)
 * may turn into a prototype change: refused anywhere in a free-form object, so none is ever stored or sent on.
 */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

function addressKeyProblem(key: string | number, path: (string | number)[]): AddressProblem | undefined {
  if (typeof key === 'string' && PROTOTYPE_KEYS.has(key)) {
    return {
      path,
      expected: `a key other than ${[...PROTOTYPE_KEYS].join(', ')} (a consumer that merges objects could change a prototype with it)`,
      got: `the key ${quote(key, 40)}`,
    };
  }
  if (typeof key === 'number' || (key.length >= 1 && key.length <= ADDRESS_LIMITS.keyLength && isSafeText(key)))
    return undefined;
  return {
    path,
    expected: `a key of 1–${ADDRESS_LIMITS.keyLength} characters ${TEXT_RULE}`,
    got: `the key ${quote(key, 40)}`,
  };
}

function addressValueProblem(value: unknown, path: (string | number)[]): AddressProblem | undefined {
  if (typeof value === 'string' && (value.length > ADDRESS_LIMITS.stringLength || !isSafeText(value))) {
    return {
      path,
      expected: `a string of at most ${ADDRESS_LIMITS.stringLength} characters ${TEXT_RULE}`,
      got: kindOf(value),
    };
  }
  if (typeof value === 'number' && !Number.isFinite(value))
    return { path, expected: 'a finite number', got: String(value) };
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Text helpers for messages and reported names: pure, never throwing.

/** Longest quoted value in an error message, characters. */
const MAX_QUOTE_LENGTH = 60;

/** A value described by kind and size, without its content. */
export function kindOf(v: unknown): string {
  if (typeof v === 'string') {
    const flaw = v.includes('\u0000')
      ? ' containing U+0000'
      : isWellFormed(v)
        ? ''
        : ' containing an unpaired surrogate';
    return `a string of ${v.length} characters${flaw}`;
  }
  if (Array.isArray(v)) return `an array of ${v.length} elements`;
  return v === null ? 'null' : v === undefined ? 'nothing' : typeof v;
}

/** A short, printable rendering of a value for an error message; never throws. */
export function describe(v: unknown): string {
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
export function quote(s: string, max: number): string {
  const head = truncate(s, max);
  const literal = printable(JSON.stringify(head));
  return head.length === s.length && literal.length <= max ? literal : `${truncate(literal, max - 3)}...`;
}

/** `s` cut to at most `max` characters, ending in "..." when cut. */
export function cap(s: string, max: number): string {
  return s.length <= max ? s : `${truncate(s, max - 3)}...`;
}

/** At most `max` characters of `s`, never splitting a surrogate pair. */
export function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  const end = isHighSurrogate(s.charCodeAt(max - 1)) && isLowSurrogate(s.charCodeAt(max)) ? max - 1 : max;
  return s.slice(0, end);
}

/** `s` cut to `max` characters with unpaired surrogates and U+0000 replaced by U+FFFD. */
export function sanitize(s: string, max: number): string {
  return replaceUnits(truncate(s, max), (c) => c === 0 || isSurrogate(c));
}

/**
 * `s` cut to `max` characters with every unit `printable` would escape (controls, NUL, unpaired surrogates,
 * line separators, direction and BOM marks) replaced by U+FFFD: safe as a log field and a metric label, as long
 * as it was.
 */
export function sanitizeName(s: string, max: number): string {
  return replaceUnits(truncate(s, max), needsEscape);
}

/** `s` with each UTF-16 unit mapped by `map` — surrogate pairs are kept whole and never mapped. */
function mapUnits(s: string, map: (c: number, unit: string) => string): string {
  let out = '';
  for (let i = 0; i < s.length; i += 1) {
    const c = s.charCodeAt(i);
    if (isHighSurrogate(c) && isLowSurrogate(s.charCodeAt(i + 1))) {
      out += s.slice(i, i + 2);
      i += 1;
    } else out += map(c, s[i]!);
  }
  return out;
}

/** `s` with each unit for which `bad` holds (a surrogate only when unpaired) replaced by U+FFFD. */
function replaceUnits(s: string, bad: (c: number) => boolean): string {
  return mapUnits(s, (c, unit) => (bad(c) ? '\ufffd' : unit));
}

/** `s` with control, format-direction and line-separator characters and unpaired surrogates escaped as \uXXXX. */
export function printable(s: string): string {
  return mapUnits(s, (c, unit) => (needsEscape(c) ? `\\u${c.toString(16).padStart(4, '0')}` : unit));
}

function needsEscape(c: number): boolean {
  return (
    c < 0x20 ||
    (c >= 0x7f && c <= 0x9f) ||
    isSurrogate(c) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0xfeff ||
    c === 0x200e ||
    c === 0x200f ||
    (c >= 0x202a && c <= 0x202e) ||
    (c >= 0x2066 && c <= 0x2069)
  );
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;
const isSurrogate = (c: number) => c >= 0xd800 && c <= 0xdfff;
