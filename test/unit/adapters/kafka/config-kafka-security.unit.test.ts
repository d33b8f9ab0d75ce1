/**
 * The Kafka security variables: each validated on its own (files readable, PEM where a certificate or key is
 * expected), then together (a protocol's needs, nothing set that the protocol ignores), every message naming the
 * variable and what is wrong; and how a refused credential or certificate is told from a broker that is down.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/base/config.js';
import { kafkaSecurityOptions, permanentKafkaFailure } from '../../../../src/adapters/kafka/client.js';
import { configFailure } from '../../../support/config-failure.js';

const dir = mkdtempSync(join(tmpdir(), 'kafka-security-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const ca = file('ca.pem', CERT);
const cert = file('client.pem', CERT);
const key = file('client.key', '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n');
const passwordFile = file('password', 's3cret pass\n');
const provider = file('provider.mjs', 'export default async () => ({ value: "token" });\n');
const scram = {
  KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
  KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
  KAFKA_SASL_USERNAME: 'svc',
  KAFKA_SASL_PASSWORD: 'pw',
};

const failure = configFailure;

describe('Kafka security configuration', () => {
  it('defaults to PLAINTEXT with nothing else set', () => {
    const c = loadConfig({});
    expect(c.KAFKA_SECURITY_PROTOCOL).toBe('PLAINTEXT');
    expect(c.KAFKA_SASL_MECHANISM).toBeUndefined();
    expect(kafkaSecurityOptions(c)).toEqual({});
  });

  it('accepts SASL_SSL with SCRAM, a CA file and a password file; protocol and mechanism in any case', () => {
    const c = loadConfig({
      KAFKA_SECURITY_PROTOCOL: 'sasl_ssl',
      KAFKA_SASL_MECHANISM: 'scram-sha-256',
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD_FILE: passwordFile,
      KAFKA_SSL_CA_FILE: ca,
      KAFKA_SSL_SERVERNAME: 'kafka.internal',
    });
    expect(c).toMatchObject({ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256' });
    const opts = kafkaSecurityOptions(c);
    expect(opts.ssl).toEqual({ rejectUnauthorized: true, ca: [CERT], servername: 'kafka.internal' });
    // the file's trailing newline is not part of the password; its spaces are
    expect(opts.sasl).toEqual({ mechanism: 'scram-sha-256', username: 'svc', password: 's3cret pass' });
  });

  it('builds TLS with a client certificate, TLS with the system roots, and PLAIN over SASL_PLAINTEXT', () => {
    expect(
      kafkaSecurityOptions(
        loadConfig({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CERT_FILE: cert, KAFKA_SSL_KEY_FILE: key }),
      ).ssl,
    ).toMatchObject({ cert: CERT, key: expect.stringContaining('PRIVATE KEY') });
    expect(kafkaSecurityOptions(loadConfig({ KAFKA_SECURITY_PROTOCOL: 'SSL' }))).toEqual({
      ssl: { rejectUnauthorized: true },
    });
    const plain = kafkaSecurityOptions(
      loadConfig({
        KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT',
        KAFKA_SASL_MECHANISM: 'PLAIN',
        KAFKA_SASL_USERNAME: 'u',
        KAFKA_SASL_PASSWORD: 'p',
      }),
    );
    expect(plain).toEqual({ sasl: { mechanism: 'plain', username: 'u', password: 'p' } });
  });

  it('takes the OAUTHBEARER token from the provider module', async () => {
    const opts = kafkaSecurityOptions(
      loadConfig({
        KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
        KAFKA_SASL_OAUTHBEARER_PROVIDER: provider,
      }),
    );
    expect(opts.sasl?.mechanism).toBe('oauthbearer');
    const sasl = opts.sasl as { oauthBearerProvider: () => Promise<{ value: string }> };
    expect(await sasl.oauthBearerProvider()).toEqual({ value: 'token' });
    const noDefault = file('no-default.mjs', 'export const token = 1;\n');
    const bad = kafkaSecurityOptions(
      loadConfig({
        KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
        KAFKA_SASL_OAUTHBEARER_PROVIDER: noDefault,
      }),
    );
    const err = await (bad.sasl as { oauthBearerProvider: () => Promise<unknown> })
      .oauthBearerProvider()
      .catch((e: unknown) => e);
    expect((err as Error).message).toContain(
      `KAFKA_SASL_OAUTHBEARER_PROVIDER=${noDefault}: the module's default export is undefined`,
    );
    // a provider that cannot work is permanent at start-up
    expect(permanentKafkaFailure({ name: 'KafkaJSNonRetriableError', cause: err }, loadConfig({}))).toContain(
      'KAFKA_SASL_OAUTHBEARER_PROVIDER=',
    );
  });

  it('refuses unknown protocols and mechanisms, listing the accepted ones', () => {
    expect(failure({ KAFKA_SECURITY_PROTOCOL: 'TLS' })).toContain(
      'KAFKA_SECURITY_PROTOCOL="TLS" is invalid: expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL',
    );
    expect(failure({ ...scram, KAFKA_SASL_MECHANISM: 'GSSAPI' })).toContain(
      'KAFKA_SASL_MECHANISM="GSSAPI" is invalid: expected PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER',
    );
  });

  it('says which file variable points at what, and what is wrong with it', () => {
    const missing = join(dir, 'nope.pem');
    expect(failure({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CA_FILE: missing })).toContain(
      `KAFKA_SSL_CA_FILE="${missing}" is invalid: expected a readable file, but ${missing} does not exist`,
    );
    expect(failure({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CA_FILE: dir })).toContain(
      `expected a readable file, but ${dir} is not a file`,
    );
    expect(failure({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CA_FILE: key })).toContain(
      `KAFKA_SSL_CA_FILE="${key}" is invalid: expected a PEM file holding one or more certificates`,
    );
    expect(failure({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CERT_FILE: cert, KAFKA_SSL_KEY_FILE: cert })).toContain(
      `KAFKA_SSL_KEY_FILE="${cert}" is invalid: expected a PEM file holding an unencrypted private key`,
    );
    const encrypted = file(
      'encrypted.key',
      '-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----\n',
    );
    expect(
      failure({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CERT_FILE: cert, KAFKA_SSL_KEY_FILE: encrypted }),
    ).toContain(`expected an unencrypted private key, but ${encrypted} is encrypted and no passphrase is taken`);
    const empty = file('empty', '\n');
    expect(failure({ ...scram, KAFKA_SASL_PASSWORD: '', KAFKA_SASL_PASSWORD_FILE: empty })).toContain(
      `KAFKA_SASL_PASSWORD_FILE="${empty}" is invalid: expected a file holding the password, but it is empty`,
    );
    if (process.getuid?.() !== 0) {
      const locked = file('locked', 'pw');
      chmodSync(locked, 0o000);
      expect(failure({ ...scram, KAFKA_SASL_PASSWORD: '', KAFKA_SASL_PASSWORD_FILE: locked })).toContain(
        'is not readable by this process',
      );
    }
  });

  it('needs a mechanism and credentials for SASL, naming what is missing', () => {
    expect(failure({ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL' })).toContain(
      'KAFKA_SECURITY_PROTOCOL=SASL_SSL needs KAFKA_SASL_MECHANISM: expected PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER',
    );
    const msg = failure({ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512' });
    expect(msg).toContain('KAFKA_SASL_MECHANISM=SCRAM-SHA-512 needs KAFKA_SASL_USERNAME');
    expect(msg).toContain(
      'KAFKA_SASL_MECHANISM=SCRAM-SHA-512 needs a password: set KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE',
    );
    expect(failure({ ...scram, KAFKA_SASL_PASSWORD_FILE: passwordFile })).toContain(
      'KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE are both set: expected one of them',
    );
    expect(failure({ KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'OAUTHBEARER' })).toContain(
      'KAFKA_SASL_MECHANISM=OAUTHBEARER needs KAFKA_SASL_OAUTHBEARER_PROVIDER',
    );
    expect(
      failure({
        KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
        KAFKA_SASL_OAUTHBEARER_PROVIDER: provider,
        KAFKA_SASL_USERNAME: 'u',
      }),
    ).toContain(
      'KAFKA_SASL_USERNAME set, but KAFKA_SASL_MECHANISM=OAUTHBEARER takes its token from KAFKA_SASL_OAUTHBEARER_PROVIDER',
    );
    expect(failure({ ...scram, KAFKA_SASL_OAUTHBEARER_PROVIDER: provider })).toContain(
      'KAFKA_SASL_OAUTHBEARER_PROVIDER set, but KAFKA_SASL_MECHANISM=SCRAM-SHA-512 does not use it',
    );
  });

  it('refuses a client certificate without its key and the other way round', () => {
    expect(failure({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_CERT_FILE: cert })).toContain(
      'KAFKA_SSL_CERT_FILE is set without KAFKA_SSL_KEY_FILE: a client certificate needs its private key',
    );
    expect(failure({ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_SSL_KEY_FILE: key })).toContain(
      'KAFKA_SSL_KEY_FILE is set without KAFKA_SSL_CERT_FILE',
    );
    // a certificate that is set but invalid still counts as set: only its own problem is reported
    const msg = failure({
      KAFKA_SECURITY_PROTOCOL: 'SSL',
      KAFKA_SSL_CERT_FILE: join(dir, 'gone.pem'),
      KAFKA_SSL_KEY_FILE: key,
    });
    expect(msg).toContain('KAFKA_SSL_CERT_FILE=');
    expect(msg).not.toContain('set without');
  });

  it('refuses TLS or SASL settings the protocol would silently ignore', () => {
    expect(failure({ KAFKA_SSL_CA_FILE: ca })).toContain(
      'KAFKA_SSL_CA_FILE set, but KAFKA_SECURITY_PROTOCOL=PLAINTEXT does not use TLS: expected KAFKA_SECURITY_PROTOCOL=SSL or SASL_SSL, or unset them',
    );
    expect(failure({ ...scram, KAFKA_SECURITY_PROTOCOL: 'SSL' })).toContain(
      'KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD set, but KAFKA_SECURITY_PROTOCOL=SSL does not use SASL',
    );
    expect(failure({ ...scram, KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT', KAFKA_SSL_SERVERNAME: 'k' })).toContain(
      'KAFKA_SSL_SERVERNAME set, but KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT does not use TLS',
    );
  });

  it('never repeats the password in a message', () => {
    const msg = failure({ ...scram, KAFKA_SECURITY_PROTOCOL: 'PLAINTEXT', KAFKA_SASL_PASSWORD: 'hunter2-secret' });
    expect(msg).not.toContain('hunter2-secret');
  });
});

describe('permanent Kafka failures', () => {
  const settings = loadConfig({ ...scram, KAFKA_BROKERS: 'k1:9094', KAFKA_SSL_CA_FILE: ca });
  const connectionError = (code: string, message: string) => ({
    name: 'KafkaJSNumberOfRetriesExceeded',
    message,
    cause: { name: 'KafkaJSConnectionError', code, message: `Connection error: ${message}` },
  });

  it('a refused SASL login names the mechanism, the user and the variables to check', () => {
    const why = permanentKafkaFailure(
      {
        name: 'KafkaJSNonRetriableError',
        cause: {
          name: 'KafkaJSSASLAuthenticationError',
          message: 'SASL SCRAM SHA512 authentication failed: invalid credentials',
        },
      },
      settings,
    );
    expect(why).toBe(
      'Kafka at k1:9094 refused the SASL authentication (SCRAM-SHA-512, user "svc"): SASL SCRAM SHA512 authentication failed: invalid credentials. Check KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD.',
    );
  });

  it('an untrusted certificate points at the CA file, a wrong name at the server name', () => {
    expect(
      permanentKafkaFailure(
        connectionError('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'),
        settings,
      ),
    ).toContain(`Check KAFKA_SSL_CA_FILE=${ca}: it must hold the CA that signed the broker's certificate`);
    expect(
      permanentKafkaFailure(
        connectionError('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'),
        settings,
      ),
    ).toContain('(UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate)');
    expect(
      permanentKafkaFailure(
        connectionError('ERR_TLS_CERT_ALTNAME_INVALID', "Hostname/IP does not match certificate's altnames"),
        settings,
      ),
    ).toContain("Check KAFKA_SSL_SERVERNAME (unset, so each broker's host in KAFKA_BROKERS)");
    expect(
      permanentKafkaFailure(connectionError('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'alert'), settings),
    ).toContain('Check KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE');
  });

  it('a token the broker rejects (the SASL exchange left in an illegal state) is permanent for OAUTHBEARER only', () => {
    const illegal = {
      name: 'KafkaJSNumberOfRetriesExceeded',
      cause: {
        name: 'KafkaJSProtocolError',
        type: 'ILLEGAL_SASL_STATE',
        message: 'Request is not valid given the current SASL state',
      },
    };
    const oauth = loadConfig({
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
      KAFKA_SASL_OAUTHBEARER_PROVIDER: provider,
    });
    expect(permanentKafkaFailure(illegal, oauth)).toContain(
      `did not accept the OAUTHBEARER token from KAFKA_SASL_OAUTHBEARER_PROVIDER=${provider}`,
    );
    expect(permanentKafkaFailure(illegal, settings)).toBeUndefined();
  });

  it('a broker that is down, refuses connections or times out is not permanent', () => {
    expect(permanentKafkaFailure(connectionError('ECONNREFUSED', 'connect ECONNREFUSED'), settings)).toBeUndefined();
    expect(
      permanentKafkaFailure({ name: 'KafkaJSConnectionError', message: 'Connection timeout' }, settings),
    ).toBeUndefined();
    expect(permanentKafkaFailure(new Error('anything else'), settings)).toBeUndefined();
  });
});
