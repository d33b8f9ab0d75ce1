/**
 * Temporal connections and the workflow bundle. Every connection to Temporal — the worker's NativeConnection, the
 * client's and the bridge's Connection, each CLI command, the bench and the tests — takes its options from
 * temporalConnectionOptions, so TLS, mTLS, the API key and gRPC metadata apply to all of them alike. The workflow
 * bundle is built once per process and reused. Every Client and the worker take their data converter from
 * dataConverter: with PAYLOAD_ENCRYPTION_KEYS set, payloads are encrypted (src/adapters/codec/payload-codec.ts).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Client, Connection, type ClientOptions } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { EncryptionCodec } from '../adapters/codec/payload-codec.js';
// The worker SDK (its Rust core, the bundler) is loaded only where a worker or a replay runs: a bridge-only process
// never loads it, which keeps its memory small (docs/performance.md).
import type {
  InjectedSinks,
  LogLevel,
  NativeConnection,
  ReplayWorkerOptions,
  WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { Config, TemporalTls } from '../base/config.js';
import type { Logger } from '../base/log.js';
import { permanentTemporalError, tlsHandshake } from '../adapters/temporal-refusal.js';
import type { Tracing } from '../adapters/tracing/index.js';
import type { OrderSinks } from '../../workflows/api.js';
import type { OutcomeReport } from '../vocabulary/order.js';

/** `.ts` when this code runs from its sources (tsx), `.js` when it runs as what `npm run build` emitted (dist/). */
const EXT = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
export const WORKFLOWS_PATH = fileURLToPath(new URL(`../../workflows/index${EXT}`, import.meta.url));
/** The OpenTelemetry workflow interceptors, in the bundle only when tracing is on. */
export const TRACING_INTERCEPTORS_PATH = fileURLToPath(
  new URL(`../../workflows/tracing-interceptors${EXT}`, import.meta.url),
);

/**
 * The workflow bundles `npm run build` prebuilds beside the emitted JavaScript (dist/workflows/bundle*.js), plain and
 * with the tracing interceptors: a worker run from dist/ loads one instead of bundling at start-up (seconds, and
 * the bundler's memory). Sources always bundle afresh, so a developer's edit is never hidden by a stale bundle.
 */
export function prebuiltBundlePath(tracing: boolean): string {
  return fileURLToPath(new URL(`../workflows/bundle${tracing ? '-traced' : ''}.js`, import.meta.url));
}

const bundles = new Map<string, Promise<WorkflowBundleWithSourceMap>>();

/**
 * The workflow code bundled for the worker sandbox; built on first use (a few seconds), then cached. With `tracing`,
 * the bundle also holds the OpenTelemetry workflow interceptors (the worker must then register their `exporter` sink:
 * src/adapters/tracing/index.ts workerSinks); without, the sandbox runs no tracing code at all. Another `workflowsPath`
 * (an entry point exporting the same workflow types) is bundled the same way: `fulfilment workflow replay --workflows`
 * replays a history against a changed copy of the code with it.
 */
export function workflowBundle(
  opts: { workflowsPath?: string; tracing?: boolean } = {},
): Promise<WorkflowBundleWithSourceMap> {
  const workflowsPath = opts.workflowsPath ?? WORKFLOWS_PATH;
  const tracing = opts.tracing ?? false;
  const key = `${tracing ? 'traced' : 'plain'}:${workflowsPath}`;
  let bundle = bundles.get(key);
  const prebuilt = prebuiltBundlePath(tracing);
  if (!bundle && EXT === '.js' && workflowsPath === WORKFLOWS_PATH && existsSync(prebuilt)) {
    bundle = readFile(prebuilt, 'utf8').then(async (code) => ({
      code,
      sourceMap: existsSync(`${prebuilt}.map`) ? await readFile(`${prebuilt}.map`, 'utf8') : '',
    }));
    bundles.set(key, bundle);
  }
  if (!bundle) {
    bundle = buildWorkflowBundle(workflowsPath, tracing);
    bundles.set(key, bundle);
    // A failed build (a path without workflows) is not kept: the next call tries again.
    bundle.catch(() => bundles.delete(key));
  }
  return bundle;
}

/** What running the workflow code takes besides a connection: the same for the worker and for every replay. */
export type WorkflowCodeOptions = Pick<
  ReplayWorkerOptions,
  'workflowBundle' | 'interceptors' | 'sinks' | 'dataConverter' | 'plugins'
>;

/**
 * The options every Worker that runs this service's workflows is created with (src/roles/worker/temporal-worker.ts) and
 * every replay of their histories runs with (`fulfilment workflow replay`, the replay gate over test/histories/): the
 * bundle and whatever shapes how the workflow code runs or reads its payloads (interceptors, sinks, data converter,
 * plugins) belong here, in one place, so a replay decides exactly as the worker does.
 */
export async function workflowCodeOptions(
  opts: {
    config?: Pick<Config, 'payloadEncryption'>;
    workflowsPath?: string;
    tracing?: Tracing;
    reportOutcome?: (report: OutcomeReport) => void;
  } = {},
): Promise<WorkflowCodeOptions> {
  const { tracing } = opts;
  const converter = opts.config ? dataConverter(opts.config) : undefined;
  // Outcomes the workflow decides itself (duplicates, stale events), logged and counted outside the history; never
  // on replay, so a replay (which passes no reporter) only needs the sink to exist.
  const report = opts.reportOutcome ?? (() => undefined);
  const outcomes: InjectedSinks<OrderSinks> = {
    outcomes: { report: { fn: (_info, r: OutcomeReport) => report(r), callDuringReplay: false } },
  };
  return {
    ...(converter ? { dataConverter: converter } : {}),
    workflowBundle: await workflowBundle({
      ...(opts.workflowsPath ? { workflowsPath: opts.workflowsPath } : {}),
      tracing: tracing !== undefined,
    }),
    // Tracing: RunActivity spans (children of the workflow's StartActivity) and the sink the workflow spans leave by.
    ...(tracing ? { interceptors: tracing.workerInterceptors() } : {}),
    sinks: { ...outcomes, ...(tracing ? tracing.workerSinks() : {}) },
  };
}

/** Bundles the workflow code at `workflowsPath` (with the tracing interceptors when `tracing`): what a worker runs. */
export async function buildWorkflowBundle(
  workflowsPath: string,
  tracing: boolean,
): Promise<WorkflowBundleWithSourceMap> {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  return bundleWorkflowCode({
    workflowsPath,
    logger: quietBundlerLogger,
    ...(tracing ? { workflowInterceptorModules: [TRACING_INTERCEPTORS_PATH] } : {}),
  });
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (m: string, a?: unknown) => console.warn(m, a ?? ''),
  error: (m: string, a?: unknown) => console.error(m, a ?? ''),
};

/** The options both `Connection.connect` (client) and `NativeConnection.connect` (worker) take, from the configuration. */
export interface TemporalConnectionOptions {
  address: string;
  /** Absent: plaintext. */
  tls?: TemporalTls | false;
  /** Sent as `authorization: Bearer <apiKey>` on every call. */
  apiKey?: string;
  metadata?: Record<string, string>;
}

/** Connection options for Temporal as configured (src/base/config.ts: TEMPORAL_* variables over the envconfig profile). */
export function temporalConnectionOptions(config: Pick<Config, 'temporal'>): TemporalConnectionOptions {
  const t = config.temporal;
  return {
    address: t.address,
    ...(t.tls !== undefined ? { tls: t.tls } : {}),
    ...(t.apiKey !== undefined ? { apiKey: t.apiKey } : {}),
    ...(t.metadata ? { metadata: { ...t.metadata } } : {}),
  };
}

type ClientConnectionOptions = NonNullable<Parameters<typeof Connection.connect>[0]>;

export { permanentTemporalError } from '../adapters/temporal-refusal.js';

/**
 * `Connection.connect` with the configured options (plus `extra`: interceptors, channel arguments, timeouts). A
 * failure waiting cannot cure (an untrusted server certificate, a refused client certificate or API key) is thrown
 * as a PermanentStartupError naming the variables to check; anything else (the server is down) as it came.
 */
export async function connectTemporal(
  config: Pick<Config, 'temporal'>,
  extra: Omit<ClientConnectionOptions, keyof TemporalConnectionOptions> = {},
): Promise<Connection> {
  const options = { ...temporalConnectionOptions(config), ...extra };
  try {
    await probe(options, config.temporal.namespace);
    return await Connection.connect(options);
  } catch (err) {
    throw permanentTemporalError(config, err) ?? err;
  }
}

/**
 * What connecting first checks, so that a refusal comes back as an error with a code
 * (src/adapters/temporal-refusal.ts): over TLS, the handshake itself (node:tls says why it failed); with TLS or an API
 * key, calls that do not wait (no retries), whose gRPC status says whether the credentials were refused —
 * GetSystemInfo, which a server asks no permission for, then the namespace's description, which needs the key's role in
 * it (a namespace that does not exist yet is not a refusal). grpc-js's wait for a ready channel (Connection.connect)
 * would end in "Failed to connect before the deadline" after the whole connect timeout whatever the reason, and the
 * worker's Rust core reports a refused client certificate only some of the time (TLS 1.3 sends the alert after the
 * handshake, and its first request often meets the closed connection instead) and a refused key only in words.
 */
async function probe(options: ClientConnectionOptions & TemporalConnectionOptions, namespace: string): Promise<void> {
  if (options.tls) await tlsHandshake(options.address, options.tls);
  if (!options.tls && options.apiKey === undefined) return;
  const first = Connection.lazy({ ...options, interceptors: [] });
  const call = async (rpc: () => Promise<unknown>, fine: number) => {
    try {
      await first.withDeadline(Date.now() + 10_000, rpc);
    } catch (err) {
      if ((err as { code?: number }).code !== fine) throw err;
    }
  };
  try {
    // An old server without GetSystemInfo answers UNIMPLEMENTED (12): reachable, and Connection.connect accepts it.
    await call(() => first.workflowService.getSystemInfo({}), 12);
    await call(() => first.workflowService.describeNamespace({ namespace }), 5); // 5 = NOT_FOUND
  } finally {
    await first.close().catch(() => undefined);
  }
}

/** The worker's NativeConnection (Rust core) with the configured options; permanent failures as in connectTemporal. */
export async function connectNative(config: Pick<Config, 'temporal'>): Promise<NativeConnection> {
  const options = temporalConnectionOptions(config);
  try {
    await probe(options, config.temporal.namespace);
    const { NativeConnection } = await import('@temporalio/worker');
    return await NativeConnection.connect(options);
  } catch (err) {
    throw permanentTemporalError(config, err) ?? err;
  }
}

/** What a Client or Worker needs of the configuration: the connection settings and the payload keys. */
export type TemporalClientConfig = Pick<Config, 'temporal' | 'payloadEncryption'>;

const converters = new WeakMap<object, DataConverter>();

/**
 * The data converter of every Client, the worker and the replayer: the default payload converter and, when
 * payload encryption keys are configured, the encryption codec (undefined otherwise: the SDK's default). One per
 * key set, so all clients of a process share it.
 */
export function dataConverter(config: Pick<Config, 'payloadEncryption'>): DataConverter | undefined {
  const keys = config.payloadEncryption;
  if (!keys) return undefined;
  let converter = converters.get(keys);
  if (!converter) converters.set(keys, (converter = { payloadCodecs: [new EncryptionCodec(keys)] }));
  return converter;
}

/** A Client on `connection` for the configured namespace, with the configured data converter. */
export function temporalClient(
  config: TemporalClientConfig,
  connection: Connection | NativeConnection,
  extra: Pick<ClientOptions, 'interceptors'> = {},
): Client {
  const converter = dataConverter(config);
  return new Client({
    connection,
    namespace: config.temporal.namespace,
    ...extra,
    ...(converter ? { dataConverter: converter } : {}),
  });
}

/** A client on a connection of its own, to the configured namespace; close it with `client.connection.close()`. */
export async function connectClient(
  config: TemporalClientConfig,
  extra: Omit<ClientConnectionOptions, keyof TemporalConnectionOptions> = {},
): Promise<Client> {
  return temporalClient(config, await connectTemporal(config, extra));
}

/**
 * Routes the Temporal SDK's own logs (worker state, activity failures) into our logger, at WARN and above, and leaves
 * signals to the process: by default the SDK's runtime shuts every worker down itself on SIGINT/SIGTERM/SIGQUIT/SIGUSR2,
 * beside the service's own shutdown, which stops the bridge before the worker (nothing new reaches a worker that
 * drains) and would then find the worker already stopped — "stopped unexpectedly". `sdkStopsOnSignals` keeps the
 * SDK's handling, for a process with no signal handling of its own (the demo).
 */
export async function installTemporalRuntime(
  logger: Logger,
  level: LogLevel = 'WARN',
  sdkStopsOnSignals = false,
): Promise<void> {
  const log = logger.child({ component: 'temporal-sdk' });
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  Runtime.install({
    ...(sdkStopsOnSignals ? {} : { shutdownSignals: [] }),
    logger: new DefaultLogger(level, ({ level: l, message, meta }) => {
      const method = l === 'ERROR' ? 'error' : l === 'WARN' ? 'warn' : 'debug';
      log[method](meta ?? {}, message);
    }),
  });
}
