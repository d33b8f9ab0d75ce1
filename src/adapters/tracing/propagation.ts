/**
 * Trace context in and out of Kafka records, through OpenTelemetry's propagation API (W3C `traceparent`, `tracestate`,
 * `baggage`; the propagators src/adapters/tracing/index.ts registers while tracing is on — with tracing off, extracting
 * finds nothing and injecting writes nothing).
 */
import { ROOT_CONTEXT, context, propagation, trace, type Context, type TextMapGetter } from '@opentelemetry/api';
import { headerString, type RecordHeaders } from '../kafka/records.js';

/** The W3C header names of a trace context. */
export const TRACEPARENT = 'traceparent';
export const TRACESTATE = 'tracestate';

/** Reads propagation fields from Kafka record headers (bytes or text; the first of a repeated header). */
export const recordHeadersGetter: TextMapGetter<RecordHeaders | undefined> = {
  keys: (headers) => Object.keys(headers ?? {}),
  get: (headers, key) => headerString(headers, key),
};

/** The trace context a record's headers carry: ROOT_CONTEXT when none (or an invalid one), so a new trace starts. */
export function recordContext(headers: RecordHeaders | undefined): Context {
  return propagation.extract(ROOT_CONTEXT, headers, recordHeadersGetter);
}

/** The active span's context as headers (`traceparent`, and `tracestate`/`baggage` when set); {} when none is active. */
export function currentTraceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  const active = context.active();
  if (trace.getSpan(active)) propagation.inject(active, carrier);
  return carrier;
}

/** A `traceparent` value of the W3C format (version 00 layout, non-zero ids). */
export function isTraceparent(value: string | undefined): value is string {
  const m = value === undefined ? null : /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value);
  return m !== null && m[1] !== 'ff' && !/^0+$/.test(m[2]!) && !/^0+$/.test(m[3]!);
}
