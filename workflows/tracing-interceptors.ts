/**
 * The workflow side of tracing: Temporal's OpenTelemetry workflow interceptors, bundled into the sandbox only when
 * tracing is on (src/domain/temporal.ts workflowBundle({ tracing: true }) lists this module in the bundler's
 * workflowInterceptorModules; the SDK reads `interceptors` from those modules, not from the workflows module).
 *
 * They make the spans RunWorkflow:<type>, HandleSignal:<signal>, StartActivity:<activity> (children of the context the
 * start and signal headers carry), put the context into each scheduled activity's headers, and hand finished spans
 * to the worker through the `exporter` sink. They add headers, never commands: histories replay the same with or
 * without them (test/integration/tracing.int.test.ts replays every checked-in history with them).
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new OpenTelemetryInboundInterceptor()],
  outbound: [new OpenTelemetryOutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
