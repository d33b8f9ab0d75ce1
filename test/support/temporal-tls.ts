/**
 * The local stack's TLS Temporal (tools/stack/services/temporal-tls.ts): a real Temporal server whose frontend
 * requires a client certificate (mTLS) and an API key on every call, started on demand, and how the service's
 * configuration names it.
 */
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { loadConfig } from '../../src/base/config.js';
import { connectClient } from '../../src/domain/temporal.js';
import { stackUp, type TemporalTlsInfo } from '../../tools/stack/index.js';

/** Starts the TLS Temporal when it is not running (a first start takes seconds; later calls return at once). */
export async function tlsTemporal(): Promise<TemporalTlsInfo> {
  const info = await stackUp({ services: ['temporal-tls'], quiet: true });
  const state = info.services['temporal-tls'];
  if (state.state !== 'running')
    throw new Error(
      `the stack's TLS Temporal is not running (${state.state}${state.note ? `: ${state.note}` : ''}): npm run stack -- up --only temporal-tls`,
    );
  return info.temporalTls;
}

/** The service's API key the stack made (`<namespace>:write`). */
export const serviceApiKey = (info: TemporalTlsInfo): string => readFileSync(info.apiKeyFile, 'utf8').trim();

export interface TlsEnvOptions {
  /** The CA the service trusts (default: the stack's, which signed the server's certificate). */
  caFile?: string;
  /** The client certificate and key (default: the stack's client certificate); null: none. */
  client?: { cert: string; key: string } | null;
  /** TEMPORAL_API_KEY (default: the service's key); null: none. */
  apiKey?: string | null;
  /** Anything else to set (TEMPORAL_TLS_SERVER_NAME, FULFILMENT_ROLES, ...). */
  extra?: Record<string, string>;
}

/**
 * `base` (a scenario's environment) with Temporal reached at the TLS Temporal, configured by the standard TEMPORAL_*
 * variables; whatever `base` says of an API key, a profile or gRPC metadata is dropped.
 */
export function tlsEnv(
  base: Record<string, string>,
  info: TemporalTlsInfo,
  opts: TlsEnvOptions = {},
): Record<string, string> {
  const env: Record<string, string> = {
    ...base,
    TEMPORAL_ADDRESS: info.address,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: opts.caFile ?? info.caFile,
  };
  for (const k of Object.keys(env))
    if (/^TEMPORAL_(API_KEY|PROFILE|CONFIG_FILE|GRPC_META_|TLS_CLIENT_)/.test(k)) delete env[k];
  const client = opts.client === undefined ? { cert: info.clientCertFile, key: info.clientKeyFile } : opts.client;
  if (client)
    Object.assign(env, { TEMPORAL_TLS_CLIENT_CERT_PATH: client.cert, TEMPORAL_TLS_CLIENT_KEY_PATH: client.key });
  const apiKey = opts.apiKey === undefined ? serviceApiKey(info) : opts.apiKey;
  if (apiKey !== null) env.TEMPORAL_API_KEY = apiKey;
  return { ...env, ...opts.extra };
}

/** A client of the TLS Temporal with the service's certificate and key; close it with `client.connection.close()`. */
export async function tlsTemporalClient(base: Record<string, string>, info: TemporalTlsInfo): Promise<Client> {
  return connectClient(loadConfig(tlsEnv(base, info)));
}
