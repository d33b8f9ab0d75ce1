/**
 * Which Temporal connection failures no wait can cure, told apart by error codes, never by message text: the TLS
 * handshake's (node:tls — a certificate the service does not trust, the server's alert on this client's certificate,
 * a server that does not speak TLS) and the gRPC status of a refused credential (UNAUTHENTICATED, PERMISSION_DENIED).
 *
 * grpc-js and the worker's Rust core report a failed handshake only as text inside an UNAVAILABLE error, so before
 * they connect over TLS, tlsHandshake makes the same handshake itself — the CA, the server name, the client
 * certificate the connection will use — and waits for the server's first word: its HTTP/2 SETTINGS, or a TLS 1.3
 * server's alert on the client certificate, which comes after the handshake. Its failures carry node:tls's codes.
 */
import { isIP } from 'node:net';
import { connect } from 'node:tls';
import type { Config, TemporalTls } from '../base/config.js';
import { PermanentStartupError } from '../base/startup.js';

/** The server's certificate is not trusted, or not for this name (OpenSSL's verification results, Node's name check). */
const SERVER_CERT = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
/** The server's TLS alert on this client's certificate, or on the lack of one (alerts 116, 42, 48, 46, 45, 44, 49). */
const CLIENT_CERT = new Set([
  'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
  'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE',
  'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED',
  'ERR_SSL_SSLV3_ALERT_CERTIFICATE_REVOKED',
  'ERR_SSL_TLSV1_ALERT_ACCESS_DENIED',
]);
/** TLS towards a server that does not speak it. */
const NOT_TLS = new Set(['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG']);

/** gRPC status codes of a refused credential. */
const UNAUTHENTICATED = 16;
const PERMISSION_DENIED = 7;

/** The HTTP/2 client preface and an empty SETTINGS frame: what a gRPC client sends first. */
const H2_PREFACE = Buffer.concat([
  Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
  Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
]);

function hostAndPort(address: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]+):(\d+)$/.exec(address);
  return { host: m?.[1] ?? address, port: Number(m?.[2] ?? 7233) };
}

/** How long to wait for a server that speaks only when spoken to before sending it the HTTP/2 preface, ms. */
const QUIET_MS = 500;

/**
 * One TLS handshake with Temporal at `address` as `tls` configures it; resolves once the server sends data. Rejects
 * with node:tls's error (its `code` says why) or, when the server closes the connection or stays silent, with an error
 * that reads as an outage. Nothing is sent before the server has had QUIET_MS to speak: a server that refuses the
 * client certificate and closes with unread bytes resets the connection, and the reset can overtake its alert.
 */
export function tlsHandshake(address: string, tls: TemporalTls, timeoutMs = 10_000): Promise<void> {
  const { host, port } = hostAndPort(address);
  const servername = tls.serverNameOverride ?? (isIP(host) ? undefined : host);
  return new Promise((resolve, reject) => {
    const socket = connect({
      host,
      port,
      ALPNProtocols: ['h2'],
      ...(servername ? { servername } : {}),
      ...(tls.serverRootCACertificate ? { ca: tls.serverRootCACertificate } : {}),
      ...(tls.clientCertPair ? { cert: tls.clientCertPair.crt, key: tls.clientCertPair.key } : {}),
    });
    const settle = (err?: Error) => {
      socket.destroy();
      if (err) reject(err);
      else resolve();
    };
    socket.setTimeout(timeoutMs, () =>
      settle(Object.assign(new Error(`no answer over TLS within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })),
    );
    socket.once('secureConnect', () => setTimeout(() => socket.writable && socket.write(H2_PREFACE), QUIET_MS).unref());
    socket.once('data', () => settle());
    socket.once('error', (err) => settle(err));
    socket.once('close', () =>
      settle(Object.assign(new Error('the server closed the connection without a TLS alert'), { code: 'ECONNRESET' })),
    );
  });
}

function codeOf(err: unknown): unknown {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  return e?.code ?? e?.cause?.code;
}

function detailOf(err: unknown): string {
  const e = err as { details?: unknown; cause?: { details?: unknown }; message?: unknown } | undefined;
  const details = e?.cause?.details ?? e?.details;
  return typeof details === 'string' && details ? details : String(e?.message ?? err);
}

/** `CODE: what OpenSSL or Node said`, for a TLS failure. */
function tlsReason(err: unknown, code: string): string {
  const e = err as { reason?: unknown; message?: unknown };
  const said = typeof e.reason === 'string' ? e.reason : String(e.message ?? '');
  return said ? `${code}: ${said}` : code;
}

/**
 * A PermanentStartupError for a Temporal failure no retry can cure, naming the variables to check; undefined for
 * anything else (the server is down or restarting: keep waiting).
 */
export function permanentTemporalError(
  config: Pick<Config, 'temporal'>,
  err: unknown,
): PermanentStartupError | undefined {
  if (err instanceof PermanentStartupError) return err;
  const t = config.temporal;
  const at = `Temporal at ${t.address}`;
  const orProfile = t.profile ? ` (or their keys under [profile.${t.profile.name}] in ${t.profile.file})` : '';
  const tls = t.tls || undefined;
  const code = codeOf(err);
  if (typeof code === 'string' && SERVER_CERT.has(code)) {
    return new PermanentStartupError(
      `${at} presented a TLS certificate this service does not trust (${tlsReason(err, code)}): check TEMPORAL_TLS_SERVER_CA_CERT_PATH ` +
        `(the CA that issued the server's certificate; ${tls?.serverRootCACertificate ? 'one is set' : 'unset: the system roots'}) and TEMPORAL_TLS_SERVER_NAME ` +
        `(the name in it; ${tls?.serverNameOverride ? `"${tls.serverNameOverride}"` : `unset: the host of TEMPORAL_ADDRESS`})${orProfile}`,
      { cause: err },
    );
  }
  if (typeof code === 'string' && CLIENT_CERT.has(code)) {
    return new PermanentStartupError(
      `${at} refused the TLS client certificate (${tlsReason(err, code)}): ` +
        (tls?.clientCertPair
          ? 'check TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH: the server must trust the CA that issued the certificate'
          : 'the server requires one (mTLS) and none is configured: set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH') +
        orProfile,
      { cause: err },
    );
  }
  if (tls && typeof code === 'string' && NOT_TLS.has(code)) {
    return new PermanentStartupError(
      `${at} does not answer TLS (${tlsReason(err, code)}): check TEMPORAL_ADDRESS and TEMPORAL_TLS${orProfile}`,
      { cause: err },
    );
  }
  if (code === UNAUTHENTICATED || code === PERMISSION_DENIED) {
    return new PermanentStartupError(
      `${at} refused this service's credentials (${code === PERMISSION_DENIED ? 'PERMISSION_DENIED' : 'UNAUTHENTICATED'}: ${detailOf(err)}): ` +
        `check TEMPORAL_API_KEY (${t.apiKey ? 'set' : 'unset'}) and TEMPORAL_NAMESPACE ("${t.namespace}")${orProfile}`,
      { cause: err },
    );
  }
  return undefined;
}
