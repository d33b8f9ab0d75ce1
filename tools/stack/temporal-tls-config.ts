/**
 * The configuration of the stack's TLS Temporal (services/temporal-tls.ts): the Temporal server with
 *
 * - its frontend over TLS, requiring a client certificate its CA signed (`global.tls.frontend`, mTLS);
 * - API keys checked by the server's own authorizer and JWT claim mapper (`global.authorization`: `authorizer` and
 *   `claimMapper` `default`, the key set fetched from `jwtKeyProvider.keySourceURIs`, the roles read from the
 *   `permissions` claim as `<namespace>:<read|write|worker|admin>`); every call on the frontend needs a key whose
 *   roles allow it (GetSystemInfo and the health check excepted), with or without a client certificate;
 * - an internal frontend (plaintext, loopback) for the server's own system worker, which the authorizer lets through
 *   as the system: without it, the worker service would need an API key of its own;
 * - its store in memory (SQLite `mode=memory`): each start is a fresh server with nothing to clean up.
 *
 * Ports: the frontend on `port`, history +1, matching +2, internal frontend +3, worker +6; membership 300 below each.
 */
import type { StackPlan } from './addresses.js';
import { PERMISSIONS_CLAIM, type TemporalTlsFiles } from './temporal-tls-credentials.js';

export const jwksUrl = (plan: StackPlan): string =>
  `http://${plan.temporalTls.host}:${plan.temporalTls.jwksPort}/.well-known/jwks.json`;

/** The services the TLS Temporal's one process runs (`start --service …`). */
export const TLS_SERVER_SERVICES = ['frontend', 'internal-frontend', 'history', 'matching', 'worker'] as const;

function ports(plan: StackPlan): Record<(typeof TLS_SERVER_SERVICES)[number], { grpc: number; membership: number }> {
  const p = plan.temporalTls.port;
  const at = (offset: number) => ({ grpc: p + offset, membership: p + offset - 300 });
  return { frontend: at(0), history: at(1), matching: at(2), 'internal-frontend': at(3), worker: at(6) };
}

/** The server's configuration (YAML is a superset of JSON: written as JSON, read by the server's YAML loader). */
export function tlsServerConfig(plan: StackPlan, files: TemporalTlsFiles): Record<string, unknown> {
  const { host, address } = plan.temporalTls;
  // Both stores in one in-memory SQLite database (one connection, shared by its DSN); the plugin makes the schema.
  const store = {
    sql: {
      pluginName: 'sqlite',
      databaseName: 'temporal-tls',
      connectAddr: host,
      connectProtocol: 'tcp',
      connectAttributes: { mode: 'memory', cache: 'private' },
      maxConns: 1,
      maxIdleConns: 1,
      maxConnLifetime: '1h',
    },
  };
  const services = Object.fromEntries(
    Object.entries(ports(plan)).map(([name, p]) => [
      name,
      { rpc: { grpcPort: p.grpc, membershipPort: p.membership, bindOnIP: host } },
    ]),
  );
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'sqlite-default',
      visibilityStore: 'sqlite-visibility',
      numHistoryShards: 1,
      datastores: { 'sqlite-default': store, 'sqlite-visibility': store },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: host },
      tls: {
        frontend: {
          server: {
            certFile: files.serverCertFile,
            keyFile: files.serverKeyFile,
            clientCaFiles: [files.caFile],
            requireClientAuth: true,
          },
          client: { rootCaFiles: [files.caFile], serverName: 'localhost' },
        },
      },
      authorization: {
        jwtKeyProvider: { keySourceURIs: [jwksUrl(plan)], refreshInterval: '1m' },
        permissionsClaimName: PERMISSIONS_CLAIM,
        authorizer: 'default',
        claimMapper: 'default',
      },
    },
    services,
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: address },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
  };
}
