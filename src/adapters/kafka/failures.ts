/**
 * Kafka connection failures that no wait can cure, told from a broker that is down. No Kafka client library is
 * imported here (the CLI's entry point uses it before it loads one): errors are read by their names and codes.
 */
import type { KafkaSettings } from '../../base/config.js';

/**
 * A Kafka setting that cannot work however long one waits (an OAUTHBEARER provider module without a default
 * export). Not retriable for kafkajs, so it fails the operation at once.
 */
export class KafkaSettingsError extends Error {
  override name = 'KafkaSettingsError';
  readonly retriable = false;
}

/** OpenSSL's and Node's codes for a peer certificate that was not verified: no retry makes it trusted. */
const TLS_VERIFY_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
/** TLS alerts by which a broker refuses this client's certificate (or its absence). */
const TLS_CLIENT_CERT_REFUSED =
  /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_(?:BAD_CERTIFICATE|CERTIFICATE_REQUIRED|UNKNOWN_CA|CERTIFICATE_UNKNOWN|UNSUPPORTED_CERTIFICATE|CERTIFICATE_EXPIRED|CERTIFICATE_REVOKED|ACCESS_DENIED)$/;

/** The error and its causes, outermost first. */
function causes(err: unknown): { name?: string; code?: string; message?: string }[] {
  const out: { name?: string; code?: string; message?: string }[] = [];
  for (let e = err, i = 0; e && typeof e === 'object' && i < 8; e = (e as { cause?: unknown }).cause, i += 1)
    out.push(e as { name?: string; code?: string; message?: string });
  return out;
}

/**
 * When `err` from connecting to Kafka is one no wait can cure — the brokers refused the SASL credentials, their
 * certificate could not be verified, they refused ours, or a setting cannot work — what went wrong and which
 * variables to check; undefined for anything else (a broker that is down or unreachable is waited for).
 */
export function permanentKafkaFailure(err: unknown, s: KafkaSettings): string | undefined {
  const chain = causes(err);
  const brokers = s.KAFKA_BROKERS.join(',');
  const settings = chain.find((e) => e.name === 'KafkaSettingsError');
  if (settings) return `Kafka at ${brokers}: ${settings.message}`;
  const auth = chain.find((e) => e.name === 'KafkaJSSASLAuthenticationError');
  if (auth) {
    const who =
      s.KAFKA_SASL_MECHANISM === 'OAUTHBEARER'
        ? 'the token from KAFKA_SASL_OAUTHBEARER_PROVIDER'
        : `user ${JSON.stringify(s.KAFKA_SASL_USERNAME)}`;
    const check =
      s.KAFKA_SASL_MECHANISM === 'OAUTHBEARER'
        ? 'KAFKA_SASL_MECHANISM and KAFKA_SASL_OAUTHBEARER_PROVIDER'
        : `KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME and ${s.KAFKA_SASL_PASSWORD_FILE !== undefined ? 'KAFKA_SASL_PASSWORD_FILE' : 'KAFKA_SASL_PASSWORD'}`;
    return `Kafka at ${brokers} refused the SASL authentication (${s.KAFKA_SASL_MECHANISM ?? 'no mechanism'}, ${who}): ${auth.message}. Check ${check}.`;
  }
  // The broker rejects an OAUTHBEARER token with an error challenge kafkajs does not answer; the broker then
  // refuses its next request as ILLEGAL_SASL_STATE. No other mechanism ends that way.
  if (
    s.KAFKA_SASL_MECHANISM === 'OAUTHBEARER' &&
    chain.some((e) => (e as { type?: string }).type === 'ILLEGAL_SASL_STATE')
  ) {
    return `Kafka at ${brokers} did not accept the OAUTHBEARER token from KAFKA_SASL_OAUTHBEARER_PROVIDER=${s.KAFKA_SASL_OAUTHBEARER_PROVIDER ?? ''} (the SASL exchange failed: ILLEGAL_SASL_STATE). Check the tokens that module returns (issuer, audience, expiry, principal claim) against the brokers' OAUTHBEARER settings.`;
  }
  const tls = chain.find((e) => e.code !== undefined && TLS_VERIFY_CODES.has(e.code));
  if (tls) {
    const name = tls.code === 'ERR_TLS_CERT_ALTNAME_INVALID' || tls.code === 'HOSTNAME_MISMATCH';
    const check = name
      ? `KAFKA_SSL_SERVERNAME${s.KAFKA_SSL_SERVERNAME ? `=${s.KAFKA_SSL_SERVERNAME}` : " (unset, so each broker's host in KAFKA_BROKERS)"}: it must be a name the broker's certificate carries`
      : `KAFKA_SSL_CA_FILE${s.KAFKA_SSL_CA_FILE ? `=${s.KAFKA_SSL_CA_FILE}` : " (unset, so the system's roots)"}: it must hold the CA that signed the broker's certificate`;
    return `the TLS certificate of Kafka at ${brokers} was not accepted (${tls.code}: ${stripPrefix(tls.message)}). Check ${check}.`;
  }
  const refused = chain.find((e) => e.code !== undefined && TLS_CLIENT_CERT_REFUSED.test(e.code));
  if (refused) {
    return `Kafka at ${brokers} refused this client's TLS certificate (${refused.code}). Check KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE (a certificate the brokers' CA signed).`;
  }
  return undefined;
}

const stripPrefix = (message: string | undefined) => (message ?? '').replace(/^Connection error: /, '');

/**
 * The broker's answers by which an idempotent producer's state — its producer id, epoch and per-partition sequence
 * numbers — no longer matches the broker's, as after a broker outage or a request that failed half-way. kafkajs has
 * no recovery for them (the Java client bumps its epoch): every later send of that producer fails the same way, so
 * the producer has to be replaced by a new one, which starts with a new id and sequence 0.
 */
const PRODUCER_STATE_ERRORS = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'INVALID_PRODUCER_ID_MAPPING',
]);

/** The broker's error type when `err` (or a cause) says the producer's idempotent state is lost; else undefined. */
export function producerStateLost(err: unknown): string | undefined {
  return causes(err)
    .map((e) => (e as { type?: string }).type)
    .find((type) => type !== undefined && PRODUCER_STATE_ERRORS.has(type));
}
