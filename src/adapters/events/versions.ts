/**
 * The schema versions this service knows, each its schema (schema-vN.ts) and its upcaster (upcast.ts). The parser
 * (envelope.ts) reads a record's `schemaVersion` first, validates the record with that version's schema and
 * upcasts it to the internal model; a version not listed here is malformed, never read as another.
 *
 * Adding version N: write schema-vN.ts (built from rules.ts and, where unchanged, the previous version's parts),
 * add upcastVN to upcast.ts, list it below, and document it in docs/how-it-works.md (the input contract). Keep every older
 * version for as long as producers may still send it (and the DLQ may still hold it).
 */
import { z } from 'zod';
import { ORDER_EVENT_TYPES, type OrderEventType } from '../../vocabulary/order.js';
import { schemaV1 } from './schema-v1.js';
import { schemaV2 } from './schema-v2.js';
import { upcastV1, upcastV2, type ModelOf, type Upcaster } from './upcast.js';

/** Validates `input` against `schema`, throwing MalformedEventError naming the first field that fails. */
export type Check = <T extends z.ZodTypeAny>(schema: T, input: Record<string, unknown>) => z.output<T>;

/** A record read by its version and upcast: the internal model less what the parser adds (schemaVersion, origin). */
export type UpcastEvent = { [T in OrderEventType]: { type: T } & ModelOf<T> }[OrderEventType];

export interface SchemaVersion {
  readonly version: number;
  /** The field names this version defines, at the top level and in `data` by type; any other is unknown (dropped). */
  readonly fields: {
    readonly top: ReadonlySet<string>;
    readonly data: Readonly<Record<OrderEventType, ReadonlySet<string>>>;
  };
  /** Validates a record of `type` with this version's schema and upcasts it to the model. */
  read(record: Record<string, unknown>, type: OrderEventType, check: Check): UpcastEvent;
}

/** One version: the whole record of each type (`type` and `schemaVersion` excepted), keyed by the type. */
interface Definition {
  version: number;
  types: Readonly<Record<OrderEventType, z.AnyZodObject>>;
}

/** The records a definition's schemas validate, by type: what its upcaster takes. */
type RecordsOf<D extends Definition> = { [T in OrderEventType]: z.output<D['types'][T]> };

function defineSchemaVersion<D extends Definition>(schema: D, upcast: Upcaster<RecordsOf<D>>): SchemaVersion {
  const top = (s: z.AnyZodObject) => ['type', 'schemaVersion', ...Object.keys(s.shape)];
  const data = (s: z.AnyZodObject) => {
    const d: unknown = s.shape.data;
    return new Set(d instanceof z.ZodObject ? Object.keys(d.shape as z.ZodRawShape) : []);
  };
  const byType = {} as Record<OrderEventType, ReadonlySet<string>>;
  for (const t of ORDER_EVENT_TYPES) byType[t] = data(schema.types[t]);
  // Each type's record goes through that type's upcaster: the pairing TypeScript cannot follow through an index.
  const readAs = <T extends OrderEventType>(type: T, record: Record<string, unknown>, check: Check) => {
    const upcaster = upcast[type] as (validated: unknown) => ModelOf<T>;
    return { type, ...upcaster(check(schema.types[type], record)) };
  };
  return {
    version: schema.version,
    fields: {
      top: new Set(ORDER_EVENT_TYPES.flatMap((t) => top(schema.types[t]))),
      data: byType,
    },
    read: (record, type, check) => readAs(type, record, check) as UpcastEvent,
  };
}

/** Every version this service reads, by number. */
export const SCHEMA_VERSIONS: ReadonlyMap<number, SchemaVersion> = new Map(
  [defineSchemaVersion(schemaV1, upcastV1), defineSchemaVersion(schemaV2, upcastV2)].map((v) => [v.version, v]),
);

/** The versions this service reads, ascending. */
export const SUPPORTED_SCHEMA_VERSIONS: readonly number[] = [...SCHEMA_VERSIONS.keys()].sort((a, b) => a - b);
