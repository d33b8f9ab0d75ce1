/**
 * The codec server (`fulfilment codec-server`): the remote codec endpoint the Temporal Web UI and
 * `temporal --codec-endpoint` call to show encrypted payloads decoded, to people who hold its token.
 *
 * - `POST /decode` and `POST /encode` take and return `{"payloads":[{"metadata":{"encoding":"<base64>"},"data":"<base64>"}]}`
 *   (the Payloads message as protobuf JSON, bytes in base64), as the UI and the temporal CLI send it. A query string
 *   (`?preserveStorageRefs=true`) is ignored.
 * - Every /decode and /encode request must carry the token: `Authorization: Bearer <CODEC_SERVER_TOKEN>`
 *   (temporal --codec-auth), or the session cookie `GET /login` sets once the token is entered there — the Web UI
 *   sends no Authorization header of its own choosing, but sends the codec server's cookies when its codec setting
 *   "include cross-origin credentials" is on. Without either: 401.
 * - CORS for CODEC_SERVER_CORS_ORIGINS only: the preflight (OPTIONS) is answered for those origins with the headers
 *   the UI sends (Content-Type, X-Namespace, Authorization, Authorization-Extras) and credentials allowed; any
 *   other origin gets 403. Requests without an Origin (the temporal CLI, curl) need only the token.
 * - Decoding fails as a whole (422, `{"error": ...}`) when a payload is encrypted with a key id that is not configured,
 *   naming the id and the ids that are.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload } from '@temporalio/common';
import { z } from 'zod';
import type { Logger } from '../../base/log.js';
import { DecryptionError, UnknownKeyError } from './cipher.js';
import type { PayloadKeys } from '../../base/config/payload-keys.js';
import { EncryptionCodec } from './payload-codec.js';

export interface CodecServerOptions {
  keys: PayloadKeys;
  /** The bearer token every /encode and /decode request must carry. */
  token: string;
  /** Origins allowed to call from a browser (the Web UI's). */
  corsOrigins: readonly string[];
  port: number;
  host: string;
  logger?: Logger;
}

export interface CodecServer {
  server: Server;
  /** `http://host:port` it listens on. */
  url: string;
  close(): Promise<void>;
}

/** Headers a browser may send cross-origin: what the Web UI sends to a codec endpoint. */
export const CORS_ALLOWED_HEADERS = ['Content-Type', 'X-Namespace', 'Authorization', 'Authorization-Extras'];
/** Largest request body taken, bytes (Temporal's own payload limit is 2 MiB each). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;
const SESSION_COOKIE = 'fulfilment_codec_session';

const base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'base64');
const body = z.object(
  {
    payloads: z.array(z.object({ metadata: z.record(base64).nullish(), data: base64.nullish() }).passthrough(), {
      invalid_type_error: 'an array of payloads',
    }),
  },
  { invalid_type_error: 'a JSON object {"payloads": [...]}', required_error: 'a JSON object {"payloads": [...]}' },
);

type JsonPayload = { metadata?: Record<string, string> | null; data?: string | null };

function fromJson(p: JsonPayload): Payload {
  return {
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    data: Buffer.from(p.data ?? '', 'base64'),
  };
}

function toJson(p: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
  };
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function equalSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function cookies(req: IncomingMessage): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return out;
}

const LOGIN_PAGE = (note: string) => `<!doctype html>
<html><head><meta charset="utf-8"><title>Fulfilment codec server</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>Fulfilment codec server</h1>
<p>${note}</p>
<form method="post" action="login">
<label>Token (CODEC_SERVER_TOKEN) <input type="password" name="token" autocomplete="off" autofocus></label>
<button type="submit">Sign in</button>
</form>
<p>Signing in sets a cookie for this server; the Temporal Web UI sends it when its codec server setting
"Include cross-origin credentials" is on.</p>
</body></html>
`;

/**
 * Over 80 lines: the server and its request handler share one closure's state (the keys, the token, the origins);
 * the handler's routes are its steps.
 */
export async function startCodecServer(opts: CodecServerOptions): Promise<CodecServer> {
  const codec = new EncryptionCodec(opts.keys);
  const origins = new Set(opts.corsOrigins);
  // The cookie holds a value derived from the token, not the token: a leaked cookie is not the token, and a new
  // token ends every session.
  const session = createHmac('sha256', opts.token).update('fulfilment codec-server session').digest('base64url');
  const log = opts.logger?.child({ component: 'codec-server' });

  const authorised = (req: IncomingMessage): boolean => {
    const auth = req.headers.authorization;
    if (auth !== undefined) {
      const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
      return m !== null && equalSecret(m[1]!, opts.token);
    }
    // The session cookie counts only on a browser's request from an allowed origin (checked before this).
    const cookie = cookies(req).get(SESSION_COOKIE);
    return req.headers.origin !== undefined && cookie !== undefined && equalSecret(cookie, session);
  };

  /** CORS: a browser's request must come from an allowed origin, or be the login page posting to its own. */
  const allowOrigin = (req: IncomingMessage, res: ServerResponse): void => {
    const origin = req.headers.origin;
    const sameOrigin =
      origin !== undefined && req.headers.host !== undefined && origin === `http://${req.headers.host}`;
    if (origin === undefined || sameOrigin) return;
    if (!origins.has(origin))
      throw new HttpError(
        403,
        `origin ${origin} is not allowed (CODEC_SERVER_CORS_ORIGINS: ${[...origins].join(', ')})`,
      );
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    res.setHeader('Vary', 'Origin');
  };

  /** The login page (GET) and its form (POST): a right token sets the session cookie. */
  const login = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const page = (status: number, message: string, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', ...headers }).end(LOGIN_PAGE(message));
    if (req.method === 'GET')
      return void page(200, 'Enter the codec server token to let this browser decode payloads.');
    const token = new URLSearchParams((await readBody(req)).toString('utf8')).get('token') ?? '';
    if (!equalSecret(token, opts.token)) return void page(401, 'That is not the token. Try again.');
    page(200, 'Signed in: this browser may now decode payloads (for 12 hours).', {
      'Set-Cookie': `${SESSION_COOKIE}=${session}; Path=/; HttpOnly; SameSite=Lax; Max-Age=43200`,
    });
  };

  /** A request's payloads, or a 400 naming what was expected. */
  const readPayloads = async (req: IncomingMessage): Promise<Payload[]> => {
    let parsed: z.infer<typeof body>;
    try {
      const result = body.safeParse(JSON.parse((await readBody(req)).toString('utf8')));
      if (!result.success)
        throw new HttpError(
          400,
          `expected ${result.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`,
        );
      parsed = result.data;
    } catch (err) {
      if (err instanceof HttpError) throw err;
      throw new HttpError(400, `expected a JSON body {"payloads": [...]}: ${(err as Error).message}`);
    }
    return parsed.payloads.map(fromJson);
  };

  /** POST /decode or /encode with the bearer token (or a browser's session): the payloads through the codec. */
  const transcode = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    if (req.method !== 'POST') throw new HttpError(405, `${path} takes POST`);
    if (!authorised(req)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="fulfilment codec server"');
      throw new HttpError(
        401,
        req.headers.authorization === undefined
          ? 'a bearer token is required (Authorization: Bearer <CODEC_SERVER_TOKEN>)'
          : "the bearer token is not the codec server's",
      );
    }
    const payloads = await readPayloads(req);
    let out: Payload[];
    try {
      out = path === '/decode' ? await codec.decode(payloads) : await codec.encode(payloads);
    } catch (err) {
      if (err instanceof UnknownKeyError || err instanceof DecryptionError) throw new HttpError(422, err.message);
      throw new HttpError(400, (err as Error).message);
    }
    log?.debug({ path, payloads: out.length, namespace: req.headers['x-namespace'] }, 'codec request');
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ payloads: out.map(toJson) }));
  };

  /** Routes a request: CORS first, then the preflight, the health check, the login page, and the codec. */
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://codec').pathname.replace(/\/+$/, '') || '/';
    allowOrigin(req, res);
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'Access-Control-Allow-Methods': 'POST, OPTIONS',
        'Access-Control-Allow-Headers': CORS_ALLOWED_HEADERS.join(', '),
        'Access-Control-Max-Age': '600',
      });
      res.end();
      return;
    }
    if (path === '/healthz' && req.method === 'GET')
      return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
    if (path === '/login' && (req.method === 'GET' || req.method === 'POST')) return login(req, res);
    if (path !== '/decode' && path !== '/encode')
      throw new HttpError(404, `no such endpoint ${req.method} ${path}: POST /decode or /encode`);
    return transcode(req, res, path);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : 500;
      const message = err instanceof HttpError ? err.message : 'internal error';
      if (status >= 500) log?.error({ err }, 'codec server request failed');
      else log?.info({ status, path: req.url, error: message }, 'codec server refused a request');
      if (!res.headersSent) res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: message }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    server,
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
