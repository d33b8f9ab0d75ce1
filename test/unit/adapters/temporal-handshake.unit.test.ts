/**
 * The TLS handshake that runs before every Temporal connection over TLS (src/adapters/temporal-refusal.ts), against
 * listeners on loopback made for this file: it resolves where a client with these settings would get through, and
 * otherwise rejects with node:tls's code, which alone decides whether start-up stops (a certificate refused either way,
 * TLS to a plaintext server) or waits (nothing listening, a connection closed without a TLS alert). A client
 * certificate of a CA the server does not trust is refused by Node's TLS server with a reset that can overtake its
 * alert, so that case is proved against the real Temporal server (test/integration/temporal-security.int.test.ts).
 */
import { readFileSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type TemporalTls } from '../../../src/base/config.js';
import { PermanentStartupError } from '../../../src/base/startup.js';
import { permanentTemporalError, tlsHandshake } from '../../../src/adapters/temporal-refusal.js';
import { makeTestPki, type TestPki } from '../../support/tls-certs.js';

let pki: TestPki;
const servers: Server[] = [];
const closers: (() => void)[] = [];

async function listen(server: Server): Promise<string> {
  servers.push(server);
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  closers.push(() => open.forEach((socket) => socket.destroy()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let mtls: string;
let plaintext: string;
let closing: string;
beforeAll(async () => {
  pki = await makeTestPki();
  // Requires a client certificate of the test CA; answers whatever it is sent, as an HTTP/2 server answers the preface.
  const tlsServer = createTlsServer(
    {
      cert: readFileSync(pki.server.cert),
      key: readFileSync(pki.server.key),
      ca: readFileSync(pki.ca),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (socket) => {
      socket.on('data', () => socket.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])));
      socket.on('error', () => undefined);
    },
  );
  tlsServer.on('tlsClientError', () => undefined);
  mtls = await listen(tlsServer);
  // A plaintext HTTP/2 server sends its SETTINGS frame at once.
  plaintext = await listen(createNetServer((socket) => socket.end(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]))));
  closing = await listen(createNetServer((socket) => socket.destroy()));
});
afterAll(async () => {
  for (const close of closers) close();
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  pki?.remove();
});

const read = (file: string) => readFileSync(file);
const settings = (
  over: Partial<{ ca: string; client: { cert: string; key: string } | null; name: string }> = {},
): TemporalTls => {
  const client = over.client === undefined ? pki.client : over.client;
  return {
    serverRootCACertificate: read(over.ca ?? pki.ca),
    ...(client ? { clientCertPair: { crt: read(client.cert), key: read(client.key) } } : {}),
    ...(over.name ? { serverNameOverride: over.name } : {}),
  };
};

/** The handshake's error (undefined when it got through) and what start-up makes of it. */
async function attempt(
  address: string,
  tls: TemporalTls,
): Promise<{ code?: unknown; permanent?: PermanentStartupError }> {
  const err = await tlsHandshake(address, tls, 5000).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err === undefined) return {};
  const config = loadConfig({ TEMPORAL_ADDRESS: address, TEMPORAL_TLS: 'true' });
  return { code: (err as { code?: unknown }).code, permanent: permanentTemporalError(config, err) };
}

describe('the TLS handshake before a Temporal connection', () => {
  it('gets through with the CA, the name and a client certificate the server trusts', async () => {
    expect(await attempt(mtls, settings())).toEqual({});
    expect(await attempt(mtls, settings({ name: 'localhost' }))).toEqual({});
  });

  it.each([
    [
      'no client certificate',
      () => settings({ client: null }),
      'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
      /refused the TLS client certificate \(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: tlsv13 alert certificate required\): the server requires one/,
    ],
    [
      'a server certificate of a CA the client does not trust',
      () => settings({ ca: pki.otherCa }),
      'SELF_SIGNED_CERT_IN_CHAIN',
      /presented a TLS certificate this service does not trust \(SELF_SIGNED_CERT_IN_CHAIN: self-signed certificate in certificate chain\)/,
    ],
    [
      'a server certificate for another name',
      () => settings({ name: 'temporal.example' }),
      'ERR_TLS_CERT_ALTNAME_INVALID',
      /does not trust \(ERR_TLS_CERT_ALTNAME_INVALID: Host: temporal\.example\. is not in the cert's altnames/,
    ],
  ])('%s: refused for good (%s)', async (_what, tls, code, message) => {
    const { code: got, permanent } = await attempt(mtls, tls());
    expect(got).toBe(code);
    expect(permanent).toBeInstanceOf(PermanentStartupError);
    expect(permanent!.message).toMatch(message);
  });

  it('TLS towards a plaintext server: refused for good', async () => {
    const { code, permanent } = await attempt(plaintext, settings());
    expect(['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG']).toContain(code);
    expect(permanent?.message).toMatch(
      /does not answer TLS \(ERR_SSL_\w+: .*\): check TEMPORAL_ADDRESS and TEMPORAL_TLS/,
    );
  });

  it('nothing listening, or a connection closed without a TLS alert: an outage, waited for', async () => {
    const refused = await attempt('127.0.0.1:1', settings());
    expect(refused.code).toBe('ECONNREFUSED');
    expect(refused.permanent).toBeUndefined();
    const closed = await attempt(closing, settings());
    expect(['ECONNRESET', 'EPIPE']).toContain(closed.code);
    expect(closed.permanent).toBeUndefined();
  });
});
