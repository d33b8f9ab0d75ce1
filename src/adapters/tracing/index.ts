/**
 * OpenTelemetry tracing, configured by the standard OTEL_* variables (validated in src/base/config.ts). Off unless
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
import type { Logger } from '../../base/log.js';
import { exportSettings, type TracingConfig } from './settings.js';
import type { Tracing } from './tracing.js';

export {
  DEFAULT_OTLP_TRACES_URL,
  TRACER_NAME,
  exportSettings,
  type ExportSettings,
  type TracingConfig,
} from './settings.js';
export type { Tracing } from './tracing.js';

/**
 * Starts tracing as configured, or resolves to undefined (nothing started, nothing loaded) when it is off. The SDK
 * (src/adapters/tracing/sdk.ts) is imported only here, when tracing is on.
 */
export async function startTracing(c: TracingConfig, logger: Logger): Promise<Tracing | undefined> {
  const settings = exportSettings(c);
  if (!settings) return undefined;
  const { createTracing } = await import('./sdk.js');
  return createTracing(c, settings, logger);
}
