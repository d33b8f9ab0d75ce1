/**
 * The Kafka client shared by the bridge, the worker's dead letters, the demo, the bench, the tests and the CLI,
 * logging through pino. Every Kafka user builds its client here, from the configuration's Kafka settings: brokers,
 * TLS (CA, client certificate, server name) and SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER), so a deployment sets
 * its security once, in the environment (src/base/config.ts).
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { ConnectionOptions } from 'node:tls';
import { pathToFileURL } from 'node:url';
import { Kafka, logLevel, type LogEntry, type OauthbearerProviderResponse, type SASLOptions } from 'kafkajs';
import './request-queue-timer.js';

export type { Kafka } from 'kafkajs';
import type { KafkaSettings } from '../../base/config.js';
import type { Logger } from '../../base/log.js';
import { KAFKA_RETRY } from '../../base/retry-policies.js';
import { kafkajsLogLevel } from './log-levels.js';
import { KafkaSettingsError, permanentKafkaFailure } from './failures.js';

export type { KafkaSettings } from '../../base/config.js';
export { KafkaSettingsError, permanentKafkaFailure } from './failures.js';

export interface KafkaClientOptions {
  /** Client id in the brokers' logs and quotas; default KAFKA_CLIENT_ID. */
  clientId?: string;
  /**
   * kafkajs's own retries of one request or connection (300 ms doubling to 5 s, ±20 % jitter); default
   * KAFKA_RETRY.requests (7, about 19 s: a leader election ridden out). When they run out the operation fails: a send
   * or commit reaches the caller's backoff, a consumer crashes (and is restarted).
   */
  retries?: number;
  /** Milliseconds to establish a connection (TCP, TLS and SASL); kafkajs's default 1000. */
  connectionTimeout?: number;
  /** Called for every failed connection attempt kafkajs reports; it retries them itself, so count them as retries. */
  onConnectionError?: () => void;
}

const KAFKAJS_MECHANISM = {
  PLAIN: 'plain',
  'SCRAM-SHA-256': 'scram-sha-256',
  'SCRAM-SHA-512': 'scram-sha-512',
} as const;

/** The password: KAFKA_SASL_PASSWORD, or KAFKA_SASL_PASSWORD_FILE's content without its trailing newline. */
function saslPassword(s: KafkaSettings): string {
  if (s.KAFKA_SASL_PASSWORD !== undefined) return s.KAFKA_SASL_PASSWORD;
  if (s.KAFKA_SASL_PASSWORD_FILE !== undefined)
    return readFileSync(s.KAFKA_SASL_PASSWORD_FILE, 'utf8').replace(/\r?\n$/, '');
  throw new KafkaSettingsError(
    `KAFKA_SASL_MECHANISM=${s.KAFKA_SASL_MECHANISM} needs KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE`,
  );
}

type TokenProvider = () => Promise<OauthbearerProviderResponse>;
const providers = new Map<string, Promise<TokenProvider>>();

/** The default export of the KAFKA_SASL_OAUTHBEARER_PROVIDER module, imported once per process. */
function loadTokenProvider(path: string): Promise<TokenProvider> {
  let loaded = providers.get(path);
  if (!loaded) {
    const url = pathToFileURL(isAbsolute(path) ? path : resolve(path)).href;
    loaded = import(url).then(
      (mod: { default?: unknown }) => {
        if (typeof mod.default !== 'function') {
          throw new KafkaSettingsError(
            `KAFKA_SASL_OAUTHBEARER_PROVIDER=${path}: the module's default export is ${typeof mod.default}, expected the token provider function (async () => ({ value: token }))`,
          );
        }
        return mod.default as TokenProvider;
      },
      (err: unknown) => {
        throw new KafkaSettingsError(
          `KAFKA_SASL_OAUTHBEARER_PROVIDER=${path} could not be imported: ${(err as Error).message}`,
        );
      },
    );
    providers.set(path, loaded);
  }
  return loaded;
}

/** kafkajs's `ssl` and `sasl` options for the settings; certificate files are read now. */
export function kafkaSecurityOptions(s: KafkaSettings): { ssl?: ConnectionOptions | boolean; sasl?: SASLOptions } {
  const out: { ssl?: ConnectionOptions | boolean; sasl?: SASLOptions } = {};
  const protocol = s.KAFKA_SECURITY_PROTOCOL;
  if (protocol === 'SSL' || protocol === 'SASL_SSL') {
    const tls: ConnectionOptions = { rejectUnauthorized: true };
    if (s.KAFKA_SSL_CA_FILE) tls.ca = [readFileSync(s.KAFKA_SSL_CA_FILE, 'utf8')];
    if (s.KAFKA_SSL_CERT_FILE) tls.cert = readFileSync(s.KAFKA_SSL_CERT_FILE, 'utf8');
    if (s.KAFKA_SSL_KEY_FILE) tls.key = readFileSync(s.KAFKA_SSL_KEY_FILE, 'utf8');
    if (s.KAFKA_SSL_SERVERNAME) tls.servername = s.KAFKA_SSL_SERVERNAME;
    out.ssl = tls;
  }
  if (protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL') {
    const mechanism = s.KAFKA_SASL_MECHANISM;
    if (mechanism === undefined)
      throw new KafkaSettingsError(`KAFKA_SECURITY_PROTOCOL=${protocol} needs KAFKA_SASL_MECHANISM`);
    if (mechanism === 'OAUTHBEARER') {
      const path = s.KAFKA_SASL_OAUTHBEARER_PROVIDER;
      if (path === undefined)
        throw new KafkaSettingsError('KAFKA_SASL_MECHANISM=OAUTHBEARER needs KAFKA_SASL_OAUTHBEARER_PROVIDER');
      // kafkajs asks for a token on every connection's authentication; the hook caches and refreshes it.
      out.sasl = { mechanism: 'oauthbearer', oauthBearerProvider: async () => (await loadTokenProvider(path))() };
    } else {
      out.sasl = {
        mechanism: KAFKAJS_MECHANISM[mechanism],
        username: s.KAFKA_SASL_USERNAME ?? '',
        password: saslPassword(s),
      };
    }
  }
  return out;
}

export function createKafka(settings: KafkaSettings, logger: Logger, opts: KafkaClientOptions = {}): Kafka {
  const log = logger.child({ component: 'kafkajs' });
  const security = kafkaSecurityOptions(settings);
  // A TLS handshake on a busy machine can outlast kafkajs's 1 s default.
  const connectionTimeout = opts.connectionTimeout ?? (security.ssl ? 3_000 : undefined);
  return new Kafka({
    clientId: opts.clientId ?? settings.KAFKA_CLIENT_ID,
    brokers: settings.KAFKA_BROKERS,
    ...security,
    ...(connectionTimeout !== undefined ? { connectionTimeout } : {}),
    logLevel: logLevel.WARN,
    retry: {
      initialRetryTime: KAFKA_RETRY.initialRetryTime,
      retries: opts.retries ?? KAFKA_RETRY.requests,
      maxRetryTime: KAFKA_RETRY.maxRetryTime,
    },
    logCreator: () => (entry: LogEntry) => {
      const { message, ...rest } = entry.log;
      // A rebalance and its kin are what a consumer group does, not errors (log-levels.ts).
      const level = kafkajsLogLevel(entry);
      // kafkajs reports a failed connection attempt only through its log; one entry per attempt.
      if (
        entry.namespace === 'Connection' &&
        entry.level === logLevel.ERROR &&
        /^Connection (error|timeout)/.test(message)
      )
        opts.onConnectionError?.();
      log[level]({ namespace: entry.namespace, ...rest }, message);
    },
  });
}

/**
 * Connects once (no retry) to the brokers with the settings — TLS handshake, SASL authentication, a metadata
 * request — and disconnects. Start-up waits on it: it fails fast and tells a refused credential from a broker
 * that is down (permanentKafkaFailure). Every listed broker is tried in turn until one answers, as a client
 * bootstraps: kafkajs alone, without retries, always tries the first, so a cluster whose first listed node is down
 * would keep a new instance from ever starting. A refusal no wait cures is thrown at once; when no broker answers,
 * the first broker's failure is thrown.
 */
export async function probeKafka(
  s: KafkaSettings,
  logger: Logger,
  opts: Pick<KafkaClientOptions, 'clientId' | 'onConnectionError'> = {},
): Promise<void> {
  let failure: { error: unknown } | undefined;
  for (const broker of s.KAFKA_BROKERS) {
    const admin = createKafka({ ...s, KAFKA_BROKERS: [broker] }, logger, {
      ...opts,
      retries: 0,
      connectionTimeout: 5_000,
    }).admin();
    try {
      await admin.connect();
      return;
    } catch (error) {
      if (permanentKafkaFailure(error, s) !== undefined) throw error;
      failure ??= { error };
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
  throw failure?.error ?? new KafkaSettingsError('KAFKA_BROKERS lists no broker');
}
