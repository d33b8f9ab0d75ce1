/** Kafka: the brokers and how to reach them (TLS, SASL), the topics, the group — and their checks as one connection. */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  hostPort,
  nonEmpty,
  orList,
  pemCertificates,
  pemPrivateKey,
  positiveInt,
  readableFile,
  type FieldsOf,
} from './fields.js';

/** Kafka's security.protocol values. */
export const KAFKA_SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;
/** The SASL mechanisms the client speaks (Kafka's sasl.mechanism names). */
export const KAFKA_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const;

export const kafkaSchema = {
  /** Comma-separated Kafka bootstrap brokers, host:port each. */
  KAFKA_BROKERS: nonEmpty
    .default('127.0.0.1:19092')
    .transform((v) => v.split(',').map((b) => b.trim()))
    .pipe(z.array(hostPort).min(1)),
  /** Kafka client id prefix used in broker logs. */
  KAFKA_CLIENT_ID: nonEmpty.default('fulfilment'),
  /** Kafka's security.protocol: TLS (SSL), SASL, both (SASL_SSL), or neither (PLAINTEXT, the local stack's default). */
  KAFKA_SECURITY_PROTOCOL: z
    .string()
    .trim()
    .toUpperCase()
    .pipe(z.enum(KAFKA_SECURITY_PROTOCOLS, { message: orList(KAFKA_SECURITY_PROTOCOLS) }))
    .default('PLAINTEXT'),
  /** PEM file of the CA(s) that sign the brokers' certificates (SSL, SASL_SSL); unset: the system's roots. */
  KAFKA_SSL_CA_FILE: pemCertificates.optional(),
  /** PEM file of the client certificate (chain) for brokers that require one; needs KAFKA_SSL_KEY_FILE. */
  KAFKA_SSL_CERT_FILE: pemCertificates.optional(),
  /** PEM file of the client certificate's private key (unencrypted). */
  KAFKA_SSL_KEY_FILE: pemPrivateKey.optional(),
  /** Name sent as SNI and checked against the brokers' certificates; unset: each broker's host name. */
  KAFKA_SSL_SERVERNAME: nonEmpty.optional(),
  /** SASL mechanism (SASL_PLAINTEXT, SASL_SSL). */
  KAFKA_SASL_MECHANISM: z
    .string()
    .trim()
    .toUpperCase()
    .pipe(z.enum(KAFKA_SASL_MECHANISMS, { message: orList(KAFKA_SASL_MECHANISMS) }))
    .optional(),
  /** SASL user (PLAIN, SCRAM-*). */
  KAFKA_SASL_USERNAME: nonEmpty.optional(),
  /** SASL password (PLAIN, SCRAM-*); or KAFKA_SASL_PASSWORD_FILE. Taken as given, spaces included. */
  KAFKA_SASL_PASSWORD: z.string().min(1).optional(),
  /** File holding the SASL password (a mounted secret); one trailing newline is ignored. */
  KAFKA_SASL_PASSWORD_FILE: readableFile()
    .refine(
      (path) => readFileSync(path, 'utf8').replace(/\r?\n$/, '').length > 0,
      'a file holding the password, but it is empty',
    )
    .optional(),
  /** ES module whose default export is the OAUTHBEARER token provider: `async () => ({ value: token })`. */
  KAFKA_SASL_OAUTHBEARER_PROVIDER: readableFile().optional(),
  /** Input topic carrying order events. */
  ORDERS_TOPIC: nonEmpty.default('orders'),
  /** Partitions provisioning gives the orders topic (creating it, or growing it when it has fewer). */
  ORDERS_TOPIC_PARTITIONS: positiveInt.default(6),
  /**
   * Replication factor `fulfilment provision` gives the topics it creates, and `dlq redrive` the redrive log; unset:
   * the broker's own default.replication.factor (3 on managed clusters, 1 on the local stack). Never changes an
   * existing topic.
   */
  KAFKA_REPLICATION_FACTOR: z.coerce
    .number({ invalid_type_error: 'a whole number of replicas ≥ 1' })
    .int('a whole number of replicas ≥ 1')
    .min(1, 'a whole number of replicas ≥ 1')
    .optional(),
  /** Dead-letter topic for records that can never be processed. */
  DLQ_TOPIC: nonEmpty.default('orders.fulfilment.dlq'),
  /** Kafka consumer group of the bridge. */
  CONSUMER_GROUP: nonEmpty.default('fulfilment'),
  /** Days Kafka keeps the orders topic's records: a record can be redelivered that long. Default 7 (Kafka's default). */
  KAFKA_RETENTION_DAYS: positiveInt.default(7),
};

/** What this concern's variables parse to: its checks below read these. */
type Config = FieldsOf<typeof kafkaSchema>;

/** The variables every Kafka client is built from (src/adapters/kafka/client.ts createKafka). */
export const KAFKA_SETTING_NAMES = [
  'KAFKA_BROKERS',
  'KAFKA_CLIENT_ID',
  'KAFKA_SECURITY_PROTOCOL',
  'KAFKA_SSL_CA_FILE',
  'KAFKA_SSL_CERT_FILE',
  'KAFKA_SSL_KEY_FILE',
  'KAFKA_SSL_SERVERNAME',
  'KAFKA_SASL_MECHANISM',
  'KAFKA_SASL_USERNAME',
  'KAFKA_SASL_PASSWORD',
  'KAFKA_SASL_PASSWORD_FILE',
  'KAFKA_SASL_OAUTHBEARER_PROVIDER',
] as const satisfies readonly (keyof typeof kafkaSchema)[];
/** The configuration's Kafka connection settings: what createKafka needs, and nothing else. */
export type KafkaSettings = Pick<Config, (typeof KAFKA_SETTING_NAMES)[number]>;

/** The Kafka security variables must describe one coherent connection: nothing set that the protocol ignores. */
export function kafkaSecurityProblems(c: Partial<Config>, invalid: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const protocol = c.KAFKA_SECURITY_PROTOCOL;
  if (protocol === undefined || invalid.has('KAFKA_SASL_MECHANISM')) return problems;
  // A variable that is set but invalid was reported already; for these rules it counts as set.
  const isSet = (n: keyof Config) => c[n] !== undefined || invalid.has(n);
  const set = (names: (keyof Config)[]) => names.filter(isSet);
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL';
  const sasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
  const tlsSet = set(['KAFKA_SSL_CA_FILE', 'KAFKA_SSL_CERT_FILE', 'KAFKA_SSL_KEY_FILE', 'KAFKA_SSL_SERVERNAME']);
  if (!tls && tlsSet.length > 0) {
    problems.push(
      `${tlsSet.join(', ')} set, but KAFKA_SECURITY_PROTOCOL=${protocol} does not use TLS: expected KAFKA_SECURITY_PROTOCOL=SSL or SASL_SSL, or unset them`,
    );
  }
  if (tls && isSet('KAFKA_SSL_CERT_FILE') !== isSet('KAFKA_SSL_KEY_FILE')) {
    problems.push(
      isSet('KAFKA_SSL_CERT_FILE')
        ? 'KAFKA_SSL_CERT_FILE is set without KAFKA_SSL_KEY_FILE: a client certificate needs its private key'
        : 'KAFKA_SSL_KEY_FILE is set without KAFKA_SSL_CERT_FILE: a private key needs the client certificate it belongs to',
    );
  }
  const saslSet = set([
    'KAFKA_SASL_MECHANISM',
    'KAFKA_SASL_USERNAME',
    'KAFKA_SASL_PASSWORD',
    'KAFKA_SASL_PASSWORD_FILE',
    'KAFKA_SASL_OAUTHBEARER_PROVIDER',
  ]);
  if (!sasl) {
    if (saslSet.length > 0)
      problems.push(
        `${saslSet.join(', ')} set, but KAFKA_SECURITY_PROTOCOL=${protocol} does not use SASL: expected KAFKA_SECURITY_PROTOCOL=SASL_SSL or SASL_PLAINTEXT, or unset them`,
      );
    return problems;
  }
  const mechanism = c.KAFKA_SASL_MECHANISM;
  if (mechanism === undefined) {
    problems.push(
      `KAFKA_SECURITY_PROTOCOL=${protocol} needs KAFKA_SASL_MECHANISM: expected ${orList(KAFKA_SASL_MECHANISMS)}`,
    );
    return problems;
  }
  if (mechanism === 'OAUTHBEARER') {
    if (!isSet('KAFKA_SASL_OAUTHBEARER_PROVIDER')) {
      problems.push(
        'KAFKA_SASL_MECHANISM=OAUTHBEARER needs KAFKA_SASL_OAUTHBEARER_PROVIDER: the path of an ES module whose default export returns the token',
      );
    }
    const unused = set(['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_SASL_PASSWORD_FILE']);
    if (unused.length > 0)
      problems.push(
        `${unused.join(', ')} set, but KAFKA_SASL_MECHANISM=OAUTHBEARER takes its token from KAFKA_SASL_OAUTHBEARER_PROVIDER: unset them`,
      );
    return problems;
  }
  if (isSet('KAFKA_SASL_OAUTHBEARER_PROVIDER')) {
    problems.push(
      `KAFKA_SASL_OAUTHBEARER_PROVIDER set, but KAFKA_SASL_MECHANISM=${mechanism} does not use it: expected KAFKA_SASL_MECHANISM=OAUTHBEARER, or unset it`,
    );
  }
  if (!isSet('KAFKA_SASL_USERNAME')) problems.push(`KAFKA_SASL_MECHANISM=${mechanism} needs KAFKA_SASL_USERNAME`);
  if (!isSet('KAFKA_SASL_PASSWORD') && !isSet('KAFKA_SASL_PASSWORD_FILE')) {
    problems.push(
      `KAFKA_SASL_MECHANISM=${mechanism} needs a password: set KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE`,
    );
  } else if (isSet('KAFKA_SASL_PASSWORD') && isSet('KAFKA_SASL_PASSWORD_FILE')) {
    problems.push('KAFKA_SASL_PASSWORD and KAFKA_SASL_PASSWORD_FILE are both set: expected one of them');
  }
  return problems;
}
