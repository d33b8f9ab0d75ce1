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
import { ORDER_CANCELLED, ORDER_PLACED, type OrderEventType } from '../order.js';
import { schemaV1 } from './schema-v1.js';
import { schemaV2 } from './schema-v2.js';
import { upcastV1, upcastV2, type CancelledModel, type PlacedModel, type Upcaster } from './upcast.js';

/** Validates `input` against `schema`, throwing MalformedEventError naming the first field that fails. */
export type Check = <T extends z.ZodTypeAny>(schema: T, input: Record<string, unknown>) => z.output<T>;

/** A record read by its version and upcast: the internal model less what the parser adds (schemaVersion, origin). */
export type UpcastEvent =
  ({ type: typeof ORDER_PLACED } & PlacedModel) | ({ type: typeof ORDER_CANCELLED } & CancelledModel);

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

/** One version: the whole record of each type (`type` and `schemaVersion` excepted), and its upcaster. */
interface Definition<P extends z.AnyZodObject, C extends z.AnyZodObject> {
  version: number;
  placed: P;
  cancelled: C;
}

function defineSchemaVersion<P extends z.AnyZodObject, C extends z.AnyZodObject>(
  schema: Definition<P, C>,
  upcast: Upcaster<z.output<P>, z.output<C>>,
): SchemaVersion {
  const top = (s: z.AnyZodObject) => new Set(['type', 'schemaVersion', ...Object.keys(s.shape)]);
  const data = (s: z.AnyZodObject) => {
    const d: unknown = s.shape.data;
    return new Set(d instanceof z.ZodObject ? Object.keys(d.shape as z.ZodRawShape) : []);
  };
  return {
    version: schema.version,
    fields: {
      top: new Set([...top(schema.placed), ...top(schema.cancelled)]),
      data: { [ORDER_PLACED]: data(schema.placed), [ORDER_CANCELLED]: data(schema.cancelled) },
    },
    read: (record, type, check) =>
      type === ORDER_PLACED
        ? { type, ...upcast.placed(check(schema.placed, record)) }
        : { type, ...upcast.cancelled(check(schema.cancelled, record)) },
  };
}

/** Every version this service reads, by number. */
export const SCHEMA_VERSIONS: ReadonlyMap<number, SchemaVersion> = new Map(
  [defineSchemaVersion(schemaV1, upcastV1), defineSchemaVersion(schemaV2, upcastV2)].map((v) => [v.version, v]),
);

/** The versions this service reads, ascending. */
export const SUPPORTED_SCHEMA_VERSIONS: readonly number[] = [...SCHEMA_VERSIONS.keys()].sort((a, b) => a - b);
