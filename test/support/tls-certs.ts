/**
 * Throw-away PKI for TLS tests, made with the Debian `openssl` CLI into a fresh temp dir: a CA, a server
 * certificate for 127.0.0.1 / localhost and a client certificate issued by it, and a second CA (trusted by nobody)
 * with a server and a client certificate of its own. EC P-256 keys in PKCS#8, v3 extensions that both Node's TLS
 * and rustls (the worker's Rust core) accept.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface KeyPair {
  cert: string;
  key: string;
}

export interface TestPki {
  dir: string;
  /** The CA that issued `server` and `client` (a listener of a test trusts it for clients, its clients for the server). */
  ca: string;
  server: KeyPair;
  client: KeyPair;
  /** A CA nobody trusts, and certificates it issued. */
  otherCa: string;
  otherServer: KeyPair;
  otherClient: KeyPair;
  remove(): void;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await run('openssl', args, { cwd });
}

async function makeCa(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.pem`);
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key], dir);
  await openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  return { cert, key };
}

async function issue(dir: string, ca: { cert: string; key: string }, name: string, ext: string): Promise<KeyPair> {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.pem`);
  const extFile = join(dir, `${name}.ext`);
  writeFileSync(extFile, `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n${ext}\n`);
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key], dir);
  await openssl(['req', '-new', '-key', key, '-out', csr, '-subj', `/CN=${name}`], dir);
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-set_serial',
      `0x${randomBytes(8).toString('hex')}`,
      '-out',
      cert,
      '-days',
      '2',
      '-extfile',
      extFile,
    ],
    dir,
  );
  return { cert, key };
}

const SERVER_EXT = 'extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1';
const CLIENT_EXT = 'extendedKeyUsage=clientAuth';

/** Generates the whole set; `remove()` deletes the directory. */
export async function makeTestPki(): Promise<TestPki> {
  const dir = mkdtempSync(join(tmpdir(), 'fulfilment-pki-'));
  const ca = await makeCa(dir, 'test-ca');
  const otherCa = await makeCa(dir, 'untrusted-ca');
  const [server, client, otherServer, otherClient] = await Promise.all([
    issue(dir, ca, 'temporal-server', SERVER_EXT),
    issue(dir, ca, 'fulfilment-client', CLIENT_EXT),
    issue(dir, otherCa, 'impostor-server', SERVER_EXT),
    issue(dir, otherCa, 'impostor-client', CLIENT_EXT),
  ]);
  return {
    dir,
    ca: ca.cert,
    server,
    client,
    otherCa: otherCa.cert,
    otherServer,
    otherClient,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
