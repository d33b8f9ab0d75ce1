/**
 * What a role (the worker, src/roles/worker/role.ts; the bridge, src/roles/bridge/role.ts) is given to start and hands
 * back to the composition (src/app.ts): the shared configuration, logger, metrics, readiness and Temporal client in;
 * its lifecycle (what it started, to stop last first) and whether it stopped for good on its own, out. Readiness checks
 * a role registers on `health`.
 */
import type { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { Config } from '../base/config.js';
import type { CheckResult, Health } from '../base/health.js';
import { withTimeout } from '../base/timeout.js';
import { permanentKafkaFailure } from '../adapters/kafka/client.js';
import type { Logger } from '../base/log.js';
import type { Metrics } from '../base/metrics.js';
import { PermanentStartupError, waitForDependency } from '../base/startup.js';
import type { Db } from '../adapters/store/db.js';
import { connectClient } from '../domain/temporal.js';
import type { Lifecycle } from '../base/lifecycle.js';
import type { Tracing } from '../adapters/tracing/index.js';

export interface RoleContext {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  health: Health;
  /** The process's shared Temporal client (readiness, schedules). */
  client: Client;
  /** Tracing as configured by the OTEL_* variables; undefined when off. */
  tracing?: Tracing;
  /** Aborting it gives up start-up while a dependency is still down (StartupAborted). */
  signal?: AbortSignal;
  /** Tells a Temporal failure no wait can cure (an untrusted certificate, a refused key) from an outage. */
  permanent: { permanent: (err: unknown) => PermanentStartupError | undefined };
}

export interface StartedRole {
  /** What the role started, stopped last first (src/base/lifecycle.ts). */
  lifecycle: Lifecycle;
  /** Resolves (never rejects) once the role stopped for good on its own, with why. */
  failed?: Promise<Error>;
  /** The worker's own connection (a bridge beside it starts runs eagerly on it). */
  connection?: NativeConnection;
  /** The worker's PostgreSQL pool. */
  db?: Db;
}

/** Longest a readiness check's own call (SELECT 1, a Temporal RPC) may take, ms. */
export const CHECK_TIMEOUT_MS = 1500;

/** One readiness probe, bounded by CHECK_TIMEOUT_MS; a failure's reason names `what`. */
export async function probeWithin(what: string, work: Promise<unknown>): Promise<CheckResult> {
  try {
    await withTimeout(work, CHECK_TIMEOUT_MS, `${what} did not answer within ${CHECK_TIMEOUT_MS} ms`);
    return { ok: true };
  } catch (err) {
    const message = (err as Error).message ?? String(err);
    return { ok: false, reason: message.startsWith(what) ? message : `${what}: ${message}` };
  }
}

/**
 * The process's shared Temporal client, connected once Temporal answers (start-up waits for it), with the `temporal`
 * readiness check: a cheap RPC on it, bounded by a deadline (the client's own retries stop there).
 */
export async function connectSharedClient(
  config: Config,
  logger: Logger,
  health: Health,
  signal: AbortSignal | undefined,
  permanent: RoleContext['permanent'],
): Promise<Client> {
  const temporal = `Temporal at ${config.TEMPORAL_ADDRESS}`;
  const client = await waitForDependency(
    temporal,
    health.attempting(temporal, () => connectClient(config)),
    logger,
    signal,
    permanent,
  );
  health.set('temporal', () =>
    probeWithin(
      temporal,
      client.connection.withDeadline(Date.now() + CHECK_TIMEOUT_MS, () =>
        client.connection.workflowService.getSystemInfo({}),
      ),
    ),
  );
  return client;
}

/** A PermanentStartupError for a Kafka failure no wait can cure (permanentKafkaFailure), else undefined. */
export function asPermanentKafkaFailure(err: unknown, config: Config): PermanentStartupError | undefined {
  const why = permanentKafkaFailure(err, config);
  return why === undefined ? undefined : new PermanentStartupError(why, { cause: err });
}
