/**
 * What every Temporal server configuration the stack writes has in common — the Temporal server on PostgreSQL
 * (services/temporal-server.ts) and the TLS Temporal (temporal-tls-config.ts): one cluster, archival off,
 * the services of one process on ports of their own, and the two kinds of store. Written as JSON, which the server's
 * YAML loader reads (YAML is a superset of JSON).
 */

/** A Temporal service of the server binary (`start --service <name>`). */
export type TemporalServiceName = 'frontend' | 'internal-frontend' | 'history' | 'matching' | 'worker';

export interface ServicePorts {
  grpc: number;
  membership: number;
  /** The frontend's HTTP API. */
  http?: number;
}

/** gRPC port offsets from the frontend's; membership ports sit 300 below each, the frontend's HTTP API 10 above. */
const OFFSETS: Record<TemporalServiceName, number> = {
  frontend: 0,
  history: 1,
  matching: 2,
  'internal-frontend': 3,
  worker: 6,
};

/** The ports of `services` laid out from the frontend's `port` (the stack's Temporals sit on known ports). */
export function portsFrom(
  port: number,
  services: readonly TemporalServiceName[],
  opts: { http?: boolean } = {},
): Partial<Record<TemporalServiceName, ServicePorts>> {
  return Object.fromEntries(
    services.map((s) => {
      const grpc = port + OFFSETS[s];
      return [s, { grpc, membership: grpc - 300, ...(s === 'frontend' && opts.http ? { http: port + 10 } : {}) }];
    }),
  );
}

export interface Persistence {
  defaultStore: string;
  visibilityStore: string;
  numHistoryShards: number;
  datastores: Record<string, { sql: Record<string, unknown> }>;
}

/**
 * Both stores in one SQLite database on one connection, as the Temporal CLI's dev server keeps them: a `file` (its
 * schema made by the plugin when the file is new, `setup`) or, without one, memory (each start a fresh server).
 * `pragmas` go to the driver as they are (e.g. `journal_mode: 'wal'`, `synchronous: 'NORMAL'`).
 */
export function sqlitePersistence(o: {
  file?: string;
  memoryName?: string;
  pragmas?: Record<string, string>;
}): Persistence {
  const sql = {
    pluginName: 'sqlite',
    databaseName: o.file ?? o.memoryName ?? 'temporal',
    connectAddr: 'localhost',
    connectProtocol: 'tcp',
    connectAttributes: o.file
      ? { cache: 'private', setup: 'true', ...o.pragmas }
      : { mode: 'memory', cache: 'private', ...o.pragmas },
    maxConns: 1,
    maxIdleConns: 1,
    maxConnLifetime: '1h',
  };
  return {
    defaultStore: 'sqlite-default',
    visibilityStore: 'sqlite-default',
    numHistoryShards: 1,
    datastores: { 'sqlite-default': { sql } },
  };
}

/**
 * A one-cluster configuration: `services` (the ports each binds on `host`), `persistence`, and optionally the file of
 * dynamic configuration the server polls and `global` settings beside membership (TLS, authorization).
 */
export function temporalServerConfig(o: {
  host: string;
  services: Partial<Record<TemporalServiceName, ServicePorts>>;
  persistence: Persistence;
  dynamicConfigFile?: string;
  global?: Record<string, unknown>;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
}): Record<string, unknown> {
  const frontend = o.services.frontend;
  if (!frontend) throw new Error('a Temporal server configuration needs a frontend');
  const rpc = (s: ServicePorts) => ({
    rpc: {
      grpcPort: s.grpc,
      membershipPort: s.membership,
      bindOnIP: o.host,
      ...(s.http ? { httpPort: s.http } : {}),
    },
  });
  return {
    log: { stdout: true, level: o.logLevel ?? 'warn' },
    persistence: o.persistence,
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: o.host }, ...o.global },
    ...(o.dynamicConfigFile ? { dynamicConfigClient: { filepath: o.dynamicConfigFile, pollInterval: '10s' } } : {}),
    services: Object.fromEntries(Object.entries(o.services).map(([name, p]) => [name, rpc(p)])),
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `${o.host}:${frontend.grpc}`,
          ...(frontend.http ? { httpAddress: `${o.host}:${frontend.http}` } : {}),
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
  };
}

/** A dynamic configuration file's text from key → value (every value applies everywhere). */
export function dynamicConfigText(values: Record<string, unknown>): string {
  return `${JSON.stringify(
    Object.fromEntries(Object.entries(values).map(([k, value]) => [k, [{ value }]])),
    null,
    2,
  )}\n`;
}

const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
/** A word as the shell reads it: quoted unless it is plain (a flag, a name). */
const shellWord = (s: string): string => (/^[A-Za-z0-9_.,:=/@%+-]+$/.test(s) ? s : shellQuote(s));

/** The arguments that start the Temporal server binary on the configuration under `root` (one `service`, or all). */
export function serverStartArgs(root: string, service?: string): string[] {
  return [
    '--root',
    root,
    '--config',
    'config',
    '--env',
    'development',
    '--allow-no-auth',
    'start',
    ...(service ? ['--service', service] : []),
  ];
}

/** The shell line that runs `command` with `args`, each quoted where the shell would read it otherwise. */
export function shellLine(command: string, args: readonly string[]): string {
  return [shellQuote(command), ...args.map(shellWord)].join(' ');
}

/** The shell line that starts the Temporal server binary `server` on the configuration under `root`. */
export function serverStartLine(server: string, root: string, service?: string): string {
  return shellLine(server, serverStartArgs(root, service));
}

/** The shell line that starts the Web UI server `ui` on the configuration under `root`, in the background. */
export function uiStartLine(ui: string, root: string): string {
  return `${shellQuote(ui)} --root ${shellQuote(root)} --config config --env development start &`;
}
