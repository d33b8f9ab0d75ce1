/**
 * Temporal: the TEMPORAL_* variables over the SDK's environment configuration (@temporalio/envconfig: a profile in a
 * TOML file, TLS, an API key, gRPC metadata), merged as the SDK merges them and checked, every certificate read now.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join } from 'node:path';
import { z } from 'zod';
import { hostPort, nonEmpty, url, type FieldsOf } from './fields.js';

export const temporalSchema = {
  /** Temporal frontend, host:port (also from the Temporal profile, see TEMPORAL_PROFILE; this variable wins). */
  TEMPORAL_ADDRESS: hostPort.default('127.0.0.1:7233'),
  /** Temporal namespace (also from the Temporal profile; this variable wins). */
  TEMPORAL_NAMESPACE: nonEmpty.default('default'),
  /** Temporal Cloud API key, sent as `authorization: Bearer <key>`; turns TLS on unless TEMPORAL_TLS=false. */
  TEMPORAL_API_KEY: nonEmpty.optional(),
  /** `true`/`1` connects to Temporal over TLS (system roots unless a CA is given), `false`/`0` never. Unset: TLS when any TLS setting or an API key is given. */
  TEMPORAL_TLS: z.enum(['true', 'false', '1', '0'], { message: 'true, false, 1 or 0' }).optional(),
  /** PEM file of the CA(s) that issued the Temporal server's certificate (unset: the system's roots). */
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: nonEmpty.optional(),
  /** The same as PEM text instead of a file. */
  TEMPORAL_TLS_SERVER_CA_CERT_DATA: nonEmpty.optional(),
  /** Name the Temporal server's certificate is checked against (and sent as SNI), when it differs from TEMPORAL_ADDRESS's host. */
  TEMPORAL_TLS_SERVER_NAME: nonEmpty.optional(),
  /** PEM file of this client's certificate for mTLS; needs TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA). */
  TEMPORAL_TLS_CLIENT_CERT_PATH: nonEmpty.optional(),
  /** The same as PEM text instead of a file. */
  TEMPORAL_TLS_CLIENT_CERT_DATA: nonEmpty.optional(),
  /** PEM file of the private key of the mTLS client certificate. */
  TEMPORAL_TLS_CLIENT_KEY_PATH: nonEmpty.optional(),
  /** The same as PEM text instead of a file. */
  TEMPORAL_TLS_CLIENT_KEY_DATA: nonEmpty.optional(),
  /** Profile of the Temporal client configuration file to use (unset: `default`, when the file has one). */
  TEMPORAL_PROFILE: nonEmpty.optional(),
  /** Temporal client configuration file (TOML, `[profile.<name>]` tables). Unset: `$XDG_CONFIG_HOME/temporalio/temporal.toml` or `~/.config/temporalio/temporal.toml` when it exists. */
  TEMPORAL_CONFIG_FILE: nonEmpty.optional(),
  /** Task queue the worker polls and the bridge starts workflows on. */
  TEMPORAL_TASK_QUEUE: nonEmpty.default('order-fulfilment'),
  /** Base URL of the Temporal Web UI, used to print links to workflows. */
  TEMPORAL_UI_URL: url(['http:', 'https:']).default('http://127.0.0.1:8233'),
};

/** What this concern's variables parse to: its checks below read these. */
type Config = FieldsOf<typeof temporalSchema>;

/** TLS towards Temporal, in the SDK's TLSConfig shape: every certificate already read and checked. */
export interface TemporalTls {
  serverNameOverride?: string;
  serverRootCACertificate?: Buffer;
  clientCertPair?: { crt: Buffer; key: Buffer };
}

export interface TemporalSettings {
  address: string;
  namespace: string;
  /** Where the address came from: TEMPORAL_ADDRESS, the profile (e.g. `profile "prod" of /etc/temporal.toml`) or the local default. */
  addressFrom: string;
  apiKey?: string;
  /** undefined: plaintext; false: TLS explicitly off; otherwise TLS with these settings ({} = system roots). */
  tls?: TemporalTls | false;
  /** gRPC metadata sent with every call (profile `grpc_meta`, TEMPORAL_GRPC_META_<NAME>). */
  metadata?: Record<string, string>;
  /** The profile in use, when a configuration file was read. */
  profile?: { name: string; file: string };
}

/** Variables envconfig reads besides TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE. */
const ENVCONFIG_ONLY = /^TEMPORAL_(API_KEY|TLS.*|PROFILE|CONFIG_FILE|CODEC_.*|GRPC_META_.*)$/;
/** A Temporal variable read through @temporalio/envconfig (TLS, API key, profile), not through configSchema. */
export const isTemporalEnvconfigVariable = (name: string): boolean => ENVCONFIG_ONLY.test(name);

/** The file envconfig reads when TEMPORAL_CONFIG_FILE is unset (Linux/Unix rules, as in envconfig). */
function defaultTemporalConfigFile(env: NodeJS.ProcessEnv): string | undefined {
  const xdg = env.XDG_CONFIG_HOME;
  const dir = xdg ? (isAbsolute(xdg) ? xdg : undefined) : env.HOME ? join(env.HOME, '.config') : undefined;
  return dir === undefined ? undefined : join(dir, 'temporalio', 'temporal.toml');
}

function readProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT'
    ? 'no such file'
    : code === 'EACCES'
      ? 'permission denied'
      : code === 'EISDIR'
        ? 'a directory, not a file'
        : (err as Error).message;
}

type TlsField = 'server_ca_cert' | 'client_cert' | 'client_key';
const TLS_ENV: Record<TlsField, string> = {
  server_ca_cert: 'TEMPORAL_TLS_SERVER_CA_CERT',
  client_cert: 'TEMPORAL_TLS_CLIENT_CERT',
  client_key: 'TEMPORAL_TLS_CLIENT_KEY',
};

/**
 * The Temporal connection settings: the envconfig profile (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE) with the
 * TEMPORAL_* variables over it, exactly as the SDK's loadClientConfigProfile merges them, then checked: every
 * certificate and key file is read and parsed now, so a bad one fails start-up naming the variable (or profile key)
 * that pointed at it. envconfig (and the Temporal modules under it) is loaded only when there is something for it
 * to read — a configuration file or one of its variables — so the CLI's quick paths stay free of Temporal modules.
 */
export function temporalSettings(
  rawEnv: NodeJS.ProcessEnv,
  c: Partial<Config>,
  problems: string[],
): TemporalSettings | undefined {
  // Empty means unset, as for every other variable; TEMPORAL_GRPC_META_X= keeps envconfig's meaning (drop header X).
  const env = Object.fromEntries(
    Object.entries(rawEnv).filter(
      (e): e is [string, string] => typeof e[1] === 'string' && (e[1] !== '' || e[0].startsWith('TEMPORAL_GRPC_META_')),
    ),
  );
  const source = configSource(env, problems);
  if (!source) return undefined;
  if (!source.fileExists && !Object.keys(env).some((k) => ENVCONFIG_ONLY.test(k))) {
    if (c.TEMPORAL_ADDRESS === undefined || c.TEMPORAL_NAMESPACE === undefined) return undefined;
    return {
      address: c.TEMPORAL_ADDRESS,
      namespace: c.TEMPORAL_NAMESPACE,
      addressFrom: env.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : 'the local default',
    };
  }
  const profile = loadProfile(env, source, problems);
  if (!profile) return undefined;
  const before = problems.length;
  const { address, addressFrom, namespace } = addressAndNamespace(env, c, profile, problems);
  if (env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION !== undefined) {
    problems.push(
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is not supported: the Temporal TypeScript SDK always verifies the server; set TEMPORAL_TLS_SERVER_NAME to the name in its certificate instead',
    );
  }
  const { merged } = profile;
  // As the SDK does: an API key means TLS unless it is turned off.
  const tls =
    merged.tls !== undefined
      ? temporalTls(merged.tls, env, profile, problems)
      : merged.apiKey !== undefined
        ? {}
        : undefined;
  if (problems.length > before || address === undefined || namespace === undefined) return undefined;
  return {
    address,
    namespace,
    addressFrom,
    ...(merged.apiKey !== undefined ? { apiKey: merged.apiKey } : {}),
    ...(tls !== undefined ? { tls } : {}),
    ...(merged.grpcMeta && Object.keys(merged.grpcMeta).length > 0 ? { metadata: merged.grpcMeta } : {}),
    // The profile named in messages: one that exists in the file (an absent default profile is no profile).
    ...(source.fileExists && (env.TEMPORAL_PROFILE !== undefined || Object.keys(profile.fromFile).length > 0)
      ? { profile: { name: profile.name, file: source.file! } }
      : {}),
  };
}

type Envconfig = typeof import('@temporalio/envconfig');
type Profile = import('@temporalio/envconfig').ClientConfigProfile;

/** Where the configuration file is, whether it exists, and how messages name it; undefined (with a problem) when wrong. */
interface ConfigSource {
  explicitFile: string | undefined;
  file: string | undefined;
  fileExists: boolean;
  fileName: string;
}

function configSource(env: Record<string, string>, problems: string[]): ConfigSource | undefined {
  const explicitFile = env.TEMPORAL_CONFIG_FILE;
  if (explicitFile !== undefined && !existsSync(explicitFile)) {
    problems.push(
      `TEMPORAL_CONFIG_FILE=${JSON.stringify(explicitFile)} is invalid: expected a Temporal client configuration file (TOML), but there is no such file`,
    );
    return undefined;
  }
  const file = explicitFile ?? defaultTemporalConfigFile(env);
  const fileExists = file !== undefined && existsSync(file);
  const fileName = explicitFile !== undefined ? `${explicitFile} (TEMPORAL_CONFIG_FILE)` : (file ?? '');
  if (env.TEMPORAL_PROFILE !== undefined && !fileExists) {
    problems.push(
      `TEMPORAL_PROFILE=${JSON.stringify(env.TEMPORAL_PROFILE)} is invalid: there is no Temporal configuration file to take it from (set TEMPORAL_CONFIG_FILE${file ? `, or create ${file}` : ''})`,
    );
    return undefined;
  }
  return { explicitFile, file, fileExists, fileName };
}

/** The profile as the file alone has it, and merged with the variables; `inFile` names one of its keys in messages. */
interface LoadedProfile {
  name: string;
  fromFile: Profile;
  merged: Profile;
  inFile: (key: string) => string;
}

/** Loads the profile through envconfig (strict: a misspelt key in a security setting must not pass silently). */
function loadProfile(env: Record<string, string>, source: ConfigSource, problems: string[]): LoadedProfile | undefined {
  const envconfig = createRequire(import.meta.url)('@temporalio/envconfig') as Envconfig;
  const name = env.TEMPORAL_PROFILE ?? 'default';
  const { fileExists, fileName } = source;
  try {
    const fromFile = fileExists
      ? envconfig.loadClientConfigProfile({ overrideEnvVars: env, disableEnv: true, configFileStrict: true })
      : {};
    const merged = envconfig.loadClientConfigProfile({
      overrideEnvVars: env,
      disableFile: !fileExists,
      configFileStrict: true,
    });
    return { name, fromFile, merged, inFile: (key) => `${key} of [profile.${name}] in ${fileName}` };
  } catch (err) {
    const message = (err as Error).message;
    if (/^Profile '.*' not found/.test(message)) {
      const names = Object.keys(envconfig.loadClientConfig({ overrideEnvVars: env, configFileStrict: false }).profiles);
      problems.push(
        `TEMPORAL_PROFILE=${JSON.stringify(name)} is invalid: ${fileName} has no [profile.${name}] (it has ${names.length ? names.map((n) => `"${n}"`).join(', ') : 'none'})`,
      );
    } else {
      problems.push(
        `${source.explicitFile !== undefined ? 'TEMPORAL_CONFIG_FILE' : 'The Temporal configuration file'} ${JSON.stringify(source.file)} is invalid: ${message}`,
      );
    }
    return undefined;
  }
}

/** The address and namespace: a variable wins, then the profile's key, then the local default. */
function addressAndNamespace(
  env: Record<string, string>,
  c: Partial<Config>,
  { fromFile, inFile }: LoadedProfile,
  problems: string[],
): { address: string | undefined; addressFrom: string; namespace: string | undefined } {
  let address = c.TEMPORAL_ADDRESS;
  let addressFrom = env.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : 'the local default';
  if (env.TEMPORAL_ADDRESS === undefined && fromFile.address !== undefined) {
    const parsed = hostPort.safeParse(fromFile.address);
    if (parsed.success) [address, addressFrom] = [parsed.data, inFile('address')];
    else problems.push(`${inFile('address')} is invalid: expected host:port, got ${JSON.stringify(fromFile.address)}`);
  }
  let namespace = c.TEMPORAL_NAMESPACE;
  if (env.TEMPORAL_NAMESPACE === undefined && fromFile.namespace !== undefined) {
    if (fromFile.namespace.trim() !== '') namespace = fromFile.namespace.trim();
    else problems.push(`${inFile('namespace')} is invalid: expected a namespace name`);
  }
  return { address, addressFrom, namespace };
}

/** TLS towards Temporal from the merged profile: every certificate and key read and checked, a pair that matches. */
function temporalTls(
  t: NonNullable<Profile['tls']>,
  env: Record<string, string>,
  { inFile }: LoadedProfile,
  problems: string[],
): TemporalTls | false {
  if (t.disabled === true) return false;
  /** Reads one certificate or key source; the origin named is the variable when it came from one, else the profile key. */
  const read = (
    field: TlsField,
    source: import('@temporalio/envconfig').ConfigDataSource | undefined,
    check: (pem: Buffer) => void,
  ): Buffer | undefined => {
    if (source === undefined) return undefined;
    const isPath = 'path' in source;
    const origin =
      env[`${TLS_ENV[field]}_${isPath ? 'PATH' : 'DATA'}`] !== undefined
        ? `${TLS_ENV[field]}_${isPath ? 'PATH' : 'DATA'}`
        : inFile(`tls.${field}_${isPath ? 'path' : 'data'}`);
    let pem: Buffer;
    try {
      pem = isPath ? readFileSync(source.path) : Buffer.from(source.data);
    } catch (err) {
      problems.push(
        `${origin}=${JSON.stringify(isPath ? source.path : '…')} is invalid: cannot read it (${readProblem(err)})`,
      );
      return undefined;
    }
    try {
      check(pem);
    } catch (err) {
      const what = field === 'client_key' ? 'a PEM private key' : 'a PEM certificate';
      problems.push(
        `${origin}${isPath ? `=${JSON.stringify(source.path)}` : ''} is invalid: expected ${what} (${(err as Error).message})`,
      );
      return undefined;
    }
    return pem;
  };
  const ca = read('server_ca_cert', t.serverCACert, (pem) => new X509Certificate(pem));
  const crt = read('client_cert', t.clientCert, (pem) => new X509Certificate(pem));
  const key = read('client_key', t.clientKey, (pem) => createPrivateKey(pem));
  if ((t.clientCert === undefined) !== (t.clientKey === undefined)) {
    problems.push(
      t.clientCert === undefined
        ? 'TEMPORAL_TLS_CLIENT_KEY_PATH (or its profile key) is set without a client certificate: set TEMPORAL_TLS_CLIENT_CERT_PATH too'
        : 'TEMPORAL_TLS_CLIENT_CERT_PATH (or its profile key) is set without its private key: set TEMPORAL_TLS_CLIENT_KEY_PATH too',
    );
  } else if (crt && key && !new X509Certificate(crt).checkPrivateKey(createPrivateKey(key))) {
    problems.push(
      'TEMPORAL_TLS_CLIENT_KEY_PATH does not belong to TEMPORAL_TLS_CLIENT_CERT_PATH: the private key does not match the certificate',
    );
  }
  return {
    ...(t.serverName ? { serverNameOverride: t.serverName } : {}),
    ...(ca ? { serverRootCACertificate: ca } : {}),
    ...(crt && key ? { clientCertPair: { crt, key } } : {}),
  };
}
