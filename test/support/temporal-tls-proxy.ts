/**
 * A TLS-terminating gRPC proxy in front of the plaintext Temporal dev server (whose `start-dev` has no TLS options):
 * node:http2 over TLS with ALPN h2 only, requiring a client certificate issued by the given CA (requestCert +
 * rejectUnauthorized), forwarding every stream — headers, body and trailers, both ways — to the frontend.
 * It records what reached it (the RPC path, the `authorization` header, the client certificate's subject), and
 * with `apiKey` set it refuses any call not carrying `authorization: Bearer <apiKey>` with gRPC status 16
 * (UNAUTHENTICATED), as Temporal Cloud does.
 */
import { readFileSync } from 'node:fs';
import http2, { type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';

export interface ProxyOptions {
  /** Plaintext upstream, host:port (the dev server's frontend). */
  upstream: string;
  /** Server certificate and key files (PEM). */
  cert: string;
  key: string;
  /** CA file whose client certificates are accepted. */
  clientCa: string;
  /** When set, calls without `authorization: Bearer <apiKey>` are refused with UNAUTHENTICATED. */
  apiKey?: string;
}

export interface ProxiedCall {
  path: string;
  authorization?: string;
  /** CN of the client certificate the TLS session presented. */
  clientCn?: string;
  /** gRPC status the call ended with ('16' for a refused key), when known. */
  status?: string;
}

export interface TemporalTlsProxy {
  /** 127.0.0.1:<port> */
  address: string;
  port: number;
  calls: ProxiedCall[];
  /** TLS handshakes the server refused (no client certificate, an unknown issuer, ...), with the reason. */
  refusedHandshakes: string[];
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'http2-settings']);

function forwardable(headers: IncomingHttpHeaders, keepPseudo: string[]): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    if (name.startsWith(':') && !keepPseudo.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

export async function startTemporalTlsProxy(opts: ProxyOptions): Promise<TemporalTlsProxy> {
  const calls: ProxiedCall[] = [];
  const refusedHandshakes: string[] = [];
  let upstream: ClientHttp2Session | undefined;
  const upstreamSession = () => {
    if (!upstream || upstream.closed || upstream.destroyed) {
      const session = http2.connect(`http://${opts.upstream}`);
      session.on('error', () => undefined); // each stream reports its own failure
      session.on('close', () => {
        if (upstream === session) upstream = undefined;
      });
      upstream = session;
    }
    return upstream;
  };

  const server = http2.createSecureServer({
    cert: readFileSync(opts.cert),
    key: readFileSync(opts.key),
    ca: readFileSync(opts.clientCa),
    requestCert: true,
    rejectUnauthorized: true,
    allowHTTP1: false,
    ALPNProtocols: ['h2'],
  });
  server.on('tlsClientError', (err) => refusedHandshakes.push(err.message));
  server.on('sessionError', () => undefined);

  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    const socket = stream.session?.socket as TLSSocket | undefined;
    const call: ProxiedCall = {
      path: String(headers[':path']),
      authorization: typeof headers.authorization === 'string' ? headers.authorization : undefined,
      clientCn: socket?.getPeerCertificate?.()?.subject?.CN as string | undefined,
    };
    calls.push(call);
    stream.on('error', () => undefined);
    if (opts.apiKey !== undefined && call.authorization !== `Bearer ${opts.apiKey}`) {
      call.status = '16';
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': encodeURIComponent('API key refused by the test proxy') },
        { endStream: true },
      );
      return;
    }
    let up: http2.ClientHttp2Stream;
    try {
      up = upstreamSession().request(forwardable(headers, [':method', ':path', ':scheme', ':authority']));
    } catch (err) {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '14', 'grpc-message': encodeURIComponent(String(err)) }, { endStream: true });
      return;
    }
    let trailers: OutgoingHttpHeaders = {};
    up.on('response', (h) => {
      if (stream.destroyed) return;
      if (h['grpc-status'] !== undefined) {
        // Trailers-only response: headers and status in one frame, no body.
        call.status = String(h['grpc-status']);
        stream.respond(forwardable(h, [':status']), { endStream: true });
        return;
      }
      stream.respond(forwardable(h, [':status']), { waitForTrailers: true });
      up.pipe(stream);
    });
    up.on('trailers', (t) => {
      trailers = forwardable(t, []);
      if (t['grpc-status'] !== undefined) call.status = String(t['grpc-status']);
    });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    up.on('error', (err) => {
      if (stream.destroyed) return;
      if (!stream.headersSent) {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '14', 'grpc-message': encodeURIComponent(`upstream: ${err.message}`) }, { endStream: true });
      } else stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    });
    // A call the client gives up (a poll on shutdown) is cancelled upstream too, and the other way round.
    stream.on('close', () => {
      if (!up.closed) up.close(http2.constants.NGHTTP2_CANCEL);
    });
    up.on('close', () => {
      if (!stream.closed && !stream.headersSent) stream.close(http2.constants.NGHTTP2_CANCEL);
    });
    stream.pipe(up);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  return {
    address: `127.0.0.1:${port}`,
    port,
    calls,
    refusedHandshakes,
    async close() {
      for (const s of sessions) s.destroy();
      upstream?.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
