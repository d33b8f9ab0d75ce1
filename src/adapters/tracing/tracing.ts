/** What a started tracing hands the app (startTracing, src/adapters/tracing/index.ts; made by the SDK side, sdk.ts). */
import type { Tracer } from '@opentelemetry/api';
import type { IResource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type { ExportSettings } from './settings.js';

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
