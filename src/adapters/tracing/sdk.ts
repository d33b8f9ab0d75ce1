/**
 * The OpenTelemetry SDK's side of tracing: loaded by startTracing (src/adapters/tracing/index.ts) only when tracing is
 * on, so a process that does not trace never loads the SDK, its exporters or their protobuf definitions.
 */
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OTLPJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
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
} from '@temporalio/interceptors-opentelemetry';
import type { Logger } from '../../base/log.js';

import type { Tracing } from './tracing.js';
import { TRACER_NAME, type ExportSettings, type TracingConfig } from './settings.js';

const SERVICE_VERSION = '0.1.0';

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

let users = 0;

/** Registers the context manager and propagators the first time a tracing app starts in this process. */
function acquireGlobals(): void {
  users += 1;
  if (users > 1) return;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
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

/** Starts the SDK for `settings` (tracing is on): its provider, exporter and the process-wide context parts. */
export function createTracing(c: TracingConfig, settings: ExportSettings, logger: Logger): Tracing {
  const resource = Resource.default().merge(
    new Resource({
      ...c.OTEL_RESOURCE_ATTRIBUTES,
      [ATTR_SERVICE_NAME]: c.OTEL_SERVICE_NAME,
      [ATTR_SERVICE_VERSION]: SERVICE_VERSION,
    }),
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
  logger.info(
    {
      exporter: settings.exporter,
      ...(settings.exporter === 'otlp' ? { url: settings.url, protocol: settings.protocol } : {}),
      sampler: c.OTEL_TRACES_SAMPLER,
      serviceName: c.OTEL_SERVICE_NAME,
    },
    'tracing on',
  );
  return {
    tracer,
    processor,
    resource,
    settings,
    clientInterceptors: () => [new OpenTelemetryWorkflowClientInterceptor({ tracer })],
    workerInterceptors: () => ({
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer }),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
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
