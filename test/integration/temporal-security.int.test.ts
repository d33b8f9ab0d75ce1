/**
 * Temporal security against a real Temporal server: the stack's TLS Temporal (tools/stack/services/temporal-tls.ts),
 * whose frontend serves TLS only, requires a client certificate its CA signed (mTLS), and checks an API key on every
 * call with the server's own authorizer and JWT claim mapper. The service runs as a container runs it
 * (src/service.ts; worker and bridge in one process, then each in a process of its own), configured with the standard
 * TEMPORAL_TLS_* variables and TEMPORAL_API_KEY, and ships orders there — and only there. An API key the server
 * cannot verify, no API key, no client certificate, a client certificate from a CA the server does not trust, and a
 * server certificate from a CA the service does not trust each stop start-up at once: exit 1, a message naming the
 * variables, no waiting. One CLI command takes everything from a TOML profile (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE).
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/base/config.js';
import { PermanentStartupError } from '../../src/base/startup.js';
import { connectClient, connectNative } from '../../src/domain/temporal.js';
import {
  mintApiKey,
  newSigningKey,
  stackSigningKey,
  type TemporalTlsInfo,
  decodeJwt,
} from '../../tools/stack/index.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { committedOffsets, endOffsets, events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { serviceApiKey, tlsEnv, tlsTemporal, tlsTemporalClient, type TlsEnvOptions } from '../support/temporal-tls.js';
import { makeTestPki, type TestPki } from '../support/tls-certs.js';

const BIN = fileURLToPath(new URL('../../bin/fulfilment.mjs', import.meta.url));

let s: Scenario;
let tls: TemporalTlsInfo;
/** A CA and a client certificate the TLS Temporal knows nothing of. */
let pki: TestPki;
/** The TLS Temporal, with the service's certificate and key; and the plaintext one every other test uses. */
let secured: Client;
let plaintext: Client;
const procs: ServiceProcess[] = [];

beforeAll(async () => {
  s = await scenario('temporal-sec');
  tls = await tlsTemporal();
  pki = await makeTestPki();
  secured = await tlsTemporalClient(s.env, tls);
  plaintext = await connectClient(s.config);
});

afterAll(async () => {
  for (const p of procs) if (p.alive()) await p.stop();
  await Promise.all([secured, plaintext].map((c) => c?.connection.close()));
  pki?.remove();
  await s?.close();
});

const env = (opts: TlsEnvOptions = {}) => tlsEnv(s.env, tls, opts);

function service(processEnv: Record<string, string>, roles = 'worker,bridge'): ServiceProcess {
  const p = startServiceProcess({ ...processEnv, FULFILMENT_ROLES: roles });
  procs.push(p);
  return p;
}

/** Places `n` orders (one per partition and more) and waits until every one is shipped; returns their workflow ids. */
async function ordersShip(tenant: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `o-${i}`);
  await s.produce(ids.map((id, i) => ({ partition: i % 3, key: `${tenant}/${id}`, value: events.placed(tenant, id) })));
  await waitFor(
    `${n} orders of ${tenant} shipped`,
    async () => (await Promise.all(ids.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
    150_000,
    200,
  );
  return ids.map((id) => orderWorkflowId(tenant, id));
}

/** Every workflow ran on the TLS Temporal, and none of them on the plaintext one. */
async function ranOnlyOnTheTlsTemporal(workflowIds: string[]): Promise<void> {
  for (const id of workflowIds) {
    expect((await secured.workflow.getHandle(id).describe()).workflowId).toBe(id);
    await expect(plaintext.workflow.getHandle(id).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  }
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

describe('the service on a real Temporal server over mTLS, with an API key the server verifies', () => {
  it('worker and bridge in one process ship orders, every workflow on the TLS Temporal', async () => {
    const tenant = s.tenant('mtls');
    // TEMPORAL_TLS_SERVER_NAME: the certificate's DNS name, checked instead of the address's IP.
    const p = service(env({ extra: { TEMPORAL_TLS_SERVER_NAME: 'localhost' } }));
    await p.said('service ready');
    await ranOnlyOnTheTlsTemporal(await ordersShip(tenant, 6));
    expect(await p.stop()).toBe(0);
  });

  it('a worker and a bridge, each a process with its own connection, ship orders', async () => {
    const tenant = s.tenant('split');
    const worker = service(env(), 'worker');
    const bridge = service(env(), 'bridge');
    await Promise.all([worker.said('service ready'), bridge.said('service ready')]);
    await ranOnlyOnTheTlsTemporal(await ordersShip(tenant, 3));
    expect(await bridge.stop()).toBe(0);
    expect(await worker.stop()).toBe(0);
  });

  it('an API key signed by a key the server does not know stops start-up at once naming TEMPORAL_API_KEY', async () => {
    const forged = mintApiKey(newSigningKey(), 'fulfilment', [`${tls.namespace}:write`]);
    const p = service(env({ apiKey: forged }));
    await refusedAtStartUp(
      p,
      `Temporal at ${tls.address} refused this service's credentials (PERMISSION_DENIED`,
      'check TEMPORAL_API_KEY (set)',
    );
  });

  it('no API key stops start-up at once naming TEMPORAL_API_KEY', async () => {
    const p = service(env({ apiKey: null }));
    await refusedAtStartUp(
      p,
      `Temporal at ${tls.address} refused this service's credentials (PERMISSION_DENIED`,
      'check TEMPORAL_API_KEY (unset)',
    );
  });

  it('no client certificate stops start-up at once naming TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH', async () => {
    const p = service(env({ client: null }));
    await refusedAtStartUp(
      p,
      `Temporal at ${tls.address} refused the TLS client certificate`,
      'set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH',
    );
  });

  it('a client certificate from a CA the server does not trust stops start-up at once naming the certificate variables', async () => {
    const p = service(env({ client: pki.client }));
    await refusedAtStartUp(
      p,
      `Temporal at ${tls.address} refused the TLS client certificate`,
      'check TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH',
    );
  });

  it('a server certificate from a CA the service does not trust stops start-up at once naming TEMPORAL_TLS_SERVER_CA_CERT_PATH', async () => {
    const p = service(env({ caFile: pki.ca }));
    await refusedAtStartUp(
      p,
      `Temporal at ${tls.address} presented a TLS certificate this service does not trust`,
      'check TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      'TEMPORAL_TLS_SERVER_NAME',
    );
  });

  it('over TLS, a Temporal that is simply not there is still waited for, as an outage', async () => {
    const p = service({ ...env(), TEMPORAL_ADDRESS: '127.0.0.1:1' });
    await waitFor(
      'two waits for Temporal',
      () => p.lines.filter((l) => String(l.msg ?? '').startsWith('waiting for Temporal')).length >= 2,
      90_000,
    );
    expect(p.alive()).toBe(true);
    expect(await p.stop()).toBe(0);
  });

  it(
    'a bridge whose API key expires while it runs stops at once: fatal line, exit 1, nothing dead-lettered or committed; a bridge with a valid key then delivers the record',
    { timeout: 400_000 },
    async () => {
      const tenant = s.tenant('expiry');
      const worker = service(env(), 'worker');
      // The service's own permissions, for a minute only.
      const { claims } = decodeJwt(serviceApiKey(tls))!;
      const ttlSeconds = 60;
      const expiresAt = (Math.floor(Date.now() / 1000) + ttlSeconds) * 1000;
      const bridge = service(
        env({ apiKey: mintApiKey(stackSigningKey(), String(claims.sub), claims.permissions as string[], ttlSeconds) }),
        'bridge',
      );
      await Promise.all([worker.said('service ready'), bridge.said('service ready')]);
      expect(Date.now(), 'the bridge was ready before its key expired').toBeLessThan(expiresAt);
      await waitFor(
        'the API key to expire',
        () => (Date.now() > expiresAt + 1000 ? true : undefined),
        ttlSeconds * 1000 + 5000,
        250,
      );

      const placed = events.placed(tenant, 'o-1');
      const at = (await endOffsets(s.admin, s.config.ORDERS_TOPIC)).get(0) ?? 0n;
      await s.produce([{ partition: 0, key: `${tenant}/o-1`, value: placed }]);
      const code = await Promise.race([
        bridge.exited,
        new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 120_000).unref()),
      ]);
      const refused = bridge.lines.find((l) => l.msg === 'Temporal refused this bridge for good; it stops consuming');
      console.log(`bridge exit ${String(code)}: ${String(refused?.err)}`);
      expect(code).toBe(1);
      expect(refused).toMatchObject({ level: 60, errorClass: 'TemporalAccessRefusedError' });
      expect(String(refused!.err)).toMatch(/Temporal refused this bridge \((PERMISSION_DENIED|UNAUTHENTICATED)\)/);
      expect(
        bridge.lines.some(
          (l) => l.level === 60 && l.msg === 'a role stopped for good; stopping the rest and exiting non-zero',
        ),
      ).toBe(true);
      expect(
        bridge.lines.some((l) => l.msg === 'malformed record; dead-lettering' || String(l.msg).includes('dead letter')),
      ).toBe(false);
      expect(
        (await committedOffsets(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC)).get(0) ?? -1n,
        'nothing committed past the record',
      ).toBeLessThanOrEqual(at);

      // Nothing lost: a bridge with a valid key delivers the record.
      const again = service(env(), 'bridge');
      await waitFor(
        `${tenant}/o-1 shipped`,
        async () => (await s.row(tenant, 'o-1'))?.status === 'shipped',
        150_000,
        200,
      );
      expect(await again.stop()).toBe(0);
      expect(await worker.stop()).toBe(0);
    },
  );

  it("the worker's own connection (NativeConnection) refuses the same failures at once, and waits out an outage", async () => {
    const cases: [string, Record<string, string>, RegExp][] = [
      [
        'no client certificate',
        env({ client: null }),
        /refused the TLS client certificate \(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: /,
      ],
      [
        'client certificate of another CA',
        env({ client: pki.client }),
        /refused the TLS client certificate \(ERR_SSL_(TLSV1_ALERT_UNKNOWN_CA|SSLV3_ALERT_BAD_CERTIFICATE): /,
      ],
      ['untrusted server', env({ caFile: pki.ca }), /does not trust \(UNABLE_TO_VERIFY_LEAF_SIGNATURE: /],
      [
        'wrong server name',
        env({ extra: { TEMPORAL_TLS_SERVER_NAME: 'temporal.example' } }),
        /does not trust \(ERR_TLS_CERT_ALTNAME_INVALID: /,
      ],
      [
        'forged API key',
        env({ apiKey: mintApiKey(newSigningKey(), 'fulfilment', [`${tls.namespace}:write`]) }),
        /refused this service's credentials \(PERMISSION_DENIED: Request unauthorized/,
      ],
      [
        'no API key',
        env({ apiKey: null }),
        /refused this service's credentials \(PERMISSION_DENIED: Request unauthorized.*check TEMPORAL_API_KEY \(unset\)/,
      ],
      [
        'a key for another namespace',
        env({ apiKey: mintApiKey(stackSigningKey(), 'fulfilment', ['elsewhere:admin']) }),
        /refused this service's credentials \(PERMISSION_DENIED: /,
      ],
    ];
    for (const [what, caseEnv, message] of cases) {
      const err = await connectNative(loadConfig(caseEnv)).then(
        (c) => c.close().then(() => undefined),
        (e: unknown) => e,
      );
      expect(err, what).toBeInstanceOf(PermanentStartupError);
      expect((err as Error).message, what).toMatch(message);
    }
    // With the certificate and the key it connects; nothing listening is an outage, not a permanent failure.
    await (await connectNative(loadConfig(env()))).close();
    const down = await connectNative(loadConfig({ ...env(), TEMPORAL_ADDRESS: '127.0.0.1:1' })).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(down).toBeInstanceOf(Error);
    expect(down).not.toBeInstanceOf(PermanentStartupError);
  });
});

describe('a CLI command configured by a Temporal profile file (TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE)', () => {
  const cli = (argv: string[], cliEnv: Record<string, string>) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [BIN, ...argv], { env: cliEnv, timeout: 120_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  it("redeliver reaches the TLS Temporal over mTLS with the profile's API key; a wrong key in TEMPORAL_API_KEY (over the profile) fails naming it", async () => {
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
        `address = "${tls.address}"`,
        `namespace = "${tls.namespace}"`,
        `api_key = "${serviceApiKey(tls)}"`,
        '[profile.secure.tls]',
        `server_ca_cert_path = "${tls.caFile}"`,
        `client_cert_path = "${tls.clientCertFile}"`,
        `client_key_path = "${tls.clientKeyFile}"`,
        'server_name = "localhost"',
        '',
      ].join('\n'),
    );
    const cliEnv: Record<string, string> = { ...s.env, TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'secure' };
    for (const k of Object.keys(cliEnv)) if (/^TEMPORAL_(ADDRESS|NAMESPACE|API_KEY|TLS)/.test(k)) delete cliEnv[k];
    const argv = ['redeliver', '--from', 'earliest', '--rate', '200', '--group', `redeliver-${s.suffix}`, '--json'];
    const ok = await cli(argv, cliEnv);
    console.log(
      `$ TEMPORAL_CONFIG_FILE=temporal.toml TEMPORAL_PROFILE=secure fulfilment ${argv.join(' ')}\n${ok.stdout}${ok.stderr}(exit ${ok.code})`,
    );
    expect(ok.code).toBe(0);
    const summary = JSON.parse(ok.stdout.trim().split('\n').at(-1)!) as { delivered: number; completed: boolean };
    expect(summary).toMatchObject({ completed: true });
    expect(summary.delivered).toBeGreaterThan(0);
    await ranOnlyOnTheTlsTemporal([orderWorkflowId(tenant, 'o-1')]);

    const wrong = await cli(argv, { ...cliEnv, TEMPORAL_API_KEY: 'wrong-key' });
    console.log(`with TEMPORAL_API_KEY=wrong-key: ${wrong.stderr.trim()} (exit ${wrong.code})`);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('check TEMPORAL_API_KEY');
    expect(wrong.stderr).toContain(`[profile.secure] in ${file}`);

    const unknown = await cli(argv, { ...cliEnv, TEMPORAL_PROFILE: 'staging' });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      `TEMPORAL_PROFILE="staging" is invalid: ${file} (TEMPORAL_CONFIG_FILE) has no [profile.staging] (it has "default", "secure")`,
    );
  });
});
