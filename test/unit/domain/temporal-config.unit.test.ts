/**
 * Temporal connection settings: the envconfig profile with the TEMPORAL_* variables over it (src/base/config.ts), the
 * options every connection takes (src/domain/temporal.ts), and which connect failures stop start-up
 * (src/adapters/temporal-refusal.ts). Certificates are made with openssl for this file; nothing connects (the
 * handshake: temporal-handshake.unit.test.ts; the real connections: temporal-security.int.test.ts).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/base/config.js';
import { PermanentStartupError } from '../../../src/base/startup.js';
import { permanentTemporalError, temporalConnectionOptions } from '../../../src/domain/temporal.js';
import { configFailure } from '../../support/config-failure.js';
import { makeTestPki, type TestPki } from '../../support/tls-certs.js';

let pki: TestPki;
beforeAll(async () => {
  pki = await makeTestPki();
});
afterAll(() => pki?.remove());

const failure = configFailure;

function profileFile(name: string, toml: string): string {
  const file = join(pki.dir, name);
  writeFileSync(file, toml);
  return file;
}

describe('Temporal settings from TEMPORAL_* variables', () => {
  it('without any: plaintext to the local default, as before', () => {
    const c = loadConfig({});
    expect(c.temporal).toEqual({ address: '127.0.0.1:7233', namespace: 'default', addressFrom: 'the local default' });
    expect(temporalConnectionOptions(c)).toEqual({ address: '127.0.0.1:7233' });
    expect(loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233', TEMPORAL_NAMESPACE: 'prod' }).temporal).toMatchObject({
      address: 'temporal:7233',
      namespace: 'prod',
      addressFrom: 'TEMPORAL_ADDRESS',
    });
  });

  it('mTLS: the CA, the server name and the client certificate pair, read from their files', () => {
    const c = loadConfig({
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.ca,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.client.cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.client.key,
    });
    expect(temporalConnectionOptions(c)).toEqual({
      address: 'temporal.internal:7233',
      tls: {
        serverNameOverride: 'localhost',
        serverRootCACertificate: readFileSync(pki.ca),
        clientCertPair: { crt: readFileSync(pki.client.cert), key: readFileSync(pki.client.key) },
      },
    });
  });

  it('PEM text instead of files (the _DATA variables)', () => {
    const c = loadConfig({ TEMPORAL_TLS_SERVER_CA_CERT_DATA: readFileSync(pki.ca, 'utf8') });
    expect(c.temporal.tls).toEqual({ serverRootCACertificate: readFileSync(pki.ca) });
  });

  it('an API key means TLS with the system roots, unless TEMPORAL_TLS=false', () => {
    expect(temporalConnectionOptions(loadConfig({ TEMPORAL_API_KEY: 'k1' }))).toEqual({
      address: '127.0.0.1:7233',
      tls: {},
      apiKey: 'k1',
    });
    expect(loadConfig({ TEMPORAL_API_KEY: 'k1', TEMPORAL_TLS: 'false' }).temporal.tls).toBe(false);
    expect(loadConfig({ TEMPORAL_TLS: 'true' }).temporal.tls).toEqual({});
    expect(failure({ TEMPORAL_TLS: 'yes' })).toContain('TEMPORAL_TLS="yes" is invalid: expected true, false, 1 or 0');
  });

  it('TEMPORAL_GRPC_META_<NAME> becomes a header on every call', () => {
    expect(temporalConnectionOptions(loadConfig({ TEMPORAL_GRPC_META_X_TENANT: 'eu' })).metadata).toEqual({
      'x-tenant': 'eu',
    });
  });

  it('a bad certificate or key names its variable and what is wrong', () => {
    expect(failure({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: join(pki.dir, 'nope.pem') })).toContain(
      `TEMPORAL_TLS_SERVER_CA_CERT_PATH="${join(pki.dir, 'nope.pem')}" is invalid: cannot read it (no such file)`,
    );
    expect(failure({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.client.key })).toContain(
      `TEMPORAL_TLS_SERVER_CA_CERT_PATH="${pki.client.key}" is invalid: expected a PEM certificate`,
    );
    expect(
      failure({ TEMPORAL_TLS_CLIENT_CERT_PATH: pki.client.cert, TEMPORAL_TLS_CLIENT_KEY_PATH: pki.client.cert }),
    ).toContain(`TEMPORAL_TLS_CLIENT_KEY_PATH="${pki.client.cert}" is invalid: expected a PEM private key`);
    expect(failure({ TEMPORAL_TLS_CLIENT_CERT_PATH: pki.client.cert })).toContain(
      'TEMPORAL_TLS_CLIENT_CERT_PATH (or its profile key) is set without its private key: set TEMPORAL_TLS_CLIENT_KEY_PATH too',
    );
    expect(failure({ TEMPORAL_TLS_CLIENT_KEY_PATH: pki.client.key })).toContain(
      'set TEMPORAL_TLS_CLIENT_CERT_PATH too',
    );
    expect(
      failure({ TEMPORAL_TLS_CLIENT_CERT_PATH: pki.client.cert, TEMPORAL_TLS_CLIENT_KEY_PATH: pki.otherClient.key }),
    ).toContain('TEMPORAL_TLS_CLIENT_KEY_PATH does not belong to TEMPORAL_TLS_CLIENT_CERT_PATH');
    expect(failure({ TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' })).toContain(
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is not supported',
    );
  });
});

describe('Temporal settings from a profile file', () => {
  const toml = () => `
[profile.default]
address = "dev.internal:7233"

[profile.prod]
address = "temporal.internal:7233"
namespace = "fulfilment"
api_key = "from-file"
[profile.prod.tls]
server_ca_cert_path = "${pki.ca}"
client_cert_path = "${pki.client.cert}"
client_key_path = "${pki.client.key}"
server_name = "localhost"
[profile.prod.grpc_meta]
x-team = "orders"
`;

  it('in production mode, a profile that gives the address stands for TEMPORAL_ADDRESS; one that does not, does not', () => {
    const others = {
      NODE_ENV: 'production',
      KAFKA_BROKERS: 'kafka.internal:9092',
      DATABASE_URL: 'postgres://app@db.internal/fulfilment',
      WAREHOUSE_URL: 'https://warehouse.internal',
    };
    const file = profileFile('prod-mode.toml', toml());
    expect(loadConfig({ ...others, TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' }).TEMPORAL_ADDRESS).toBe(
      'temporal.internal:7233',
    );
    const noAddress = profileFile('no-address.toml', '[profile.default]\nnamespace = "fulfilment"\n');
    expect(failure({ ...others, TEMPORAL_CONFIG_FILE: noAddress })).toContain(
      'TEMPORAL_ADDRESS is not set: required when NODE_ENV=production',
    );
  });

  it('TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE give address, namespace, API key, TLS and headers', () => {
    const file = profileFile('prod.toml', toml());
    const c = loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' });
    expect(c.TEMPORAL_ADDRESS).toBe('temporal.internal:7233');
    expect(c.TEMPORAL_NAMESPACE).toBe('fulfilment');
    expect(c.temporal.addressFrom).toBe(`address of [profile.prod] in ${file} (TEMPORAL_CONFIG_FILE)`);
    expect(c.temporal.profile).toEqual({ name: 'prod', file });
    expect(temporalConnectionOptions(c)).toEqual({
      address: 'temporal.internal:7233',
      apiKey: 'from-file',
      metadata: { 'x-team': 'orders' },
      tls: {
        serverNameOverride: 'localhost',
        serverRootCACertificate: readFileSync(pki.ca),
        clientCertPair: { crt: readFileSync(pki.client.cert), key: readFileSync(pki.client.key) },
      },
    });
  });

  it('the variables win over the profile, field by field', () => {
    const file = profileFile('prod.toml', toml());
    const c = loadConfig({
      TEMPORAL_CONFIG_FILE: file,
      TEMPORAL_PROFILE: 'prod',
      TEMPORAL_ADDRESS: 'other:7233',
      TEMPORAL_API_KEY: 'from-env',
      TEMPORAL_TLS_SERVER_NAME: 'temporal.example',
    });
    expect(c.temporal).toMatchObject({
      address: 'other:7233',
      addressFrom: 'TEMPORAL_ADDRESS',
      namespace: 'fulfilment',
      apiKey: 'from-env',
      tls: { serverNameOverride: 'temporal.example' },
    });
  });

  it("without TEMPORAL_PROFILE: the file's default profile; without TEMPORAL_CONFIG_FILE: the SDK's default file", () => {
    const file = profileFile('prod.toml', toml());
    expect(loadConfig({ TEMPORAL_CONFIG_FILE: file }).TEMPORAL_ADDRESS).toBe('dev.internal:7233');
    const home = join(pki.dir, 'home');
    mkdirSync(join(home, '.config', 'temporalio'), { recursive: true });
    writeFileSync(join(home, '.config', 'temporalio', 'temporal.toml'), toml());
    expect(loadConfig({ HOME: home, TEMPORAL_PROFILE: 'prod' }).temporal).toMatchObject({
      address: 'temporal.internal:7233',
      profile: { name: 'prod', file: join(home, '.config', 'temporalio', 'temporal.toml') },
    });
    expect(loadConfig({ HOME: join(pki.dir, 'no-home') }).temporal.address).toBe('127.0.0.1:7233');
  });

  it('an unknown profile, a missing file, a misspelt key or a missing certificate are configuration errors naming them', () => {
    const file = profileFile('prod.toml', toml());
    expect(failure({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'staging' })).toContain(
      `TEMPORAL_PROFILE="staging" is invalid: ${file} (TEMPORAL_CONFIG_FILE) has no [profile.staging] (it has "default", "prod")`,
    );
    expect(failure({ TEMPORAL_CONFIG_FILE: join(pki.dir, 'missing.toml') })).toContain('TEMPORAL_CONFIG_FILE=');
    expect(failure({ TEMPORAL_PROFILE: 'prod' })).toContain(
      'TEMPORAL_PROFILE="prod" is invalid: there is no Temporal configuration file to take it from',
    );
    const typo = profileFile('typo.toml', '[profile.prod.tls]\nclient_cert = "/x.pem"\n');
    expect(failure({ TEMPORAL_CONFIG_FILE: typo, TEMPORAL_PROFILE: 'prod' })).toContain(
      'key(s) unrecognized in profile.prod.tls: client_cert',
    );
    const broken = profileFile('broken.toml', '[profile.prod\naddress = 1\n');
    expect(failure({ TEMPORAL_CONFIG_FILE: broken })).toContain(`TEMPORAL_CONFIG_FILE "${broken}" is invalid`);
    const missingCert = profileFile(
      'missing-cert.toml',
      `[profile.prod.tls]\nclient_cert_path = "${join(pki.dir, 'gone.pem')}"\nclient_key_path = "${pki.client.key}"\n`,
    );
    expect(failure({ TEMPORAL_CONFIG_FILE: missingCert, TEMPORAL_PROFILE: 'prod' })).toContain(
      `tls.client_cert_path of [profile.prod] in ${missingCert} (TEMPORAL_CONFIG_FILE)="${join(pki.dir, 'gone.pem')}" is invalid: cannot read it (no such file)`,
    );
    const badAddress = profileFile('bad-address.toml', '[profile.prod]\naddress = "temporal.internal"\n');
    expect(failure({ TEMPORAL_CONFIG_FILE: badAddress, TEMPORAL_PROFILE: 'prod' })).toContain(
      'address of [profile.prod]',
    );
  });
});

describe("which Temporal connect failures stop start-up: by the error's code, never its text", () => {
  const config = loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_API_KEY: 'k' });
  const tlsConfig = loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_TLS: 'true' });
  // node:tls's errors (what tlsHandshake rejects with), a gRPC ServiceError (grpc-js, the client wrapping it, the core).
  const nodeTls = (code: string, message: string, reason?: string) =>
    Object.assign(new Error(message), { code, ...(reason ? { reason } : {}) });
  const grpc = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details });
  const cases: [string, unknown, RegExp | undefined][] = [
    [
      'untrusted server',
      nodeTls('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'),
      /presented a TLS certificate this service does not trust \(UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate\): check TEMPORAL_TLS_SERVER_CA_CERT_PATH/,
    ],
    [
      'self-signed chain',
      nodeTls('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'),
      /does not trust/,
    ],
    [
      'wrong name',
      nodeTls(
        'ERR_TLS_CERT_ALTNAME_INVALID',
        "Hostname/IP does not match certificate's altnames: Host: x. is not in the cert's altnames: DNS:localhost",
      ),
      /does not trust.*TEMPORAL_TLS_SERVER_NAME/,
    ],
    [
      'no client certificate',
      nodeTls(
        'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
        '…:SSL routines:ssl3_read_bytes:tlsv13 alert certificate required:…',
        'tlsv13 alert certificate required',
      ),
      /refused the TLS client certificate \(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: tlsv13 alert certificate required\): the server requires one \(mTLS\) and none is configured: set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH/,
    ],
    [
      'client certificate refused',
      nodeTls('ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', '…sslv3 alert bad certificate…', 'sslv3 alert bad certificate'),
      /refused the TLS client certificate \(ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE/,
    ],
    [
      'API key refused (client, wrapped)',
      Object.assign(new Error('Failed to connect to Temporal server'), {
        name: 'ServiceError',
        cause: grpc(16, 'Request unauthorized.'),
      }),
      /refused this service's credentials \(UNAUTHENTICATED: Request unauthorized\.\): check TEMPORAL_API_KEY \(set\) and TEMPORAL_NAMESPACE \("default"\)/,
    ],
    ['permission denied (grpc-js)', grpc(7, 'Request unauthorized.'), /PERMISSION_DENIED: Request unauthorized\./],
    [
      'permission denied (the core, a ServiceError with its code)',
      Object.assign(new Error('Request unauthorized.'), {
        name: 'ServiceError',
        code: 7,
        details: 'Request unauthorized.',
      }),
      /PERMISSION_DENIED: Request unauthorized\./,
    ],
    ['server down', nodeTls('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1'), undefined],
    [
      'closed without an alert',
      nodeTls('ECONNRESET', 'the server closed the connection without a TLS alert'),
      undefined,
    ],
    [
      'grpc-js: unavailable',
      grpc(14, 'No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1'),
      undefined,
    ],
    ['grpc-js: deadline', new Error('Failed to connect before the deadline'), undefined],
    // The words of a refusal without its code are not one: the handshake and the first call before it report the codes.
    [
      'the core: a refusal in words only',
      Object.assign(
        new Error("Failed to call GetSystemInfo: code: 'The request does not have valid authentication credentials'"),
        { name: 'TransportError' },
      ),
      undefined,
    ],
  ];
  it.each(cases)('%s', (_what, err, message) => {
    const permanent = permanentTemporalError(config, err);
    if (message === undefined) expect(permanent).toBeUndefined();
    else {
      expect(permanent).toBeInstanceOf(PermanentStartupError);
      expect(permanent!.message).toMatch(/^Temporal at temporal\.internal:7233 /);
      expect(permanent!.message).toMatch(message);
    }
  });

  it('TLS towards a server that does not speak it is permanent only when TLS is configured', () => {
    const err = nodeTls('ERR_SSL_WRONG_VERSION_NUMBER', '…wrong version number…', 'wrong version number');
    expect(permanentTemporalError(tlsConfig, err)?.message).toMatch(
      /does not answer TLS \(ERR_SSL_WRONG_VERSION_NUMBER: wrong version number\): check TEMPORAL_ADDRESS and TEMPORAL_TLS/,
    );
    expect(permanentTemporalError(loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233' }), err)).toBeUndefined();
  });
});
