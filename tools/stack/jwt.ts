/**
 * JSON Web Tokens signed with ES256 (ECDSA P-256, SHA-256) by a key the stack makes, and the JSON Web Key Set that
 * publishes its public half: what the Temporal server's default JWT claim mapper verifies an API key against
 * (`global.authorization.jwtKeyProvider.keySourceURIs`). node:crypto only.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface SigningKey {
  /** The key id tokens name in their header (`kid`) and the key set names the public key by. */
  kid: string;
  privateKey: KeyObject;
}

/** A signing key from its PEM text: the key id is derived from the public key, so the same key always has the same id. */
export function signingKeyFromPem(pem: string): SigningKey {
  const privateKey = createPrivateKey(pem);
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return { kid: createHash('sha256').update(spki).digest('base64url').slice(0, 16), privateKey };
}

/** A new P-256 key (not written anywhere): for a signer nobody trusts. */
export function newSigningKey(): SigningKey {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return signingKeyFromPem(privateKey.export({ format: 'pem', type: 'pkcs8' }).toString());
}

/** The key in `file` (PKCS#8 PEM), made once (mode 0600) and kept, so tokens signed earlier stay valid. */
export function ensureSigningKey(file: string): SigningKey {
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  return signingKeyFromPem(readFileSync(file, 'utf8'));
}

/** The key set that publishes `key`'s public half. */
export function jwks(key: SigningKey): { keys: Record<string, unknown>[] } {
  const jwk = createPublicKey(key.privateKey).export({ format: 'jwk' });
  return { keys: [{ ...jwk, kid: key.kid, alg: 'ES256', use: 'sig' }] };
}

const part = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A compact JWS: header `{alg: ES256, typ: JWT, kid}`, the claims, and the signature as JWS wants it (r ‖ s). */
export function signJwt(key: SigningKey, claims: Record<string, unknown>): string {
  const input = `${part({ alg: 'ES256', typ: 'JWT', kid: key.kid })}.${part(claims)}`;
  const signature = sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

/** The header and claims of a compact JWS, unverified; undefined when `token` is not one. */
export function decodeJwt(
  token: string,
): { header: Record<string, unknown>; claims: Record<string, unknown> } | undefined {
  const [header, claims, signature] = token.trim().split('.');
  if (!header || !claims || signature === undefined) return undefined;
  try {
    return {
      header: JSON.parse(Buffer.from(header, 'base64url').toString()) as Record<string, unknown>,
      claims: JSON.parse(Buffer.from(claims, 'base64url').toString()) as Record<string, unknown>,
    };
  } catch {
    return undefined;
  }
}
