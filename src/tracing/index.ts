/**
 * OpenTelemetry tracing, configured by the standard OTEL_* variables (validated in src/config.ts). Off unless
 * OTEL_TRACES_EXPORTER or an OTLP endpoint is set: then startTracing returns undefined, no SDK is started, nothing
 * is registered, and every caller skips its tracing work (a `tracer` that is undefined).
 *
 * When on, one app gets its own tracer provider (batch span processor → OTLP/HTTP or console exporter) and hands
 * its tracer to what makes spans: the bridge (`kafka.record <type>`), the Temporal client interceptor
 * (SignalWithStartWorkflow), the worker's activity interceptor (RunActivity) and its workflow span sink
 * (RunWorkflow, HandleSignal, StartActivity, made inside the sandbox), and the warehouse client (`warehouse.<op>`).
 * The process-wide parts OpenTelemetry's API needs to carry a context — the AsyncLocalStorage context manager and
 * the W3C trace-context and baggage propagators — are registered once, by the first app that traces, and unregistered
 * when the last one stops. The global tracer provider is left alone: two apps in one process (the tests) each export
 * to their own configuration.
 */
import { context, propagation, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OTLPJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource, type IResource } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  makeWorkflowExporter,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';

/** Name and version of the tracer this service's own spans come from (the instrumentation scope). */
export const TRACER_NAME = 'fulfilment';
const SERVICE_VERSION = '0.1.0';

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
  | { exporter: 'otlp'; url: string; protocol: 'http/protobuf' | 'http/json'; headers: Record<string, string>; timeoutMs: number }
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
    url: c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (c.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ? tracesUrl(c.OTEL_EXPORTER_OTLP_ENDPOINT) : DEFAULT_OTLP_TRACES_URL),
    protocol: c.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? c.OTEL_EXPORTER_OTLP_PROTOCOL,
    headers: { ...c.OTEL_EXPORTER_OTLP_HEADERS, ...c.OTEL_EXPORTER_OTLP_TRACES_HEADERS },
    timeoutMs: c.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? c.OTEL_EXPORTER_OTLP_TIMEOUT,
  };
}

/** OTEL_EXPORTER_OTLP_ENDPOINT is a base URL: the traces signal's path is appended to it (the standard's rule). */
function tracesUrl(base: string): string {
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

export function sampler(c: Pick<TracingConfig, 'OTEL_TRACES_SAMPLER' | 'OTEL_TRACES_SAMPLER_ARG'>): Sampler {
  const ratio = new TraceIdRatioBasedSampler(c.OTEL_TRACES_SAMPLER_ARG ?? 1);
  switch (c.OTEL_TRACES_SAMPLER) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

export interface Tracing {
  /** The tracer this app's own spans are made with. */
  tracer: Tracer;
  /** Where finished spans go (also the workflow spans the worker's sink receives). */
  processor: SpanProcessor;
  resource: IResource;
  settings: ExportSettings;
  /** Interceptors of a client whose calls carry the context into workflows (signalWithStart). */
  clientInterceptors(): WorkflowClientInterceptor[];
  /** The worker's activity interceptors (RunActivity spans, children of the workflow's StartActivity). */
  workerInterceptors(): Pick<WorkerInterceptors, 'activity'>;
  /** The sink the workflow interceptors export their spans through (made inside the sandbox, ended here). */
  workerSinks(): InjectedSinks<OpenTelemetrySinks>;
  /** Exports what is still buffered and stops exporting; idempotent. */
  shutdown(): Promise<void>;
}

let users = 0;

/** Registers the context manager and propagators the first time a tracing app starts in this process. */
function acquireGlobals(): void {
  users += 1;
  if (users > 1) return;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
}

function releaseGlobals(): void {
  users -= 1;
  if (users > 0) return;
  context.disable();
  propagation.disable();
}

function exporterFor(settings: ExportSettings): SpanExporter {
  if (settings.exporter === 'console') return new ConsoleSpanExporter();
  const options = { url: settings.url, headers: settings.headers, timeoutMillis: settings.timeoutMs };
  return settings.protocol === 'http/json' ? new OTLPJsonTraceExporter(options) : new OTLPProtoTraceExporter(options);
}

/** Starts tracing as configured, or returns undefined (nothing started) when it is off. */
export function startTracing(c: TracingConfig, logger: Logger): Tracing | undefined {
  const settings = exportSettings(c);
  if (!settings) return undefined;
  const resource = Resource.default().merge(
    new Resource({ ...c.OTEL_RESOURCE_ATTRIBUTES, [ATTR_SERVICE_NAME]: c.OTEL_SERVICE_NAME, [ATTR_SERVICE_VERSION]: SERVICE_VERSION }),
  );
  const batch = new BatchSpanProcessor(exporterFor(settings), {
    scheduledDelayMillis: c.OTEL_BSP_SCHEDULE_DELAY,
    maxQueueSize: c.OTEL_BSP_MAX_QUEUE_SIZE,
    maxExportBatchSize: c.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
    exportTimeoutMillis: c.OTEL_BSP_EXPORT_TIMEOUT,
  });
  const provider = new BasicTracerProvider({ resource, sampler: sampler(c), spanProcessors: [batch] });
  acquireGlobals();
  const tracer = provider.getTracer(TRACER_NAME, SERVICE_VERSION);
  // The workflow spans reach the same batch processor as ReadableSpans, through the worker's sink.
  const processor: SpanProcessor = batch;
  let stopped: Promise<void> | undefined;
  logger.info({ exporter: settings.exporter, ...(settings.exporter === 'otlp' ? { url: settings.url, protocol: settings.protocol } : {}), sampler: c.OTEL_TRACES_SAMPLER, serviceName: c.OTEL_SERVICE_NAME }, 'tracing on');
  return {
    tracer,
    processor,
    resource,
    settings,
    clientInterceptors: () => [new OpenTelemetryWorkflowClientInterceptor({ tracer })],
    workerInterceptors: () => ({
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer }), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
    }),
    workerSinks: () => ({ exporter: makeWorkflowExporter(processor, resource as Resource) }),
    shutdown() {
      stopped ??= (async () => {
        try {
          // shutdown() flushes every processor first: spans ended up to now are exported, then exporting stops.
          await provider.shutdown();
        } catch (err) {
          logger.warn({ err: (err as Error).message }, 'exporting the last spans failed');
        } finally {
          releaseGlobals();
        }
      })();
      return stopped;
    },
  };
}
