/**
 * The envelope's trust-boundary property, shared by the unit test and `npm run fuzz`: whatever the bytes and
 * headers, `parseRecord` returns an unknown type, or an order event that the store and the warehouse client
 * can take, or throws MalformedEventError — nothing else. Four generators feed it: (a) `mutated` valid events
 * with fields anywhere replaced, removed or injected as raw JSON, (b) arbitrary `json` values, (c) arbitrary
 * `bytes` and deep nesting, (d) `valid` events built field by field within the contract, which must be accepted.
 * Every generator draws on valid events of each schema version the service reads (1 and 2).
 */
import fc from 'fast-check';
import { MalformedEventError } from '../../src/base/errors.js';
import {
  MAX_ORDER_VERSION,
  MAX_VALUE_BYTES,
  parseRecord,
  type ParsedRecord,
  type RawRecord,
} from '../../src/adapters/events/envelope.js';
import { ID_PATTERN, ORDER_CANCELLED, ORDER_PLACED, type OrderEvent } from '../../src/vocabulary/order.js';

export const GENERATORS = ['mutated', 'json', 'bytes', 'valid'] as const;
export type GeneratorName = (typeof GENERATORS)[number];

/** How often each generator is drawn when several run together. */
const WEIGHTS: Record<GeneratorName, number> = { mutated: 4, json: 2, bytes: 2, valid: 2 };

type KafkaHeaders = NonNullable<RawRecord['headers']>;

export interface Case {
  generator: GeneratorName;
  value: Buffer | null;
  headers?: KafkaHeaders;
}

export interface GeneratorCounts {
  total: number;
  accepted: number;
  unknownType: number;
  malformed: number;
}

export interface PropertyResult {
  seed: number;
  numRuns: number;
  total: GeneratorCounts;
  byGenerator: Record<GeneratorName, GeneratorCounts>;
  /** Malformed cases by the `field` of their error ('' is the whole value). */
  malformedFields: Map<string, number>;
  /** Set when a counterexample was found: what failed and on which input (shrunk). */
  failure?: string;
}

export interface PropertyOptions {
  numRuns: number;
  seed: number;
  /** Generators to draw from; default all. */
  generators?: readonly GeneratorName[];
}

/** Runs the property; never throws for a counterexample, reports it in `failure` instead. */
export function runEnvelopeProperty(options: PropertyOptions): PropertyResult {
  const generators = options.generators ?? GENERATORS;
  const result: PropertyResult = {
    seed: options.seed,
    numRuns: options.numRuns,
    total: counts(),
    byGenerator: { mutated: counts(), json: counts(), bytes: counts(), valid: counts() },
    malformedFields: new Map(),
  };
  const arbitrary = fc.oneof(...generators.map((g) => ({ weight: WEIGHTS[g], arbitrary: ARBITRARIES[g] })));
  const details = fc.check(
    fc.property(arbitrary, (c) => {
      tally(result, c.generator, judge(c));
    }),
    { numRuns: options.numRuns, seed: options.seed },
  );
  if (details.failed) result.failure = describeFailure(details.counterexample?.[0], details.errorInstance);
  return result;
}

/** `numRuns` generated cases (reproducible from `seed`), for tests that feed them to the real effects. */
export function sampleCases(options: PropertyOptions): Case[] {
  const generators = options.generators ?? GENERATORS;
  const arbitrary = fc.oneof(...generators.map((g) => ({ weight: WEIGHTS[g], arbitrary: ARBITRARIES[g] })));
  return fc.sample(arbitrary, { numRuns: options.numRuns, seed: options.seed });
}

type Verdict = { outcome: 'accepted' | 'unknownType' } | { outcome: 'malformed'; field: string };

/** Parses one case and checks the outcome; throws when the property is broken. */
export function judge(c: Case): Verdict {
  let parsed: ParsedRecord;
  try {
    parsed = parseRecord({ value: c.value, headers: c.headers });
  } catch (err) {
    if (!(err instanceof MalformedEventError))
      throw new Error(`threw ${describeError(err)} instead of MalformedEventError`);
    const problem = messageProblem(err);
    if (problem) throw new Error(`MalformedEventError ${problem}: ${JSON.stringify(err.message)}`);
    if (c.generator === 'valid') throw new Error(`refused a valid event: ${err.message}`);
    return { outcome: 'malformed', field: err.field };
  }
  if (parsed.kind === 'unknown-type') {
    const problem = unknownTypeProblem(parsed);
    if (problem) throw new Error(`unknown-type result ${problem}`);
    if (c.generator === 'valid')
      throw new Error(`took a valid event for an unknown type ${JSON.stringify(parsed.type)}`);
    return { outcome: 'unknownType' };
  }
  const problem = storageProblem(parsed.event);
  if (problem) throw new Error(`accepted an event the effects cannot take: ${problem}`);
  return { outcome: 'accepted' };
}

/** True when every effect (PostgreSQL text/jsonb/integer, undici headers, JSON bodies) can take `event`. */
export function acceptableToStoreAndWarehouse(event: OrderEvent): boolean {
  return storageProblem(event) === undefined;
}

/** The first reason the store or the warehouse client would refuse `event`, if any. */
export function storageProblem(event: OrderEvent): string | undefined {
  const badString = strings(event).find((s) => !isStorable(s));
  if (badString !== undefined) return `string ${JSON.stringify(badString)} is not well-formed NUL-free text`;
  if (!Number.isSafeInteger(event.orderVersion) || event.orderVersion < 1 || event.orderVersion > MAX_ORDER_VERSION) {
    return `orderVersion ${event.orderVersion} does not fit an integer column`;
  }
  if (!Number.isFinite(Date.parse(event.occurredAt)))
    return `occurredAt ${JSON.stringify(event.occurredAt)} does not parse`;
  if (!ID_PATTERN.test(event.tenantId) || !ID_PATTERN.test(event.orderId))
    return 'tenantId or orderId cannot form a workflow id';
  const type: string = event.type;
  if (type !== ORDER_PLACED && type !== ORDER_CANCELLED) return `type ${JSON.stringify(type)} is not handled`;
  if (event.correlationId !== undefined && !survivesHeaders(event.correlationId))
    return `correlationId ${JSON.stringify(event.correlationId)} is not a header value`;
  return bodyProblem(event);
}

/** Whether the warehouse request body serialises. */
function bodyProblem(event: OrderEvent): string | undefined {
  const placed = event.type === ORDER_PLACED ? event.data : undefined;
  try {
    const body = {
      tenantId: event.tenantId,
      orderId: event.orderId,
      lines: placed?.lines,
      shippingAddress: placed?.shippingAddress,
      correlationId: event.correlationId,
    };
    return typeof JSON.stringify(body) === 'string' ? undefined : 'the warehouse body does not serialise';
  } catch (err) {
    return `the warehouse body does not serialise: ${describeError(err)}`;
  }
}

function survivesHeaders(value: string): boolean {
  try {
    return new Headers({ 'correlation-id': value }).get('correlation-id') === value;
  } catch {
    return false;
  }
}

/** Well-formed (UTF-8 round trip unchanged) and free of U+0000, as PostgreSQL text and jsonb need. */
function isStorable(s: string): boolean {
  return !s.includes('\u0000') && Buffer.from(s, 'utf8').toString('utf8') === s;
}

/** Every string in `root`, keys included, walked without recursion. */
function strings(root: unknown): string[] {
  const found: string[] = [];
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') found.push(v);
    else if (typeof v === 'object' && v !== null) {
      for (const [k, child] of Object.entries(v)) {
        found.push(k);
        stack.push(child);
      }
    }
  }
  return found;
}

function unknownTypeProblem(r: Extract<ParsedRecord, { kind: 'unknown-type' }>): string | undefined {
  const limits: [string, string | undefined, number][] = [
    ['type', r.type, 200],
    ['eventId', r.eventId, 128],
    ['tenantId', r.tenantId, 64],
  ];
  for (const [name, value, max] of limits) {
    if (value !== undefined && (!isStorable(value) || value.length > max))
      return `${name} ${JSON.stringify(value)} is unsafe or over ${max} characters`;
  }
  return typeof r.type === 'string' ? undefined : 'type is not a string';
}

/** Why an error message could not go into a log line or a DLQ header as is, if it could not. */
function messageProblem(err: MalformedEventError): string | undefined {
  if (typeof err.field !== 'string') return 'has no field';
  if (err.message.length > 1000) return 'message is over 1000 characters';
  for (const s of [err.message, err.field]) {
    if (!isStorable(s)) return 'text is not well-formed';
    if ([...s].some((ch) => isRawControl(ch.charCodeAt(0)))) return 'text holds a raw control character';
  }
  return undefined;
}

const isRawControl = (c: number) => c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029;

function counts(): GeneratorCounts {
  return { total: 0, accepted: 0, unknownType: 0, malformed: 0 };
}

function tally(result: PropertyResult, generator: GeneratorName, verdict: Verdict): void {
  for (const c of [result.total, result.byGenerator[generator]]) {
    c.total += 1;
    c[verdict.outcome] += 1;
  }
  if (verdict.outcome === 'malformed')
    result.malformedFields.set(verdict.field, (result.malformedFields.get(verdict.field) ?? 0) + 1);
}

function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function describeFailure(c: Case | undefined, err: unknown): string {
  const why = describeError(err);
  if (!c) return why;
  const bytes =
    c.value === null ? 'null' : `${c.value.length} bytes ${JSON.stringify(c.value.subarray(0, 400).toString('utf8'))}`;
  return `${why}\n  generator: ${c.generator}\n  value: ${bytes}\n  headers: ${JSON.stringify(c.headers ?? {})}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Generators

const isSurrogate = (c: number) => c >= 0xd800 && c <= 0xdfff;
const nested = (levels: number, leaf = '1') => `${'['.repeat(levels)}${leaf}${']'.repeat(levels)}`;

/** At most `max` UTF-16 units of `s`, never splitting a surrogate pair. */
function truncate(s: string, max: number): string {
  if (s.length <= max) return s;
  const c = s.charCodeAt(max - 1);
  return s.slice(0, c >= 0xd800 && c <= 0xdbff ? max - 1 : max);
}

/** One code point that is allowed in stored text: anything but U+0000 and surrogates. */
const safeCodePoint = fc
  .oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 0xffff }).filter((c) => !isSurrogate(c)) },
    { weight: 1, arbitrary: fc.integer({ min: 0x10000, max: 0x10ffff }) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 0x1f }) },
  )
  .map((c) => String.fromCodePoint(c));

/** Text of min..max UTF-16 units without NUL or unpaired surrogates, often at the edges of the range. */
function safeText(min: number, max: number): fc.Arbitrary<string> {
  const edge = fc.constantFrom(...new Set([min, Math.max(min, 1), max])).map((n) => 'x'.repeat(n));
  const free = fc
    .string({ unit: safeCodePoint, minLength: min, maxLength: Math.min(max, 40) })
    .map((s) => truncate(s, max));
  return fc
    .oneof({ weight: 6, arbitrary: free }, { weight: 1, arbitrary: edge })
    .filter((s) => s.length >= min && s.length <= max);
}

const safeToken = fc.oneof(
  fc.string({
    unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
    minLength: 1,
    maxLength: 40,
  }),
  fc.constantFrom('!', '~'.repeat(200), 'corr-1'),
);

const two = (n: number) => String(n).padStart(2, '0');

/** An RFC 3339 instant within the contract, built from its parts. */
const instant = fc
  .record({
    year: fc.integer({ min: 0, max: 9999 }),
    month: fc.integer({ min: 1, max: 12 }),
    dayFraction: fc.double({ min: 0, max: 0.999, noNaN: true }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    fraction: fc.option(fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 9 }), {
      nil: undefined,
    }),
    t: fc.constantFrom('T', 't'),
    offset: fc.oneof(
      fc.constantFrom('Z', 'z', '+00:00', '-00:00'),
      fc
        .tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
        .map(([s, h, m]) => `${s}${two(h)}:${two(m)}`),
    ),
  })
  .map((p) => {
    const days = new Date(Date.UTC(2000, p.month, 0)).getUTCDate() - (p.month === 2 && !isLeap(p.year) ? 1 : 0);
    const day = 1 + Math.floor(p.dayFraction * days);
    const date = `${String(p.year).padStart(4, '0')}-${two(p.month)}-${two(day)}`;
    return `${date}${p.t}${two(p.hour)}:${two(p.minute)}:${two(p.second)}${p.fraction ? `.${p.fraction}` : ''}${p.offset}`;
  });

function isLeap(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

const addressScalar = fc.oneof(
  safeText(0, 40),
  fc.constant('a'.repeat(1000)),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
);
const addressKey = safeText(1, 64);

/** A container at `level` (the address is level 1) of the contract's shipping address. */
function addressNode(level: number): fc.Arbitrary<unknown> {
  const child =
    level >= 4
      ? addressScalar
      : fc.oneof({ weight: 3, arbitrary: addressScalar }, { weight: 1, arbitrary: addressNode(level + 1) });
  const object = fc.dictionary(addressKey, child, { maxKeys: level === 1 ? 6 : 3 });
  return level === 1 ? object : fc.oneof(object, fc.array(child, { maxLength: 3 }));
}

function addressEntries(root: unknown): number {
  let n = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    const children = Object.values(v);
    n += children.length;
    stack.push(...children);
  }
  return n;
}

/** Addresses at the limits: 64 entries in all, or 4 levels. */
const edgeAddress = fc.oneof(
  fc
    .array(fc.oneof(fc.integer(), fc.boolean(), safeText(0, 20)), { minLength: 63, maxLength: 63 })
    .map((list) => ({ list })),
  addressScalar.map((leaf) => ({ a: { b: [{ d: leaf }] } })),
);

const shippingAddress = fc
  .oneof({ weight: 6, arbitrary: addressNode(1) }, { weight: 1, arbitrary: edgeAddress })
  .filter((a) => addressEntries(a) <= 64 && Buffer.byteLength(JSON.stringify(a)) <= 8192);

const KNOWN_KEYS = new Set([
  'eventId',
  'type',
  'schemaVersion',
  'occurredAt',
  'tenantId',
  'orderId',
  'orderVersion',
  'correlationId',
  'data',
  'customerId',
  'lines',
  'items',
  'currency',
  'shippingAddress',
  'reason',
  'sku',
  'quantity',
]);
const extraFields = fc.dictionary(
  fc.string({ maxLength: 12 }).filter((k) => !KNOWN_KEYS.has(k)),
  fc.jsonValue({ maxDepth: 3 }),
  { maxKeys: 3 },
);

const line = fc.record({
  sku: safeText(1, 64),
  quantity: fc.oneof(fc.integer({ min: 1, max: 100_000 }), fc.constantFrom(1, 100_000)),
});

const placedData = fc.record(
  { customerId: safeText(1, 128), lines: fc.array(line, { minLength: 1, maxLength: 8 }), shippingAddress },
  { requiredKeys: ['customerId', 'lines'] },
);
const cancelledData = fc.record({ reason: safeText(0, 1000) }, { requiredKeys: [] });

/** A version 2 currency: an ISO 4217 code by shape. */
const currency = fc.stringMatching(/^[A-Z]{3}$/);

/** A placement's data as `schemaVersion` words it: version 2 names the lines `items` and may carry a currency. */
function placedIn(
  schemaVersion: 1 | 2,
  placed: { customerId: string; lines: unknown[]; shippingAddress?: unknown },
  code: string | undefined,
): Record<string, unknown> {
  if (schemaVersion === 1) return placed;
  const { lines, ...rest } = placed;
  return { ...rest, items: lines, ...(code !== undefined ? { currency: code } : {}) };
}

interface Draft {
  event: Record<string, unknown>;
  headers: KafkaHeaders;
}

/** A valid event as a plain object, with its headers. */
const validDraft: fc.Arbitrary<Draft> = fc
  .record({
    eventId: safeText(1, 128),
    type: fc.constantFrom(ORDER_PLACED, ORDER_CANCELLED),
    schemaVersion: fc.constantFrom(1 as const, 2 as const),
    occurredAt: instant,
    tenantId: fc.stringMatching(ID_PATTERN),
    orderId: fc.stringMatching(ID_PATTERN),
    orderVersion: fc.oneof(fc.integer({ min: 1, max: MAX_ORDER_VERSION }), fc.constantFrom(1, MAX_ORDER_VERSION)),
    correlationId: fc.option(safeToken, { nil: undefined }),
    headerCorrelationId: fc.option(safeToken, { nil: undefined }),
    placed: placedData,
    cancelled: cancelledData,
    currency: fc.option(currency, { nil: undefined }),
    extra: extraFields,
    dataExtra: extraFields,
  })
  .map(({ headerCorrelationId, placed, cancelled, currency: code, extra, dataExtra, correlationId, ...fields }) => ({
    event: {
      ...extra,
      ...fields,
      ...(correlationId !== undefined ? { correlationId } : {}),
      data: {
        ...dataExtra,
        ...(fields.type === ORDER_PLACED ? placedIn(fields.schemaVersion, placed, code) : cancelled),
      },
    },
    headers: headerCorrelationId !== undefined ? { 'correlation-id': headerCorrelationId } : {},
  }));

const toCase = (generator: GeneratorName, text: string | undefined, headers?: KafkaHeaders): Case => ({
  generator,
  value: text === undefined ? null : Buffer.from(text, 'utf8'),
  ...(headers ? { headers } : {}),
});

const valid = validDraft.map((d) => toCase('valid', JSON.stringify(d.event), d.headers));

// (a) mutations -------------------------------------------------------------------------------------------------

/** One UTF-16 unit or code point of any kind: lone surrogates, NUL, controls, separators, astral. */
const anyUnit = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '\u0000',
      '\r',
      '\n',
      ' ',
      '\t',
      '\u007f',
      '\u0085',
      'é',
      '😀',
      '\u2028',
      '\u202e',
      '\ufeff',
      '\ufffd',
    ),
  },
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
);

const evilString = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: anyUnit, maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: anyUnit, minLength: 100, maxLength: 300 }) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(0, 1, 63, 64, 65, 127, 128, 129, 199, 200, 201, 999, 1000, 1001)
      .map((n) => 'x'.repeat(n)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      ORDER_PLACED,
      ORDER_CANCELLED,
      '2026-11-30T12:00:00+25:00',
      '2026-02-30T00:00:00Z',
      '2026-01-01 00:00:00Z',
      '2026-12-31T23:59:60Z',
      'orders.Other',
    ),
  },
);

const evilNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(
    0,
    -1,
    1,
    1.5,
    2,
    100_000,
    100_001,
    2 ** 31 - 1,
    2 ** 31,
    2 ** 32,
    3e9,
    2 ** 53,
    2 ** 53 + 2,
    Number.MAX_SAFE_INTEGER,
    Number.MAX_VALUE,
    -0,
    1e-300,
  ),
);

const evilValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: evilString },
  { weight: 3, arbitrary: evilNumber },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3, stringUnit: anyUnit }) },
  { weight: 2, arbitrary: fc.anything({ maxDepth: 3, key: evilString }) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}, undefined) },
);

/** JSON texts that JSON.stringify cannot produce from a JavaScript value: huge numbers, escapes, deep nesting. */
const rawJson = fc.oneof(
  fc.constantFrom(
    '1e400',
    '-1e400',
    '9007199254740993',
    '2147483648',
    '2147483647.0000001',
    '1.0',
    '1E0',
    '-0',
    '0.1e1',
    '1e-400',
  ),
  fc.constantFrom(
    '"\\ud800"',
    '"\\udc00x"',
    '"\\ud83d\\ude00"',
    '"\\u0000"',
    '"a\\u0000b"',
    '"\\ud800\\ud800"',
    '"\\u2028"',
    '""',
  ),
  fc.integer({ min: 25, max: 40 }).map((n) => nested(n)),
  fc.integer({ min: 1, max: 5000 }).map((n) => nested(n)),
  fc.integer({ min: 1, max: 200 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
);

type Path = (string | number)[];

type Mutation =
  | { op: 'set'; path: Path; value: unknown }
  | { op: 'delete'; path: Path }
  | { op: 'raw'; path: Path; text: string }
  | { op: 'rename'; path: Path; key: string }
  | { op: 'header'; value: KafkaHeaders[string] };

/** Every path to a value inside `root` plus the optional fields that may be absent. */
function pathsOf(root: Record<string, unknown>): Path[] {
  const paths: Path[] = [
    ['correlationId'],
    ['data', 'shippingAddress'],
    ['data', 'reason'],
    ['data', 'lines', 0, 'extra'],
    ['data', 'items', 0, 'extra'],
    ['data', 'currency'],
    ['x'],
  ];
  const stack: { v: unknown; path: Path }[] = [{ v: root, path: [] }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    if (item.path.length > 0) paths.push(item.path);
    if (typeof item.v !== 'object' || item.v === null) continue;
    const entries: [string | number, unknown][] = Array.isArray(item.v)
      ? item.v.map((c: unknown, i) => [i, c])
      : Object.entries(item.v);
    for (const [k, c] of entries) stack.push({ v: c, path: [...item.path, k] });
  }
  return paths;
}

const headerValue: fc.Arbitrary<KafkaHeaders[string]> = fc.oneof(
  evilString,
  safeToken,
  fc.uint8Array({ maxLength: 20 }).map((b) => Buffer.from(b)),
  fc.tuple(evilString, safeToken).map((pair): (Buffer | string)[] => [...pair]),
  fc.constant(undefined),
);

function mutations(paths: Path[]): fc.Arbitrary<Mutation> {
  const path = fc.constantFrom(...paths);
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ op: fc.constant('set' as const), path, value: evilValue }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), path }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('raw' as const), path, text: rawJson }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('rename' as const), path, key: evilString }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('header' as const), value: headerValue }) },
  );
}

const RAW_MARKER = '__envelope_fuzz_raw__';

/** The container holding the last key of `path`, created on the way when missing; undefined when it is a scalar. */
function parentOf(root: Record<string, unknown>, path: Path): Record<string | number, unknown> | undefined {
  let v: unknown = root;
  for (const key of path.slice(0, -1)) {
    if (typeof v !== 'object' || v === null) return undefined;
    const container = v as Record<string | number, unknown>;
    if (container[key] === undefined) container[key] = {};
    v = container[key];
  }
  return typeof v === 'object' && v !== null ? (v as Record<string | number, unknown>) : undefined;
}

function applyMutations(draft: Draft, list: Mutation[]): Case {
  const event = structuredClone(draft.event);
  const headers: KafkaHeaders = { ...draft.headers };
  const raws: string[] = [];
  for (const m of list) {
    if (m.op === 'header') {
      headers['correlation-id'] = m.value;
      delete event.correlationId;
      continue;
    }
    const parent = parentOf(event, m.path);
    const key = m.path[m.path.length - 1];
    if (!parent || key === undefined) continue;
    if (m.op === 'set') parent[key] = copy(m.value);
    else if (m.op === 'delete') delete parent[key];
    else if (m.op === 'raw') {
      parent[key] = `${RAW_MARKER}${raws.length}`;
      raws.push(m.text);
    } else {
      const value = parent[key];
      delete parent[key];
      parent[m.key] = value;
    }
  }
  let text = safeStringify(event);
  raws.forEach((raw, i) => {
    text = text?.replace(`"${RAW_MARKER}${i}"`, raw);
  });
  return toCase('mutated', text, headers);
}

/** A deep copy, so later mutations never touch a value fast-check generated (it may replay it). */
function copy(v: unknown): unknown {
  try {
    return structuredClone(v);
  } catch {
    return v;
  }
}

function safeStringify(v: unknown): string | undefined {
  try {
    return JSON.stringify(v);
  } catch {
    return undefined;
  }
}

const mutated = validDraft.chain((draft) =>
  fc.array(mutations(pathsOf(draft.event)), { minLength: 1, maxLength: 3 }).map((list) => applyMutations(draft, list)),
);

// (b) arbitrary JSON --------------------------------------------------------------------------------------------

const envelopeLike = fc.record(
  {
    eventId: evilValue,
    type: fc.oneof(fc.constantFrom(ORDER_PLACED, ORDER_CANCELLED), evilValue),
    schemaVersion: fc.oneof(fc.constantFrom(1, 2), evilValue),
    occurredAt: evilValue,
    tenantId: evilValue,
    orderId: evilValue,
    orderVersion: evilValue,
    correlationId: evilValue,
    data: fc.oneof(
      evilValue,
      fc.record(
        {
          customerId: evilValue,
          lines: fc.array(fc.record({ sku: evilValue, quantity: evilValue }), { maxLength: 3 }),
          items: fc.array(fc.record({ sku: evilValue, quantity: evilValue }), { maxLength: 3 }),
          shippingAddress: evilValue,
          currency: evilValue,
          reason: evilValue,
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);

const json = fc
  .oneof(
    { weight: 2, arbitrary: fc.jsonValue({ stringUnit: anyUnit }) },
    { weight: 1, arbitrary: fc.anything({ key: evilString }) },
    { weight: 3, arbitrary: envelopeLike },
  )
  .map((v) => toCase('json', safeStringify(v) ?? ''));

// (c) arbitrary bytes -------------------------------------------------------------------------------------------

const oversized = Buffer.alloc(MAX_VALUE_BYTES + 1, 0x20);

const deepText = fc
  .tuple(
    fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: 1, max: 64 }) },
      { weight: 2, arbitrary: fc.integer({ min: 1, max: 5000 }) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 120_000 }) },
    ),
    fc.constantFrom('open', 'balanced', 'objects', 'inData'),
  )
  .map(([n, shape]) => {
    if (shape === 'open') return '['.repeat(n);
    if (shape === 'balanced') return nested(n);
    if (shape === 'objects') return `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    return `{"type":"${ORDER_PLACED}","data":{"shippingAddress":${nested(n)}}}`;
  });

/** A valid event's bytes with a few bytes overwritten, removed or cut off: broken UTF-8 inside strings. */
const corrupted = validDraft.chain((d) => {
  const bytes = Buffer.from(JSON.stringify(d.event), 'utf8');
  return fc
    .record({
      edits: fc.array(fc.tuple(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 0, max: 255 })), {
        minLength: 1,
        maxLength: 4,
      }),
      cut: fc.option(fc.nat({ max: bytes.length }), { nil: undefined }),
    })
    .map(({ edits, cut }) => {
      const copy = Buffer.from(bytes);
      for (const [at, b] of edits) copy[at] = b;
      return {
        generator: 'bytes' as const,
        value: cut === undefined ? copy : copy.subarray(0, cut),
        headers: d.headers,
      };
    });
});

const bytes = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.uint8Array({ maxLength: 300 }).map((b): Case => ({ generator: 'bytes', value: Buffer.from(b) })),
  },
  { weight: 3, arbitrary: deepText.map((t) => toCase('bytes', t)) },
  { weight: 3, arbitrary: corrupted },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Case>(
      { generator: 'bytes', value: null },
      { generator: 'bytes', value: oversized },
      { generator: 'bytes', value: Buffer.alloc(0) },
    ),
  },
);

const ARBITRARIES: Record<GeneratorName, fc.Arbitrary<Case>> = { mutated, json, bytes, valid };
