/**
 * The stack's TLS Temporal without running it: the API keys it signs verify against the key set it publishes (as the
 * server's JWT claim mapper verifies them: ES256, the key found by `kid`), and its generated configuration asks the
 * server for mTLS, the default authorizer and claim mapper, and ports clear of the plaintext Temporal's.
 */
import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { planFromEnv } from '../../tools/stack/addresses.js';
import { decodeJwt, jwks, newSigningKey, signJwt } from '../../tools/stack/jwt.js';
import { jwksUrl, tlsServerConfig } from '../../tools/stack/temporal-tls-config.js';
import { mintApiKey, servicePermissions, temporalTlsFiles } from '../../tools/stack/temporal-tls-credentials.js';

describe('API keys signed by the stack', () => {
  it('verify against the published key set, and carry the subject, the permissions and an expiry', () => {
    const key = newSigningKey();
    const token = mintApiKey(key, 'fulfilment', ['default:write'], 3600);
    const [header, claims, signature] = token.split('.');
    const published = jwks(key).keys[0] as JsonWebKey & { kid: string; alg: string };
    expect(published).toMatchObject({ kty: 'EC', crv: 'P-256', kid: key.kid, alg: 'ES256', use: 'sig' });
    expect(published).not.toHaveProperty('d');
    const ok = verify(
      'sha256',
      Buffer.from(`${header}.${claims}`),
      { key: createPublicKey({ key: published, format: 'jwk' }), dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature!, 'base64url'),
    );
    expect(ok).toBe(true);
    const decoded = decodeJwt(token)!;
    expect(decoded.header).toEqual({ alg: 'ES256', typ: 'JWT', kid: key.kid });
    expect(decoded.claims).toMatchObject({ sub: 'fulfilment', permissions: ['default:write'] });
    expect((decoded.claims.exp as number) - (decoded.claims.iat as number)).toBe(3600);
  });

  it("a key signed by another key does not verify against the stack's key set", () => {
    const [stack, other] = [newSigningKey(), newSigningKey()];
    const token = signJwt(other, { sub: 'x' });
    const [header, claims, signature] = token.split('.');
    const published = createPublicKey({ key: jwks(stack).keys[0] as JsonWebKey, format: 'jwk' });
    expect(
      verify(
        'sha256',
        Buffer.from(`${header}.${claims}`),
        { key: published, dsaEncoding: 'ieee-p1363' },
        Buffer.from(signature!, 'base64url'),
      ),
    ).toBe(false);
    expect(decodeJwt('not-a-jwt')).toBeUndefined();
  });
});

describe("the TLS Temporal's configuration", () => {
  const plan = planFromEnv({});
  const files = temporalTlsFiles();
  const config = tlsServerConfig(plan, files) as {
    global: { tls: { frontend: { server: Record<string, unknown> } }; authorization: Record<string, unknown> };
    services: Record<string, { rpc: { grpcPort: number; membershipPort: number; bindOnIP: string } }>;
    persistence: {
      defaultStore: string;
      visibilityStore: string;
      datastores: Record<string, { sql: { pluginName: string; connectAttributes: Record<string, string> } }>;
    };
  };

  it('serves the frontend over TLS that requires a client certificate of its CA', () => {
    expect(config.global.tls.frontend.server).toEqual({
      certFile: files.serverCertFile,
      keyFile: files.serverKeyFile,
      clientCaFiles: [files.caFile],
      requireClientAuth: true,
    });
  });

  it("checks API keys with the default authorizer and JWT claim mapper against the stack's key set", () => {
    expect(config.global.authorization).toMatchObject({
      authorizer: 'default',
      claimMapper: 'default',
      permissionsClaimName: 'permissions',
    });
    expect(config.global.authorization.jwtKeyProvider).toMatchObject({ keySourceURIs: [jwksUrl(plan)] });
    expect(jwksUrl(plan)).toBe('http://127.0.0.1:7263/.well-known/jwks.json');
    expect(servicePermissions(plan)).toEqual(['default:write']);
  });

  it('runs an internal frontend for its system worker, on loopback ports clear of the plaintext Temporal, its store in memory', () => {
    expect(Object.keys(config.services).sort()).toEqual([
      'frontend',
      'history',
      'internal-frontend',
      'matching',
      'worker',
    ]);
    const ports = Object.values(config.services).flatMap((s) => [s.rpc.grpcPort, s.rpc.membershipPort]);
    expect(new Set(ports).size).toBe(ports.length);
    expect(config.services.frontend!.rpc.grpcPort).toBe(7253);
    // The plaintext Temporal server's: 7233-7239, 6933-6939, HTTP 7243; the key set's: 7263.
    for (const p of ports) expect(p === 7263 || (p >= 7233 && p <= 7243) || (p >= 6933 && p <= 6939)).toBe(false);
    expect(Object.values(config.services).every((s) => s.rpc.bindOnIP === '127.0.0.1')).toBe(true);
    // Both stores in the one datastore.
    expect(
      Object.values(config.persistence.datastores).map((d) => [d.sql.pluginName, d.sql.connectAttributes.mode]),
    ).toEqual([['sqlite', 'memory']]);
    expect(Object.keys(config.persistence.datastores)).toEqual([config.persistence.defaultStore]);
    expect(config.persistence.visibilityStore).toBe(config.persistence.defaultStore);
  });
});
