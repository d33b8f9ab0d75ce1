/** What every process of the service reads: its mode, its roles, its logs, its metrics and probes, its shutdown. */
import { z } from 'zod';
import { LOG_FORMATS } from '../log.js';
import { nonEmpty, port, positiveInt } from './fields.js';

export const processSchema = {
  /**
   * `production`: no local-stack defaults for the addresses (PRODUCTION_REQUIRED must be set). Anything else
   * (`development`, `test`, ...) keeps them.
   */
  NODE_ENV: nonEmpty.default('development'),
  /** Port of the Prometheus /metrics endpoint; 0 disables it. */
  METRICS_PORT: port.default(9464),
  /** Interface the /metrics endpoint listens on (0.0.0.0 in containers). */
  METRICS_HOST: nonEmpty.default('127.0.0.1'),
  /**
   * Total milliseconds a SIGTERM/SIGINT shutdown may take; past it the process logs what was still stopping and
   * exits non-zero. Keep it above WORKER_SHUTDOWN_GRACE_MS and below the orchestrator's kill grace period.
   */
  SHUTDOWN_DEADLINE_MS: positiveInt.default(30_000),
  /** What this process runs: the Temporal worker, the Kafka bridge, or both (comma-separated). */
  FULFILMENT_ROLES: nonEmpty
    .default('worker,bridge')
    .transform((v) => v.split(',').map((r) => r.trim()))
    .pipe(z.array(z.enum(['worker', 'bridge'], { message: 'worker, bridge or worker,bridge' })).min(1)),
  /** pino log level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** How log lines are written: json, pretty (readable), or auto — pretty on a terminal, JSON anywhere else. */
  LOG_FORMAT: z.enum(LOG_FORMATS, { message: 'auto, json or pretty' }).default('auto'),
  // ---- Tracing: OpenTelemetry's standard variables (src/adapters/tracing/). Off unless OTEL_TRACES_EXPORTER or an
  // OTLP endpoint is set; OTEL_SDK_DISABLED=true keeps it off whatever else is set.
};
