/** Tracing: the standard OTEL_* variables, validated as this service reads them, and their checks together. */
import { z } from 'zod';
import { nonEmpty, orList, positiveInt, url, type FieldsOf } from './fields.js';

/** OTEL_TRACES_EXPORTER values this service has an exporter for. */
export const OTEL_TRACES_EXPORTERS = ['otlp', 'console', 'none'] as const;
/** OTEL_TRACES_SAMPLER values (the standard's names). */
export const OTEL_TRACES_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
/** OTLP encodings the exporters speak; `grpc` is refused with a message saying so. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
const otlpProtocol = z
  .string()
  .trim()
  .refine(
    (v) => v !== 'grpc',
    "http/protobuf or http/json (this service exports over OTLP/HTTP; point it at the receiver's HTTP port, 4318 by default, not grpc)",
  )
  .pipe(z.enum(OTLP_PROTOCOLS, { message: orList(OTLP_PROTOCOLS) }));

/**
 * A `key=value` comma list as the OpenTelemetry variables write it (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS):
 * keys trimmed, values percent-decoded; an empty list is refused.
 */
const otlpKeyValues = nonEmpty.transform((v, ctx) => {
  const out: Record<string, string> = {};
  for (const item of v.split(',')) {
    const at = item.indexOf('=');
    const key = at > 0 ? item.slice(0, at).trim() : '';
    if (key === '') {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: 'a comma list of key=value pairs, e.g. key1=value1,key2=value2',
      });
      return z.NEVER;
    }
    try {
      out[key] = decodeURIComponent(item.slice(at + 1).trim());
    } catch {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `a comma list of key=value pairs whose values are percent-encoded, but the value of ${key} is not`,
      });
      return z.NEVER;
    }
  }
  return out;
});

export const tracingSchema = {
  /** `true` turns tracing off whatever else is set (the OpenTelemetry SDK's own switch). */
  OTEL_SDK_DISABLED: z.enum(['true', 'false'], { message: 'true or false' }).optional(),
  /** `otlp` (export over OTLP/HTTP), `console` (print finished spans to stdout) or `none`. Unset: `otlp` when an endpoint is set, else off. */
  OTEL_TRACES_EXPORTER: z.enum(OTEL_TRACES_EXPORTERS, { message: orList(OTEL_TRACES_EXPORTERS) }).optional(),
  /** Base URL of the OTLP/HTTP receiver; spans go to `<endpoint>/v1/traces`. Setting it turns tracing on. */
  OTEL_EXPORTER_OTLP_ENDPOINT: url(['http:', 'https:']).optional(),
  /** Full URL spans are posted to (used as given, over OTEL_EXPORTER_OTLP_ENDPOINT). Setting it turns tracing on. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url(['http:', 'https:']).optional(),
  /** OTLP encoding: `http/protobuf` (the standard's default) or `http/json`. */
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.default('http/protobuf'),
  /** The same for traces only, over OTEL_EXPORTER_OTLP_PROTOCOL. */
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional(),
  /** Headers sent with every export, `key=value` comma list (values percent-decoded), e.g. a collector's API key. */
  OTEL_EXPORTER_OTLP_HEADERS: otlpKeyValues.optional(),
  /** The same for traces only, added over OTEL_EXPORTER_OTLP_HEADERS. */
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: otlpKeyValues.optional(),
  /** Milliseconds one export may take. */
  OTEL_EXPORTER_OTLP_TIMEOUT: positiveInt.default(10_000),
  /** The same for traces only, over OTEL_EXPORTER_OTLP_TIMEOUT. */
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: positiveInt.optional(),
  /** `service.name` of every span. */
  OTEL_SERVICE_NAME: nonEmpty.default('fulfilment'),
  /** More resource attributes, `key=value` comma list (values percent-decoded), e.g. `deployment.environment.name=prod`. */
  OTEL_RESOURCE_ATTRIBUTES: otlpKeyValues.optional(),
  /** Which traces are recorded: always_on, always_off, traceidratio, or parentbased_* of those (follow the caller's decision). */
  OTEL_TRACES_SAMPLER: z
    .enum(OTEL_TRACES_SAMPLERS, { message: orList(OTEL_TRACES_SAMPLERS) })
    .default('parentbased_always_on'),
  /** The ratio of the *traceidratio samplers, 0–1 (default 1). */
  OTEL_TRACES_SAMPLER_ARG: z.coerce
    .number({ invalid_type_error: 'a ratio from 0 to 1' })
    .min(0, 'a ratio from 0 to 1')
    .max(1, 'a ratio from 0 to 1')
    .optional(),
  /** Milliseconds between two exports of the batch span processor. */
  OTEL_BSP_SCHEDULE_DELAY: positiveInt.default(5000),
  /** Most finished spans held for export; past it new spans are dropped (never blocking the service). */
  OTEL_BSP_MAX_QUEUE_SIZE: positiveInt.default(2048),
  /** Most spans in one export; at most OTEL_BSP_MAX_QUEUE_SIZE. */
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: positiveInt.default(512),
  /** Milliseconds one batch export may take before it is given up. */
  OTEL_BSP_EXPORT_TIMEOUT: positiveInt.default(30_000),
};

/** What this concern's variables parse to: its checks below read these. */
type Config = FieldsOf<typeof tracingSchema>;

/** The batch span processor cannot send more spans at once than it holds. */
export function tracingProblems(c: Partial<Config>): string[] {
  const problems: string[] = [];
  if (
    c.OTEL_BSP_MAX_EXPORT_BATCH_SIZE !== undefined &&
    c.OTEL_BSP_MAX_QUEUE_SIZE !== undefined &&
    c.OTEL_BSP_MAX_EXPORT_BATCH_SIZE > c.OTEL_BSP_MAX_QUEUE_SIZE
  ) {
    problems.push(
      `OTEL_BSP_MAX_EXPORT_BATCH_SIZE=${c.OTEL_BSP_MAX_EXPORT_BATCH_SIZE} is larger than OTEL_BSP_MAX_QUEUE_SIZE=${c.OTEL_BSP_MAX_QUEUE_SIZE}: expected at most the queue size`,
    );
  }
  if (
    c.OTEL_TRACES_SAMPLER_ARG !== undefined &&
    c.OTEL_TRACES_SAMPLER !== undefined &&
    !c.OTEL_TRACES_SAMPLER.endsWith('traceidratio')
  ) {
    problems.push(
      `OTEL_TRACES_SAMPLER_ARG is set, but OTEL_TRACES_SAMPLER=${c.OTEL_TRACES_SAMPLER} takes no ratio: expected traceidratio or parentbased_traceidratio, or unset it`,
    );
  }
  return problems;
}
