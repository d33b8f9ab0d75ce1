/** What the OTEL_* variables ask for (src/base/config.ts validates them): whether tracing is on, and how it exports. */
import type { Config } from '../../base/config.js';

/** Name and version of the tracer this service's own spans come from (the instrumentation scope). */
export const TRACER_NAME = 'fulfilment';

/** The OTel variables that decide whether tracing is on, and how it exports. */
export type TracingConfig = Pick<
  Config,
  | 'OTEL_SDK_DISABLED'
  | 'OTEL_TRACES_EXPORTER'
  | 'OTEL_EXPORTER_OTLP_ENDPOINT'
  | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
  | 'OTEL_EXPORTER_OTLP_PROTOCOL'
  | 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
  | 'OTEL_EXPORTER_OTLP_HEADERS'
  | 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'
  | 'OTEL_EXPORTER_OTLP_TIMEOUT'
  | 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'
  | 'OTEL_SERVICE_NAME'
  | 'OTEL_RESOURCE_ATTRIBUTES'
  | 'OTEL_TRACES_SAMPLER'
  | 'OTEL_TRACES_SAMPLER_ARG'
  | 'OTEL_BSP_SCHEDULE_DELAY'
  | 'OTEL_BSP_MAX_QUEUE_SIZE'
  | 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'
  | 'OTEL_BSP_EXPORT_TIMEOUT'
>;

/** Where and how spans are exported, as the configuration says; undefined when tracing is off. */
export type ExportSettings =
  | {
      exporter: 'otlp';
      url: string;
      protocol: 'http/protobuf' | 'http/json';
      headers: Record<string, string>;
      timeoutMs: number;
    }
  | { exporter: 'console' };

/** The OTLP spec's default traces URL (a local collector's HTTP port). */
export const DEFAULT_OTLP_TRACES_URL = 'http://localhost:4318/v1/traces';

/**
 * What the configuration asks for: undefined (off) when OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none, or
 * neither OTEL_TRACES_EXPORTER nor an OTLP endpoint is set.
 */
export function exportSettings(c: TracingConfig): ExportSettings | undefined {
  if (c.OTEL_SDK_DISABLED === 'true') return undefined;
  const endpointSet = c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined || c.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined;
  const exporter = c.OTEL_TRACES_EXPORTER ?? (endpointSet ? 'otlp' : 'none');
  if (exporter === 'none') return undefined;
  if (exporter === 'console') return { exporter: 'console' };
  return {
    exporter: 'otlp',
    url:
      c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
      (c.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined
        ? tracesUrl(c.OTEL_EXPORTER_OTLP_ENDPOINT)
        : DEFAULT_OTLP_TRACES_URL),
    protocol: c.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? c.OTEL_EXPORTER_OTLP_PROTOCOL,
    headers: { ...c.OTEL_EXPORTER_OTLP_HEADERS, ...c.OTEL_EXPORTER_OTLP_TRACES_HEADERS },
    timeoutMs: c.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? c.OTEL_EXPORTER_OTLP_TIMEOUT,
  };
}

/** OTEL_EXPORTER_OTLP_ENDPOINT is a base URL: the traces signal's path is appended to it (the standard's rule). */
function tracesUrl(base: string): string {
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}
