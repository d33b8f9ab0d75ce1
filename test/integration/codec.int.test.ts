/**
 * Encrypted payloads on the real stack: an order's history in Temporal holds none of its customer data, the codec
 * server (`fulfilment codec-server`, started through the CLI) shows it to `temporal workflow show --codec-endpoint`
 * with the token, a history written under the old key still decodes (and the workflow goes on) after rotation, an
 * unknown key is named, and dead letters are stored encrypted while `dlq show` and `dlq redrive` see the original.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import { connectTemporal } from '../../src/domain/temporal.js';
import { temporalCliPath } from '../../tools/stack/index.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';

const exec = promisify(execFile);
const OLD = randomBytes(32).toString('base64');
const NEW = randomBytes(32).toString('base64');
const TOKEN = `codec-it-${randomBytes(12).toString('hex')}`;
const UI_ORIGIN = 'http://127.0.0.1:8233';

describe('encrypted payloads and the codec server', () => {
  let s: Scenario;
  let first: App | undefined;
  let rotated: App | undefined;
  let tenant: string;
  const customer = {
    customerId: `cust-${randomBytes(4).toString('hex')}`,
    name: `Ada Lovelace ${randomBytes(3).toString('hex')}`,
    email: `ada.${randomBytes(3).toString('hex')}@example.com`,
  };
  const secrets = () => [customer.customerId, customer.name, customer.email];
  const workflowId = () => orderWorkflowId(tenant, 'o-1');
  const servers: { stop: () => Promise<void> }[] = [];

  /** `fulfilment codec-server --port 0` with these keys, in process; resolves with its URL once it listens. */
  async function codecServer(keys: Record<string, string>): Promise<string> {
    const out = memoryOutput();
    const stop = new AbortController();
    const done = runCli(['codec-server', '--port', '0'], {
      env: { ...s.env, CODEC_SERVER_TOKEN: TOKEN, ...keys },
      out,
      signal: stop.signal,
    });
    servers.push({ stop: async () => void (stop.abort(), await done) });
    const line = await waitFor(
      'the codec server to listen',
      () => out.stdout.match(/listening on (http:\/\/\S+)/)?.[1],
      30_000,
    );
    console.log(out.stdout.trim());
    return line;
  }

  async function show(...extra: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const args = [
      'workflow',
      'show',
      '--address',
      s.config.TEMPORAL_ADDRESS,
      '--namespace',
      s.config.TEMPORAL_NAMESPACE,
      '-w',
      workflowId(),
      '--output',
      'json',
      ...extra,
    ];
    try {
      const { stdout, stderr } = await exec(await temporalCliPath(), args, { maxBuffer: 64 * 1024 * 1024 });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  }

  /**
   * Every payload in `temporal workflow show --output json` (which prints payload data as base64), as text: the
   * encodings seen and the data decoded from base64. Without encryption the customer data would be in `data`.
   */
  function payloadsOf(stdout: string): { encodings: Set<string>; data: string } {
    const encodings = new Set<string>();
    const data: string[] = [];
    const walk = (v: unknown): void => {
      if (v === null || typeof v !== 'object') return;
      const p = v as { metadata?: Record<string, string>; data?: unknown };
      if (p.metadata && typeof p.metadata.encoding === 'string') {
        encodings.add(Buffer.from(p.metadata.encoding, 'base64').toString());
        if (typeof p.data === 'string') data.push(Buffer.from(p.data, 'base64').toString('utf8'));
      }
      for (const child of Object.values(v)) walk(child);
    };
    walk(JSON.parse(stdout));
    return { encodings, data: data.join('\n') };
  }

  /** The encrypted payloads of the raw history (read without any codec), with their key ids. */
  async function encryptedInHistory(): Promise<{
    keyIds: string[];
    payloads: { metadata: Record<string, string>; data: string }[];
  }> {
    const connection = await connectTemporal(s.config);
    try {
      const raw = new Client({ connection, namespace: s.config.TEMPORAL_NAMESPACE });
      const history = await raw.workflow.getHandle(workflowId()).fetchHistory();
      const ids = new Set<string>();
      const payloads: { metadata: Record<string, string>; data: string }[] = [];
      const walk = (v: unknown): void => {
        if (v === null || typeof v !== 'object' || v instanceof Uint8Array) return;
        const p = v as { metadata?: Record<string, Uint8Array>; data?: Uint8Array };
        if (p.metadata && p.metadata['encryption-key-id']) {
          ids.add(Buffer.from(p.metadata['encryption-key-id']).toString());
          payloads.push({
            metadata: Object.fromEntries(
              Object.entries(p.metadata).map(([k, b]) => [k, Buffer.from(b).toString('base64')]),
            ),
            data: Buffer.from(p.data ?? []).toString('base64'),
          });
        }
        for (const child of Object.values(v)) walk(child);
      };
      walk(history.events);
      return { keyIds: [...ids].sort(), payloads };
    } finally {
      await connection.close();
    }
  }

  beforeAll(async () => {
    // A linger (not the default): after the key rotation an event goes to the run, which must still be open for a new
    // worker to replay its history written under the old key (terminated in afterAll).
    s = await scenario('codec', { PAYLOAD_ENCRYPTION_KEYS: `old:${OLD}`, ORDER_LINGER_SECONDS: '600' });
    tenant = s.tenant();
    first = await s.startInstance();
  });
  afterAll(async () => {
    for (const server of servers) await server.stop();
    await (rotated ?? first)?.client.workflow
      .getHandle(workflowId())
      .terminate('test over')
      .catch(() => undefined);
    await s?.close();
  });

  it("an order's history holds none of its customer data; through the codec endpoint with the token it does", async () => {
    const placed = events.placed(tenant, 'o-1', {
      data: {
        customerId: customer.customerId,
        lines: [{ sku: 'SKU-1', quantity: 1 }],
        shippingAddress: { name: customer.name, email: customer.email, city: 'Lyon', country: 'FR' },
      },
    });
    await s.produce([{ key: `${tenant}/o-1`, value: placed }]);
    await waitFor('the order to ship', async () => (await s.row(tenant, 'o-1'))?.status === 'shipped', 120_000);

    const plain = await show();
    expect(plain.code).toBe(0);
    const stored = payloadsOf(plain.stdout);
    console.log(`temporal workflow show (no codec): payload encodings ${[...stored.encodings].join(', ')}`);
    expect(stored.encodings).toContain('binary/encrypted');
    for (const secret of secrets()) {
      expect(plain.stdout).not.toContain(secret);
      expect(stored.data).not.toContain(secret);
    }
    expect((await encryptedInHistory()).keyIds).toEqual(['old']);

    const url = await codecServer({ PAYLOAD_ENCRYPTION_KEYS: `old:${OLD}` });
    const decoded = await show('--codec-endpoint', url, '--codec-auth', `Bearer ${TOKEN}`);
    expect(decoded.code, decoded.stderr).toBe(0);
    const clear = payloadsOf(decoded.stdout);
    console.log(
      `through the codec endpoint: payload encodings ${[...clear.encodings].join(', ')}; ${clear.data.match(/"shippingAddress":\{[^}]*\}/)?.[0]}`,
    );
    expect(clear.encodings).not.toContain('binary/encrypted');
    for (const secret of secrets()) expect(clear.data).toContain(secret);

    const wrong = await show('--codec-endpoint', url, '--codec-auth', 'Bearer not-the-token');
    console.log(`with a wrong token: exit ${wrong.code}: ${wrong.stderr.trim().split('\n').at(-1)}`);
    expect(wrong.code).not.toBe(0);
    for (const secret of secrets()) expect(wrong.stdout).not.toContain(secret);
  });

  it('workflow export writes the encrypted history decrypted, so it replays with no key (the replay gate); replay from the server uses the keys', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'codec-export-')), 'history.json');
    const env = { ...s.env, PAYLOAD_ENCRYPTION_KEYS: `old:${OLD}` };
    const out = memoryOutput();
    expect(await runCli(['workflow', 'export', workflowId(), '--out', file], { env, out }), out.stderr).toBe(0);
    const written = readFileSync(file, 'utf8');
    expect(written).not.toContain(Buffer.from('binary/encrypted').toString('base64'));
    const noKey = memoryOutput();
    expect(await runCli(['workflow', 'replay', '--file', file], { env: s.env, out: noKey }), noKey.stderr).toBe(0);
    const fromServer = memoryOutput();
    expect(await runCli(['workflow', 'replay', workflowId()], { env, out: fromServer }), fromServer.stderr).toBe(0);
    console.log(`exported decrypted and replayed without a key: ${noKey.stdout.trim()}`);
  });

  it("the codec server refuses requests without the token or with a wrong one, and answers the Web UI's CORS preflight", async () => {
    const url = await codecServer({ PAYLOAD_ENCRYPTION_KEYS: `old:${OLD}` });
    const post = (headers: Record<string, string>) =>
      fetch(`${url}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: '{"payloads":[]}',
      });
    expect((await post({})).status).toBe(401);
    expect((await post({ authorization: 'Bearer wrong-token-wrong-token' })).status).toBe(401);
    expect((await post({ authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    const preflight = await fetch(`${url}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: UI_ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-namespace',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toMatch(
      /content-type.*x-namespace.*authorization/,
    );
    expect(
      (
        await fetch(`${url}/decode`, {
          method: 'OPTIONS',
          headers: { origin: 'http://elsewhere.example', 'access-control-request-method': 'POST' },
        })
      ).status,
    ).toBe(403);
  });

  it('after rotation (new current key, old still configured) the old history decodes, the workflow goes on, and new payloads use the new key', async () => {
    await first!.stop();
    first = undefined;
    rotated = await s.startInstance(
      {},
      { PAYLOAD_ENCRYPTION_KEYS: `new:${NEW},old:${OLD}`, PAYLOAD_ENCRYPTION_KEY_ID: 'new' },
    );
    // A late event: a new worker (empty cache) replays the history written under the old key to apply it.
    await s.produce([{ key: `${tenant}/o-1`, value: events.cancelled(tenant, 'o-1') }]);
    const view = await waitFor(
      'the late event to be applied',
      async () => {
        const v = await rotated!.client.workflow.getHandle(workflowId()).query(orderStatusQuery);
        return v.appliedEvents >= 2 ? v : undefined;
      },
      120_000,
    );
    console.log(`after rotation: status ${view.status}, applied events ${view.appliedEvents}`);
    expect((await encryptedInHistory()).keyIds).toEqual(['new', 'old']);

    const url = await codecServer({
      PAYLOAD_ENCRYPTION_KEYS: `new:${NEW},old:${OLD}`,
      PAYLOAD_ENCRYPTION_KEY_ID: 'new',
    });
    const decoded = await show('--codec-endpoint', url, '--codec-auth', `Bearer ${TOKEN}`);
    expect(decoded.code, decoded.stderr).toBe(0);
    const clear = payloadsOf(decoded.stdout);
    expect(clear.encodings).not.toContain('binary/encrypted');
    for (const secret of secrets()) expect(clear.data).toContain(secret);
  });

  it('a codec server without the key a payload names says which key id it lacks', async () => {
    const url = await codecServer({ PAYLOAD_ENCRYPTION_KEYS: `new:${NEW}` });
    // The temporal CLI does not print a codec server's error body: the server's answer is what names the key.
    const old = (await encryptedInHistory()).payloads.filter(
      (p) => Buffer.from(p.metadata['encryption-key-id']!, 'base64').toString() === 'old',
    );
    const res = await fetch(`${url}/decode`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ payloads: old.slice(0, 1) }),
    });
    const body = (await res.json()) as { error: string };
    console.log(
      `POST /decode of an old-key payload to a codec server with only key "new": ${res.status} ${body.error}`,
    );
    expect(res.status).toBe(422);
    expect(body.error).toBe(
      'payload is encrypted with key id "old", which is not configured (PAYLOAD_ENCRYPTION_KEYS holds new (current)): add that key to PAYLOAD_ENCRYPTION_KEYS to decrypt it',
    );
    const result = await show('--codec-endpoint', url, '--codec-auth', `Bearer ${TOKEN}`);
    console.log(`temporal workflow show through it: exit ${result.code}: ${result.stderr.trim().split('\n').at(-1)}`);
    expect(result.code).not.toBe(0);
    for (const secret of secrets()) expect(result.stdout).not.toContain(secret);
  });

  it('dead letters are stored encrypted; dlq show decrypts them, dlq redrive sends the original bytes', async () => {
    // Malformed (quantity 0), with customer data in it.
    const bad = events.placed(tenant, 'o-bad', {
      data: {
        customerId: customer.customerId,
        lines: [{ sku: 'SKU-1', quantity: 0 }],
        shippingAddress: { name: customer.name, email: customer.email },
      },
    });
    const original = JSON.stringify(bad);
    await s.produce([{ key: `${tenant}/o-bad`, value: original }]);
    const [stored] = await s.readTopic(s.config.DLQ_TOPIC, 1);
    expect(stored!.headers).toMatchObject({
      'dlq-value-encryption': 'aes-256-gcm',
      'dlq-value-key-id': 'new',
      'dlq-event-id': bad.eventId,
    });
    for (const secret of secrets()) expect(stored!.value!.includes(secret)).toBe(false);
    const position = `${stored!.partition}:${stored!.offset}`;

    const env = { ...s.env, PAYLOAD_ENCRYPTION_KEYS: `new:${NEW},old:${OLD}` };
    const out = memoryOutput();
    expect(await runCli(['dlq', 'show', position, '--reveal', '--json'], { env, out })).toBe(0);
    const shown = JSON.parse(out.stdout) as { payload: { value: unknown }; decryptedWith: string };
    expect(shown.decryptedWith).toBe('new');
    expect(shown.payload.value).toEqual(bad);

    const text = memoryOutput();
    expect(await runCli(['dlq', 'show', position], { env, out: text })).toBe(0);
    console.log(text.stdout.split('\n').find((l) => l.startsWith('payload')));

    const noKey = memoryOutput();
    expect(
      await runCli(['dlq', 'show', position], { env: { ...s.env, PAYLOAD_ENCRYPTION_KEYS: `old:${OLD}` }, out: noKey }),
    ).toBe(1);
    console.log(noKey.stderr.trim());
    expect(noKey.stderr).toContain(
      `dead letter ${position} of ${s.config.DLQ_TOPIC} is encrypted with key id "new", which is not configured (PAYLOAD_ENCRYPTION_KEYS holds old (current))`,
    );

    const redrive = memoryOutput();
    expect(
      await runCli(['dlq', 'redrive', '--id', position, '--force', '--operator', 'codec-test'], { env, out: redrive }),
    ).toBe(0);
    const to = /redriven \S+ → \S+ (\d+):(\d+)/.exec(redrive.stdout);
    expect(to, redrive.stdout).not.toBeNull();
    const watch = await s.watchTopic(s.config.ORDERS_TOPIC);
    try {
      const again = await waitFor('the redriven record on the orders topic', () =>
        watch.records.find((r) => r.partition === Number(to![1]) && r.offset === to![2]),
      );
      expect(again.value!.toString()).toBe(original);
      expect(again.headers['redriven-from']).toBe(position);
      expect(Object.keys(again.headers).filter((h) => h.startsWith('dlq-value'))).toEqual([]);
    } finally {
      await watch.close();
    }
  });
});
