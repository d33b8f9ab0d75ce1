/**
 * What it takes to reach the stack's TLS Temporal (services/temporal-tls.ts), made by the stack and kept in
 * `<state>/temporal-tls/`: a CA of its own (`tls/ca/ca.crt`), a server certificate it signs for 127.0.0.1 and
 * localhost, a client certificate for the service (`tls/client.crt`, CN `fulfilment`), an ES256 signing key
 * (`auth/signing.key`), the key set that publishes it (`auth/jwks.json`), and two API keys signed with it: the
 * service's (`auth/service.jwt`, `<namespace>:write`) and the stack's own (`auth/admin.jwt`, the system admin).
 * Everything is made when missing and kept otherwise, so a client holding the files keeps working across restarts.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import type { StackPlan } from './addresses.js';
import { decodeJwt, ensureSigningKey, jwks, signJwt, type SigningKey } from './jwt.js';
import { stateDir } from './paths.js';
import { ensureClientCertificate, ensureServerCertificates } from './tls.js';

/** The permissions claim the server reads (global.authorization.permissionsClaimName). */
export const PERMISSIONS_CLAIM = 'permissions';
/** The server's own namespace: `temporal-system:admin` is the system-wide admin role. */
export const SYSTEM_NAMESPACE = 'temporal-system';
/** The client certificate's common name. */
export const CLIENT_NAME = 'fulfilment';

const TOKEN_DAYS = 30;
const RENEW_TOKEN_DAYS = 7;

export const temporalTlsDir = (): string => join(stateDir(), 'temporal-tls');
const tlsDir = (): string => join(temporalTlsDir(), 'tls');
const authDir = (): string => join(temporalTlsDir(), 'auth');

/** Where each file is (`stack status` prints them); nothing is made by asking. */
export interface TemporalTlsFiles {
  /** The CA that signed the server's and the client's certificates (TEMPORAL_TLS_SERVER_CA_CERT_PATH). */
  caFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  /** TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH. */
  clientCertFile: string;
  clientKeyFile: string;
  signingKeyFile: string;
  jwksFile: string;
  /** The service's API key (TEMPORAL_API_KEY): `<namespace>:write`. */
  apiKeyFile: string;
  /** The stack's own API key: `temporal-system:admin` (registers the namespace and the search attributes). */
  adminApiKeyFile: string;
}

export function temporalTlsFiles(): TemporalTlsFiles {
  return {
    caFile: join(tlsDir(), 'ca', 'ca.crt'),
    serverCertFile: join(tlsDir(), 'server.crt'),
    serverKeyFile: join(tlsDir(), 'server.key'),
    clientCertFile: join(tlsDir(), 'client.crt'),
    clientKeyFile: join(tlsDir(), 'client.key'),
    signingKeyFile: join(authDir(), 'signing.key'),
    jwksFile: join(authDir(), 'jwks.json'),
    apiKeyFile: join(authDir(), 'service.jwt'),
    adminApiKeyFile: join(authDir(), 'admin.jwt'),
  };
}

/** The service's permissions: what the worker and the bridge call needs `write` on its namespace. */
export const servicePermissions = (plan: StackPlan): string[] => [`${plan.temporalTls.namespace}:write`];
const adminPermissions = (): string[] => [`${SYSTEM_NAMESPACE}:admin`];

/** An API key (a JWT) for `subject` with `permissions`, signed by `key`, valid for `ttlSeconds`. */
export function mintApiKey(
  key: SigningKey,
  subject: string,
  permissions: string[],
  ttlSeconds = TOKEN_DAYS * 86_400,
): string {
  const now = Math.floor(Date.now() / 1000);
  return signJwt(key, { sub: subject, [PERMISSIONS_CLAIM]: permissions, iat: now, exp: now + ttlSeconds });
}

/** Whether the token in `file` was signed by `key`, grants `permissions` to `subject` and stays valid RENEW_TOKEN_DAYS more. */
function tokenFits(file: string, key: SigningKey, subject: string, permissions: string[]): boolean {
  if (!existsSync(file)) return false;
  const token = decodeJwt(readFileSync(file, 'utf8'));
  if (!token || token.header.kid !== key.kid || token.claims.sub !== subject) return false;
  if (JSON.stringify(token.claims[PERMISSIONS_CLAIM]) !== JSON.stringify(permissions)) return false;
  return typeof token.claims.exp === 'number' && token.claims.exp - Date.now() / 1000 > RENEW_TOKEN_DAYS * 86_400;
}

function writePrivate(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** Makes what is missing, near expiry or no longer fitting (another namespace, a new key); returns the files. */
export function ensureTemporalTlsCredentials(plan: StackPlan): TemporalTlsFiles {
  const files = temporalTlsFiles();
  const { host } = plan.temporalTls;
  const { ca } = ensureServerCertificates(tlsDir(), [...new Set([host, '127.0.0.1', 'localhost'])]);
  ensureClientCertificate(tlsDir(), ca, CLIENT_NAME);
  mkdirSync(authDir(), { recursive: true, mode: 0o700 });
  const key = ensureSigningKey(files.signingKeyFile);
  const keySet = `${JSON.stringify(jwks(key), null, 2)}\n`;
  if (!existsSync(files.jwksFile) || readFileSync(files.jwksFile, 'utf8') !== keySet)
    writeFileSync(files.jwksFile, keySet);
  for (const [file, subject, permissions] of [
    [files.apiKeyFile, CLIENT_NAME, servicePermissions(plan)],
    [files.adminApiKeyFile, 'stack', adminPermissions()],
  ] as const) {
    if (!tokenFits(file, key, subject, permissions)) writePrivate(file, `${mintApiKey(key, subject, permissions)}\n`);
  }
  return files;
}

/** The signing key the running TLS Temporal trusts (made when missing): tests mint keys of their own with it. */
export function stackSigningKey(): SigningKey {
  return ensureSigningKey(temporalTlsFiles().signingKeyFile);
}
