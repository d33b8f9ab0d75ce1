/**
 * Temporal over a real TLS connection that requires a client certificate: a TLS-terminating gRPC proxy
 * (test/support/temporal-tls-proxy.ts) in front of the stack's plaintext dev server, certificates made with openssl
 * for this file (test/support/tls-certs.ts). The service runs as a container runs it (src/service.ts, worker and
 * bridge) and reaches Temporal only through the proxy, configured with the standard TEMPORAL_TLS_* variables; the
 * proxy sees every call and which client certificate made it. An API key reaches the proxy as
 * `authorization: Bearer <key>`, checked there; a wrong key, no client certificate and a server certificate from a
 * CA the service does not trust each stop start-up at once — exit 1, a message naming the variables, no waiting.
 * One CLI command takes everything from a TOML profile (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE).
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { PermanentStartupError } from '../../src/startup.js';
import { connectNative } from '../../src/temporal.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { startTemporalTlsProxy, type TemporalTlsProxy } from '../support/temporal-tls-proxy.js';
import { makeTestPki, type TestPki } from '../support/tls-certs.js';

const BIN = fileURLToPath(new URL('../../bin/fulfilment.mjs', import.meta.url));
const API_KEY = 'test-api-key-3f9c';

let s: Scenario;
let pki: TestPki;
/** Requires a client certificate of the test CA. */
let mtls: TemporalTlsProxy;
/** The same, and the API key. */
let keyed: TemporalTlsProxy;
/** Presents a server certificate of a CA nobody trusts. */
let impostor: TemporalTlsProxy;
const procs: ServiceProcess[] = [];

beforeAll(async () => {
  s = await scenario('temporal-sec');
  pki = await makeTestPki();
  const upstream = s.config.TEMPORAL_ADDRESS;
  mtls = await startTemporalTlsProxy({ upstream, cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca });
  keyed = await startTemporalTlsProxy({ upstream, cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca, apiKey: API_KEY });
  impostor = await startTemporalTlsProxy({ upstream, cert: pki.otherServer.cert, key: pki.otherServer.key, clientCa: pki.ca });
});

afterAll(async () => {
  for (const p of procs) if (p.alive()) await p.stop();
  await Promise.all([mtls, keyed, impostor].map((p) => p?.close()));
  pki?.remove();
  await s?.close();
});

/** The scenario's environment with Temporal reached at `address` over TLS: the test CA, and the client certificate unless `clientCert` is false. */
function tlsEnv(address: string, extra: Record<string, string> = {}, clientCert = true): Record<string, string> {
  const env: Record<string, string> = { ...s.env, TEMPORAL_ADDRESS: address, TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.ca, ...extra };
  for (const k of Object.keys(env)) if (/^TEMPORAL_(API_KEY|PROFILE|CONFIG_FILE|GRPC_META_)/.test(k) && !(k in extra)) delete env[k];
  if (clientCert) Object.assign(env, { TEMPORAL_TLS_CLIENT_CERT_PATH: pki.client.cert, TEMPORAL_TLS_CLIENT_KEY_PATH: pki.client.key });
  return env;
}

function service(env: Record<string, string>): ServiceProcess {
  const p = startServiceProcess({ ...env, FULFILMENT_ROLES: 'worker,bridge' });
  procs.push(p);
  return p;
}

/** Places `n` orders (one per partition and more) and waits until every one is shipped. */
async function ordersShip(tenant: string, n: number): Promise<void> {
  const ids = Array.from({ length: n }, (_, i) => `o-${i}`);
  await s.produce(ids.map((id, i) => ({ partition: i % 3, key: `${tenant}/${id}`, value: events.placed(tenant, id) })));
  await waitFor(`${n} orders of ${tenant} shipped`, async () => (await Promise.all(ids.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'), 150_000, 200);
}

/** Start-up refused: exit 1 with `message` on stderr, and never a "waiting for" line (no retry loop). */
async function refusedAtStartUp(p: ServiceProcess, ...message: string[]): Promise<string> {
  const code = await p.exited;
  const stderr = p.stderr();
  console.log(`exit ${String(code)}: ${stderr.trim()}`);
  expect(code).toBe(1);
  for (const m of message) expect(stderr).toContain(m);
  expect(p.lines.filter((l) => String(l.msg ?? '').startsWith('waiting for'))).toEqual([]);
  expect(p.lines.some((l) => l.msg === 'service ready')).toBe(false);
  return stderr;
}

const rpc = (proxy: TemporalTlsProxy, name: string) => proxy.calls.filter((c) => c.path.endsWith(`/${name}`));

describe('Temporal over mTLS through a TLS proxy that requires a client certificate', () => {
  it('worker and bridge process real orders to shipped, every call over the proxy with the client certificate', async () => {
    const tenant = s.tenant('mtls');
    // TEMPORAL_TLS_SERVER_NAME: the certificate's DNS name, checked instead of the address's IP.
    const p = service(tlsEnv(mtls.address, { TEMPORAL_TLS_SERVER_NAME: 'localhost' }));
    await p.said('service ready');
    await ordersShip(tenant, 6);
    // The worker (Rust core) polled and completed tasks through the proxy; the bridge, beside it in the process,
    // started the workflows through it eagerly, on the worker's connection.
    expect(rpc(mtls, 'PollWorkflowTaskQueue').length).toBeGreaterThan(0);
    expect(rpc(mtls, 'RespondWorkflowTaskCompleted').length).toBeGreaterThan(0);
    expect(rpc(mtls, 'PollActivityTaskQueue').length).toBeGreaterThan(0);
    expect(rpc(mtls, 'StartWorkflowExecution').length).toBeGreaterThanOrEqual(6);
    expect(new Set(mtls.calls.map((c) => c.clientCn))).toEqual(new Set(['fulfilment-client']));
    expect(mtls.calls.every((c) => c.authorization === undefined)).toBe(true);
    console.log(`mTLS proxy: ${mtls.calls.length} calls, ${rpc(mtls, 'StartWorkflowExecution').length} StartWorkflowExecution, ${rpc(mtls, 'PollWorkflowTaskQueue').length} workflow polls`);
    expect(await p.stop()).toBe(0);
  });

  it('with TEMPORAL_API_KEY the key reaches the server side as a bearer token on every call, and orders ship', async () => {
    const tenant = s.tenant('key');
    const p = service(tlsEnv(keyed.address, { TEMPORAL_API_KEY: API_KEY, TEMPORAL_TLS_SERVER_NAME: 'localhost' }));
    await p.said('service ready');
    await ordersShip(tenant, 3);
    expect(keyed.calls.length).toBeGreaterThan(0);
    expect(keyed.calls.filter((c) => c.authorization !== `Bearer ${API_KEY}`)).toEqual([]);
    expect(keyed.calls.filter((c) => c.status === '16')).toEqual([]);
    expect(rpc(keyed, 'PollWorkflowTaskQueue').length).toBeGreaterThan(0);
    expect(await p.stop()).toBe(0);
  });

  it('a wrong API key stops start-up at once naming TEMPORAL_API_KEY', async () => {
    const before = keyed.calls.length;
    const p = service(tlsEnv(keyed.address, { TEMPORAL_API_KEY: 'not-the-key', TEMPORAL_TLS_SERVER_NAME: 'localhost' }));
    await refusedAtStartUp(p, `Temporal at ${keyed.address} refused this service's credentials (UNAUTHENTICATED`, 'check TEMPORAL_API_KEY');
    const tried = keyed.calls.slice(before);
    expect(tried.length).toBeGreaterThan(0);
    expect(tried.every((c) => c.authorization === 'Bearer not-the-key' && c.status === '16')).toBe(true);
  });

  it('no client certificate stops start-up at once naming TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH', async () => {
    const refusedBefore = mtls.refusedHandshakes.length;
    const p = service(tlsEnv(mtls.address, {}, false));
    await refusedAtStartUp(p, `Temporal at ${mtls.address} refused the TLS client certificate`, 'set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH');
    expect(mtls.refusedHandshakes.slice(refusedBefore).some((r) => r.includes('peer did not return a certificate'))).toBe(true);
  });

  it('a server certificate from an untrusted CA stops start-up at once naming TEMPORAL_TLS_SERVER_CA_CERT_PATH', async () => {
    const p = service(tlsEnv(impostor.address));
    await refusedAtStartUp(p, `Temporal at ${impostor.address} presented a TLS certificate this service does not trust`, 'check TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_SERVER_NAME');
    expect(impostor.calls).toEqual([]);
  });

  it('over TLS, a Temporal that is simply not there is still waited for, as an outage', async () => {
    const p = service(tlsEnv('127.0.0.1:1'));
    await waitFor('two waits for Temporal', () => p.lines.filter((l) => String(l.msg ?? '').startsWith('waiting for Temporal')).length >= 2, 90_000);
    expect(p.alive()).toBe(true);
    expect(await p.stop()).toBe(0);
  });

  it("the worker's own connection (NativeConnection) refuses the same failures at once, and waits out an outage", async () => {
    const cases: [string, Record<string, string>, RegExp][] = [
      ['no client certificate', tlsEnv(mtls.address, {}, false), /refused the TLS client certificate \(alert certificate required\)/],
      ['untrusted server', tlsEnv(impostor.address), /does not trust \(Error: unable to verify the first certificate[;)]/],
      ['wrong API key', tlsEnv(keyed.address, { TEMPORAL_API_KEY: 'nope' }), /refused this service's credentials \(UNAUTHENTICATED: API key refused/],
      ['wrong server name', tlsEnv(mtls.address, { TEMPORAL_TLS_SERVER_NAME: 'temporal.example' }), /does not trust \(Error \[ERR_TLS_CERT_ALTNAME_INVALID\]/],
    ];
    for (const [what, env, message] of cases) {
      const err = await connectNative(loadConfig(env)).then((c) => c.close().then(() => undefined), (e: unknown) => e);
      expect(err, what).toBeInstanceOf(PermanentStartupError);
      expect((err as Error).message, what).toMatch(message);
    }
    // Nothing listening: an outage, not a permanent failure (start-up keeps waiting).
    const down = await connectNative(loadConfig(tlsEnv('127.0.0.1:1'))).then(() => undefined, (e: unknown) => e);
    expect(down).toBeInstanceOf(Error);
    expect(down).not.toBeInstanceOf(PermanentStartupError);
  });
});

describe('a CLI command configured by a Temporal profile file (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE)', () => {
  const cli = (argv: string[], env: Record<string, string>) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [BIN, ...argv], { env, timeout: 120_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  it('replay reaches Temporal over mTLS with the profile\'s API key; a wrong key in TEMPORAL_API_KEY (over the profile) fails naming it', async () => {
    const tenant = s.tenant('profile');
    await s.produce([{ key: `${tenant}/o-1`, value: events.placed(tenant, 'o-1') }]);
    const file = join(pki.dir, 'temporal.toml');
    writeFileSync(
      file,
      [
        '[profile.default]',
        'address = "127.0.0.1:1"',
        '',
        '[profile.secure]',
        `address = "${keyed.address}"`,
        `namespace = "${s.config.TEMPORAL_NAMESPACE}"`,
        `api_key = "${API_KEY}"`,
        '[profile.secure.tls]',
        `server_ca_cert_path = "${pki.ca}"`,
        `client_cert_path = "${pki.client.cert}"`,
        `client_key_path = "${pki.client.key}"`,
        'server_name = "localhost"',
        '',
      ].join('\n'),
    );
    const env: Record<string, string> = { ...s.env, TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'secure' };
    for (const k of Object.keys(env)) if (/^TEMPORAL_(ADDRESS|NAMESPACE|API_KEY|TLS)/.test(k)) delete env[k];
    const before = keyed.calls.length;
    const argv = ['replay', '--from', 'earliest', '--rate', '200', '--group', `replay-${s.suffix}`, '--json'];
    const ok = await cli(argv, env);
    console.log(`$ TEMPORAL_CONFIG_FILE=temporal.toml TEMPORAL_PROFILE=secure fulfilment ${argv.join(' ')}\n${ok.stdout}${ok.stderr}(exit ${ok.code})`);
    expect(ok.code).toBe(0);
    const summary = JSON.parse(ok.stdout.trim().split('\n').at(-1)!) as { delivered: number; completed: boolean };
    expect(summary).toMatchObject({ completed: true });
    expect(summary.delivered).toBeGreaterThan(0);
    const calls = keyed.calls.slice(before);
    expect(calls.filter((c) => c.path.endsWith('/SignalWithStartWorkflowExecution')).length).toBeGreaterThanOrEqual(summary.delivered);
    expect(calls.every((c) => c.authorization === `Bearer ${API_KEY}` && c.clientCn === 'fulfilment-client')).toBe(true);

    const wrong = await cli(argv, { ...env, TEMPORAL_API_KEY: 'wrong-key' });
    console.log(`with TEMPORAL_API_KEY=wrong-key: ${wrong.stderr.trim()} (exit ${wrong.code})`);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('check TEMPORAL_API_KEY');
    expect(wrong.stderr).toContain(`[profile.secure] in ${file}`);

    const unknown = await cli(argv, { ...env, TEMPORAL_PROFILE: 'staging' });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(`TEMPORAL_PROFILE="staging" is invalid: ${file} (TEMPORAL_CONFIG_FILE) has no [profile.staging] (it has "default", "secure")`);
  });
});
