import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EncryptionCodec } from '../../../../src/adapters/codec/payload-codec.js';
import { startCodecServer, type CodecServer } from '../../../../src/adapters/codec/codec-server.js';
import { loadConfig } from '../../../../src/base/config.js';

const TOKEN = 'test-token-0123456789abcdef';
const UI = 'http://127.0.0.1:8233';
const k1 = randomBytes(32).toString('base64');
const k2 = randomBytes(32).toString('base64');
const keys = (spec: string) => loadConfig({ PAYLOAD_ENCRYPTION_KEYS: spec }).payloadEncryption!;
const json = (p: { metadata?: Record<string, Uint8Array> | null; data?: Uint8Array | null }) => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

describe('codec server', () => {
  let server: CodecServer;
  const post = (path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    server = await startCodecServer({
      keys: keys(`k2:${k2},k1:${k1}`),
      token: TOKEN,
      corsOrigins: [UI],
      port: 0,
      host: '127.0.0.1',
    });
  });
  afterAll(() => server?.close());

  it('decodes what the worker encoded, under the current or an older key, in the JSON shape the Web UI and temporal CLI use', async () => {
    const [old] = await new EncryptionCodec(keys(`k1:${k1}`)).encode([
      defaultPayloadConverter.toPayload({ customerId: 'cust-9' }),
    ]);
    const res = await post('/decode?preserveStorageRefs=true', {
      payloads: [json(old!), json(defaultPayloadConverter.toPayload('plain'))],
    });
    expect(res.status).toBe(200);
    const { payloads } = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(payloads.map((p) => Buffer.from(p.metadata.encoding!, 'base64').toString())).toEqual([
      'json/plain',
      'json/plain',
    ]);
    expect(JSON.parse(Buffer.from(payloads[0]!.data, 'base64').toString())).toEqual({ customerId: 'cust-9' });
  });

  it('encodes with the current key, and /decode reverses it', async () => {
    const res = await post('/encode', { payloads: [json(defaultPayloadConverter.toPayload({ a: 1 }))] });
    const enc = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(Buffer.from(enc.payloads[0]!.metadata['encryption-key-id']!, 'base64').toString()).toBe('k2');
    const dec = (await (await post('/decode', enc)).json()) as { payloads: { data: string }[] };
    expect(JSON.parse(Buffer.from(dec.payloads[0]!.data, 'base64').toString())).toEqual({ a: 1 });
  });

  it('refuses a missing or wrong token with 401', async () => {
    const body = { payloads: [] };
    const none = await post('/decode', body, {});
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Bearer');
    expect(await none.json()).toEqual({
      error: 'a bearer token is required (Authorization: Bearer <CODEC_SERVER_TOKEN>)',
    });
    expect((await post('/decode', body, { authorization: 'Bearer not-the-token' })).status).toBe(401);
    expect((await post('/encode', body, { authorization: TOKEN })).status).toBe(401);
  });

  it("answers the Web UI's CORS preflight for its origin, with the headers the UI sends; other origins get 403", async () => {
    const preflight = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: UI,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-namespace,authorization',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(UI);
    expect(preflight.headers.get('access-control-allow-credentials')).toBe('true');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const allowed = preflight.headers.get('access-control-allow-headers')!.toLowerCase().split(/,\s*/);
    expect(allowed).toEqual(expect.arrayContaining(['content-type', 'x-namespace', 'authorization']));
    const other = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const ok = await post(
      '/decode',
      { payloads: [] },
      { authorization: `Bearer ${TOKEN}`, origin: UI, 'x-namespace': 'default' },
    );
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI);
    const unauth = await post('/decode', { payloads: [] }, { origin: UI });
    expect(unauth.status).toBe(401);
    expect(unauth.headers.get('access-control-allow-origin')).toBe(UI); // so the UI can read the 401
  });

  it('a payload under a key id that is not configured: 422 naming the id and the configured ones', async () => {
    const [other] = await new EncryptionCodec(keys(`k0:${randomBytes(32).toString('base64')}`)).encode([
      defaultPayloadConverter.toPayload('x'),
    ]);
    const res = await post('/decode', { payloads: [json(other!)] });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: string }).error).toBe(
      'payload is encrypted with key id "k0", which is not configured (PAYLOAD_ENCRYPTION_KEYS holds k2 (current), k1): add that key to PAYLOAD_ENCRYPTION_KEYS to decrypt it',
    );
  });

  it('bad bodies get 400 saying what was expected', async () => {
    const res = await post('/decode', { payload: [] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain('payloads');
    const notJson = await fetch(`${server.url}/decode`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{',
    });
    expect(notJson.status).toBe(400);
  });

  it("/login sets a session cookie from the token, which counts for the UI's origin (credentials included) and nowhere else", async () => {
    const wrong = await fetch(`${server.url}/login`, { method: 'POST', body: new URLSearchParams({ token: 'nope' }) });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
    // As a browser posts the login form: from the codec server's own origin.
    const login = await fetch(`${server.url}/login`, {
      method: 'POST',
      headers: { origin: server.url },
      body: new URLSearchParams({ token: TOKEN }),
    });
    expect(login.status).toBe(200);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    expect(cookie).not.toContain(TOKEN);
    expect(login.headers.get('set-cookie')).toContain('HttpOnly');
    expect((await post('/decode', { payloads: [] }, { cookie, origin: UI })).status).toBe(200);
    expect((await post('/decode', { payloads: [] }, { cookie })).status).toBe(401); // not from a browser page of the UI
    expect(
      (await post('/decode', { payloads: [] }, { cookie: 'fulfilment_codec_session=forged', origin: UI })).status,
    ).toBe(401);
  });
});
