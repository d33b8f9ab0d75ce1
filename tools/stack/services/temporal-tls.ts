/**
 * `temporal-tls`, on demand: a second Temporal server (go.temporal.io/server, the binary STACK_TEMPORAL=server runs)
 * whose frontend serves TLS only, requires a client certificate signed by its CA (mTLS) and checks an API key on
 * every call with the server's own authorizer and JWT claim mapper (../temporal-tls-config.ts), on ports of its own
 * (127.0.0.1:7253, STACK_TEMPORAL_TLS_PORT) with its own store in memory. The plaintext Temporal every other test uses
 * is not touched. Started by name only (`up --only temporal-tls`, or test/support/temporal-tls.ts), stopped by `down`.
 *
 * The process is ../jwks-launcher.ts: it serves the key set the server verifies API keys against (the server fetches
 * it once as it starts, so it must be served first) and runs the server as its child. After the frontend answers
 * over mTLS, the stack registers the namespace and the service's search attributes with its own admin key.
 */
import { readFileSync, writeFileSync, mkdirSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../../src/base/config.js';
import type { StackPlan } from '../addresses.js';
import { repoRoot, serviceLog } from '../paths.js';
import { waitFor, type PidRecord } from '../proc.js';
import type { Service } from '../service.js';
import { jwksUrl, tlsServerConfig, TLS_SERVER_SERVICES } from '../temporal-tls-config.js';
import {
  ensureTemporalTlsCredentials,
  servicePermissions,
  temporalTlsDir,
  temporalTlsFiles,
  type TemporalTlsFiles,
} from '../temporal-tls-credentials.js';
import { temporalServerPath } from '../tools.js';
import { ensureNamespace, historyAndMatchingAnswer, registerSearchAttributes, withConnection } from './temporal.js';

/** What a client needs to reach the TLS Temporal (`stack status` prints it; `--json`: `temporalTls`). */
export interface TemporalTlsInfo {
  address: string;
  namespace: string;
  /** PEM file of the CA that signed the server's certificate (TEMPORAL_TLS_SERVER_CA_CERT_PATH). */
  caFile: string;
  /** The client certificate and its key (TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH). */
  clientCertFile: string;
  clientKeyFile: string;
  /** File holding the service's API key (TEMPORAL_API_KEY), and the roles it grants. */
  apiKeyFile: string;
  apiKeyPermissions: string[];
  /** The stack's own key (`temporal-system:admin`), for operator commands. */
  adminApiKeyFile: string;
  /** Where the server fetches the key set that verifies API keys. */
  jwksUrl: string;
}

export function temporalTlsInfo(plan: StackPlan): TemporalTlsInfo {
  const f = temporalTlsFiles();
  return {
    address: plan.temporalTls.address,
    namespace: plan.temporalTls.namespace,
    caFile: f.caFile,
    clientCertFile: f.clientCertFile,
    clientKeyFile: f.clientKeyFile,
    apiKeyFile: f.apiKeyFile,
    apiKeyPermissions: servicePermissions(plan),
    adminApiKeyFile: f.adminApiKeyFile,
    jwksUrl: jwksUrl(plan),
  };
}

const configFile = (): string => join(temporalTlsDir(), 'config', 'development.yaml');
const configText = (plan: StackPlan, files: TemporalTlsFiles): string =>
  `${JSON.stringify(tlsServerConfig(plan, files), null, 2)}\n`;

/** The stack's own connection settings: mTLS with the client certificate, and the admin key. */
function adminSettings(plan: StackPlan): Config['temporal'] {
  const f = temporalTlsFiles();
  return loadConfig({
    TEMPORAL_ADDRESS: plan.temporalTls.address,
    TEMPORAL_NAMESPACE: plan.temporalTls.namespace,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: f.caFile,
    // The certificate's DNS name: Node warns when a TLS server name is an IP address.
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
    TEMPORAL_TLS_CLIENT_CERT_PATH: f.clientCertFile,
    TEMPORAL_TLS_CLIENT_KEY_PATH: f.clientKeyFile,
    TEMPORAL_API_KEY: readFileSync(f.adminApiKeyFile, 'utf8').trim(),
  }).temporal;
}

export const temporalTlsService: Service = {
  name: 'temporal-tls',
  address: (plan) => plan.temporalTls.address,
  external: () => false,
  // Its clients need this checkout's CA, client certificate and API keys: another checkout's server trusts none of them.
  shareable: false,
  ports: (plan) => [
    {
      host: plan.temporalTls.host,
      port: plan.temporalTls.port,
      label: 'TLS Temporal frontend',
      env: 'STACK_TEMPORAL_TLS_PORT',
    },
    {
      host: plan.temporalTls.host,
      port: plan.temporalTls.jwksPort,
      label: "TLS Temporal's key set (JWKS)",
      env: 'STACK_TEMPORAL_TLS_PORT',
    },
  ],
  logs: () => [serviceLog('temporal-tls')],
  readyTimeoutMs: 120_000,
  stopSignal: 'SIGTERM',
  stopGraceMs: 20_000,

  /** A server started with another configuration (ports, namespace), or before its certificates were made again. */
  restartReason(rec: PidRecord, plan: StackPlan) {
    const files = temporalTlsFiles();
    if (!existsSync(configFile()) || readFileSync(configFile(), 'utf8') !== configText(plan, files))
      return 'its configuration changed';
    const started = Date.parse(rec.startedAt);
    const certChanged = [files.serverCertFile, files.caFile].some(
      (f) => !existsSync(f) || statSync(f).mtimeMs > started,
    );
    return certChanged ? 'its certificates were made again' : undefined;
  },

  async prepare(plan) {
    const server = await temporalServerPath();
    const files = ensureTemporalTlsCredentials(plan);
    mkdirSync(join(temporalTlsDir(), 'config'), { recursive: true, mode: 0o700 });
    writeFileSync(configFile(), configText(plan, files), { mode: 0o600 });
    const { host, jwksPort } = plan.temporalTls;
    const start = [
      '--root',
      temporalTlsDir(),
      '--config',
      'config',
      '--env',
      'development',
      'start',
      ...TLS_SERVER_SERVICES.flatMap((s) => ['--service', s]),
    ];
    return {
      service: 'temporal-tls',
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        join(repoRoot, 'tools', 'stack', 'jwks-launcher.ts'),
        files.jwksFile,
        host,
        String(jwksPort),
        '--',
        server,
        ...start,
      ],
      cwd: repoRoot,
    };
  },

  async ready(plan) {
    try {
      return await withConnection(adminSettings(plan), async (c) => {
        await c.workflowService.getSystemInfo({});
        return true;
      });
    } catch {
      return false;
    }
  },

  async afterReady(plan) {
    // A key set made since the server started (a new signing key) is fetched again within its refresh interval.
    ensureTemporalTlsCredentials(plan);
    const settings = adminSettings(plan);
    await ensureNamespace(settings, 'temporal-tls');
    await waitFor("the TLS Temporal's history and matching services", 120_000, () =>
      historyAndMatchingAnswer(settings),
    );
    await registerSearchAttributes(settings, true, 'temporal-tls');
  },
};
