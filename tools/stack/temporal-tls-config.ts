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
import { portsFrom, sqlitePersistence, temporalServerConfig } from './temporal-config.js';
import { PERMISSIONS_CLAIM, type TemporalTlsFiles } from './temporal-tls-credentials.js';

export const jwksUrl = (plan: StackPlan): string =>
  `http://${plan.temporalTls.host}:${plan.temporalTls.jwksPort}/.well-known/jwks.json`;

/** The services the TLS Temporal's one process runs (`start --service …`). */
export const TLS_SERVER_SERVICES = ['frontend', 'internal-frontend', 'history', 'matching', 'worker'] as const;

/** The server's configuration. */
export function tlsServerConfig(plan: StackPlan, files: TemporalTlsFiles): Record<string, unknown> {
  return temporalServerConfig({
    host: plan.temporalTls.host,
    services: portsFrom(plan.temporalTls.port, TLS_SERVER_SERVICES),
    // Both stores in one in-memory SQLite database (one connection, shared by its DSN); the plugin makes the schema.
    persistence: sqlitePersistence({ memoryName: 'temporal-tls' }),
    global: {
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
  });
}
