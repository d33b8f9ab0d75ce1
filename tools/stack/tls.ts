/**
 * Certificates for the stack's TLS listeners, made with the `openssl` CLI: a CA of the stack's own, a server
 * certificate it signs for the names the listener is reached by and, for a listener that requires one (mTLS), a
 * client certificate. PEM files, private keys unencrypted PKCS#8 (Kafka reads them as a PEM keystore). Tests use
 * makeCa for a second, unrelated CA.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StackError } from './log.js';
import { runQuick, which } from './proc.js';

export interface CaFiles {
  /** The CA certificate, what clients trust (KAFKA_SSL_CA_FILE). */
  cert: string;
  key: string;
}

export interface ServerFiles {
  cert: string;
  key: string;
  /** Private key then certificate chain (server, CA) in one file: Kafka's `ssl.keystore.type=PEM`. */
  keystore: string;
}

/** Days the certificates are valid; they are made again when fewer than RENEW_DAYS remain. */
const VALID_DAYS = 825;
const RENEW_DAYS = 30;

function openssl(args: string[], what: string): string {
  const bin = which('openssl');
  if (!bin)
    throw new StackError('openssl not found: apt-get install openssl (the stack makes its TLS certificates with it)');
  const r = runQuick(bin, args);
  if (r.status !== 0) throw new StackError(`openssl could not ${what}: ${r.output.trim()}`);
  return r.output;
}

/** Whether the certificate exists and stays valid for RENEW_DAYS more days. */
function fresh(cert: string): boolean {
  if (!existsSync(cert)) return false;
  const bin = which('openssl');
  return (
    bin !== undefined &&
    runQuick(bin, ['x509', '-in', cert, '-noout', '-checkend', String(RENEW_DAYS * 86_400)]).status === 0
  );
}

function newKey(path: string): void {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', path], `make the key ${path}`);
  chmodSync(path, 0o600);
}

/** A new self-signed CA in `dir` (ca.crt, ca.key), replacing any there. */
export function makeCa(dir: string, commonName: string): CaFiles {
  mkdirSync(dir, { recursive: true });
  const files = { cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') };
  newKey(files.key);
  openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      files.key,
      '-sha256',
      '-days',
      String(VALID_DAYS),
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-out',
      files.cert,
    ],
    `make the CA certificate ${files.cert}`,
  );
  return files;
}

/** A key and a certificate `<base>.key`, `<base>.crt` in `dir`, signed by `ca` with these v3 extensions. */
function issue(
  dir: string,
  ca: CaFiles,
  base: string,
  commonName: string,
  extensions: string[],
): { cert: string; key: string } {
  mkdirSync(dir, { recursive: true });
  const files = { cert: join(dir, `${base}.crt`), key: join(dir, `${base}.key`) };
  const csr = join(dir, `${base}.csr`);
  const ext = join(dir, `${base}.ext`);
  newKey(files.key);
  openssl(
    ['req', '-new', '-key', files.key, '-subj', `/CN=${commonName}`, '-out', csr],
    `make the certificate request for ${files.cert}`,
  );
  writeFileSync(ext, `${extensions.join('\n')}\n`);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-sha256',
      '-days',
      String(VALID_DAYS),
      '-extfile',
      ext,
      '-out',
      files.cert,
    ],
    `sign the certificate ${files.cert}`,
  );
  rmSync(csr, { force: true });
  rmSync(ext, { force: true });
  return files;
}

/** A server certificate in `dir` signed by `ca`, for `names` (IP addresses and DNS names), replacing any there. */
export function makeServerCert(dir: string, ca: CaFiles, names: string[]): ServerFiles {
  const san = names.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  const { cert, key } = issue(dir, ca, 'server', names[0] ?? 'localhost', [
    `subjectAltName=${san}`,
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
  ]);
  const keystore = join(dir, 'server.keystore.pem');
  writeFileSync(keystore, `${readFileSync(key, 'utf8')}${readFileSync(cert, 'utf8')}${readFileSync(ca.cert, 'utf8')}`, {
    mode: 0o600,
  });
  chmodSync(keystore, 0o600);
  return { cert, key, keystore };
}

/** Whether `cert` exists, was signed by the CA in `caCert` and stays valid for RENEW_DAYS more days. */
function signedAndFresh(cert: string, caCert: string): boolean {
  const bin = which('openssl');
  return fresh(cert) && bin !== undefined && runQuick(bin, ['verify', '-CAfile', caCert, cert]).status === 0;
}

/**
 * The stack's CA and a server certificate for `names` in `dir`, made when missing, near expiry, or issued for
 * other names; kept otherwise, so clients holding the CA file keep trusting a restarted service.
 */
export function ensureServerCertificates(
  dir: string,
  names: string[],
): { ca: CaFiles; server: ServerFiles; made: boolean } {
  const caDir = join(dir, 'ca');
  let ca: CaFiles = { cert: join(caDir, 'ca.crt'), key: join(caDir, 'ca.key') };
  let made = false;
  if (!fresh(ca.cert) || !existsSync(ca.key)) {
    ca = makeCa(caDir, 'fulfilment local stack CA');
    made = true;
  }
  const server: ServerFiles = {
    cert: join(dir, 'server.crt'),
    key: join(dir, 'server.key'),
    keystore: join(dir, 'server.keystore.pem'),
  };
  const namesFile = join(dir, 'server.names');
  const wanted = names.join(',');
  const sameNames = existsSync(namesFile) && readFileSync(namesFile, 'utf8').trim() === wanted;
  if (made || !sameNames || !signedAndFresh(server.cert, ca.cert) || !existsSync(server.keystore)) {
    makeServerCert(dir, ca, names);
    writeFileSync(namesFile, `${wanted}\n`);
    made = true;
  }
  return { ca, server, made };
}

/**
 * A client certificate (TLS client authentication, for mTLS) for `commonName` in `dir` (`client.crt`, `client.key`),
 * signed by `ca`; made when missing, near expiry, not signed by `ca` or issued to another name, kept otherwise.
 */
export function ensureClientCertificate(
  dir: string,
  ca: CaFiles,
  commonName: string,
): { cert: string; key: string; made: boolean } {
  const files = { cert: join(dir, 'client.crt'), key: join(dir, 'client.key') };
  const bin = which('openssl');
  const subject =
    bin && existsSync(files.cert)
      ? runQuick(bin, ['x509', '-in', files.cert, '-noout', '-subject', '-nameopt', 'RFC2253']).output.trim()
      : '';
  if (subject === `subject=CN=${commonName}` && existsSync(files.key) && signedAndFresh(files.cert, ca.cert))
    return { ...files, made: false };
  issue(dir, ca, 'client', commonName, [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=clientAuth',
  ]);
  return { ...files, made: true };
}
