/**
 * DATABASE_SSL_CA_FILE against the real local PostgreSQL with TLS switched on: a certificate chain made for this file
 * (a CA, and a server certificate for 127.0.0.1 signed by it), loaded by the running cluster with ALTER SYSTEM and a
 * reload — plain connections keep working meanwhile, so the other files are not disturbed. With the CA the runtime
 * role connects over TLS; with another CA the connection is refused, and the service exits 1 at start-up saying the
 * certificate is not trusted (no retry loop). The settings are reset afterwards; the files stay in the cluster's own
 * folder, so a cluster restarted before the reset still finds them.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/base/config.js';
import { provisionPostgres } from '../../src/roles/provision/schema-and-grants.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { uniqueSuffix, waitFor } from '../support/harness.js';
import { planFromEnv, clusterHome, superuserClient } from '../../tools/stack/index.js';

const SERVICE = fileURLToPath(new URL('../../src/service.ts', import.meta.url));
const CHILD_MS = 180_000;
const base = loadConfig();
const suffix = uniqueSuffix('pgtls');

let dir: string;
let admin: pg.Client;

function openssl(args: string[]): void {
  const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`);
}

/** A CA (`<name>-ca.pem`) and, when `server`, a certificate for 127.0.0.1 it signed (`server.pem`, `server.key`). */
function makeChain(name: string, server: boolean): void {
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name} test CA`,
    '-keyout',
    `${name}-ca.key`,
    '-out',
    `${name}-ca.pem`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  if (!server) return;
  openssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
  ]);
  writeFileSync(
    join(dir, 'server.ext'),
    'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n',
  );
  openssl([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    `${name}-ca.pem`,
    '-CAkey',
    `${name}-ca.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-out',
    'server.pem',
    '-extfile',
    'server.ext',
  ]);
}

async function tlsOf(client: pg.Client): Promise<boolean> {
  return (
    (await client.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')).rows[0]?.ssl ??
    false
  );
}

beforeAll(async () => {
  const home = clusterHome();
  if (!home) throw new Error('the local stack runs no PostgreSQL here');
  dir = join(home.root, 'test-tls');
  mkdirSync(dir, { recursive: true });
  makeChain('trusted', true);
  makeChain('other', false);
  for (const f of ['server.key', 'server.pem']) chownSync(join(dir, f), home.uid, home.gid);
  chmodSync(join(dir, 'server.key'), 0o600);
  await provisionPostgres(base);
  admin = await superuserClient(planFromEnv());
  await admin.query(`ALTER SYSTEM SET ssl_cert_file = '${join(dir, 'server.pem')}'`);
  await admin.query(`ALTER SYSTEM SET ssl_key_file = '${join(dir, 'server.key')}'`);
  await admin.query('ALTER SYSTEM SET ssl = on');
  await admin.query('SELECT pg_reload_conf()');
  await waitFor(
    'PostgreSQL to take TLS connections',
    async () => (await admin.query<{ ssl: string }>('SHOW ssl')).rows[0]?.ssl === 'on',
    30_000,
  );
}, 60_000);

afterAll(async () => {
  if (!admin) return;
  for (const s of ['ssl', 'ssl_cert_file', 'ssl_key_file']) await admin.query(`ALTER SYSTEM RESET ${s}`);
  await admin.query('SELECT pg_reload_conf()');
  await admin.end();
});

describe('DATABASE_SSL_CA_FILE', () => {
  it('with the CA that signed the server certificate, the runtime role connects over TLS', async () => {
    const config = loadConfig({ ...process.env, DATABASE_SSL_CA_FILE: join(dir, 'trusted-ca.pem') });
    const c = new pg.Client(runtimeConnection(config));
    await waitFor(
      'a verified TLS connection',
      async () => {
        const probe = new pg.Client(runtimeConnection(config));
        try {
          await probe.connect();
          return await tlsOf(probe);
        } finally {
          await probe.end().catch(() => undefined);
        }
      },
      30_000,
    );
    await c.connect();
    try {
      expect(await tlsOf(c)).toBe(true);
      expect((await c.query('SELECT current_user AS u')).rows[0]).toEqual({ u: 'fulfilment' });
    } finally {
      await c.end();
    }
    // Without it, the same URL connects in plain text, as before (sslmode unset).
    const plain = new pg.Client(runtimeConnection(base));
    await plain.connect();
    expect(await tlsOf(plain)).toBe(false);
    await plain.end();
  });

  it(
    'with another CA the connection is refused, and the service exits 1 at once saying the certificate is not trusted',
    async () => {
      const other = join(dir, 'other-ca.pem');
      const c = new pg.Client(runtimeConnection(loadConfig({ ...process.env, DATABASE_SSL_CA_FILE: other })));
      c.on('error', () => undefined);
      const err = await c.connect().then(
        () => undefined,
        (e: unknown) => e as Error & { code?: string },
      );
      // The server sends only its own certificate, which no certificate in the other CA file signed.
      expect(err?.code).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
      await c.end().catch(() => undefined);

      const env = Object.fromEntries(
        Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined),
      );
      const r = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', SERVICE], {
          env: {
            ...env,
            FULFILMENT_ROLES: 'worker',
            DATABASE_SSL_CA_FILE: other,
            TEMPORAL_TASK_QUEUE: `pgtls-${suffix}`,
            LEDGER_PRUNE_INTERVAL: '0',
            STATUS_OUTBOX_PRUNE_INTERVAL: '0',
            METRICS_PORT: '0',
          },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stderr }));
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("PostgreSQL's server certificate is not trusted");
      expect(r.stderr).toContain(`verified against the CA in DATABASE_SSL_CA_FILE=${other}`);
    },
    CHILD_MS,
  );
});
