/** The local stack's Kafka SASL_SSL listener (tools/stack), as the service's configuration names it. */
import { stackStatus, type KafkaSaslSslInfo } from '../../tools/stack/index.js';

/** The listener, or a clear failure when the stack does not run one (an external Kafka). */
export async function saslSslListener(): Promise<KafkaSaslSslInfo> {
  const status = await stackStatus();
  if (!status.kafkaSaslSsl)
    throw new Error(
      "this test needs the local stack's Kafka and its SASL_SSL listener (KAFKA_BROKERS must not be set): npm run stack -- up",
    );
  return status.kafkaSaslSsl;
}

/** SCRAM-SHA-512 as the stack's user, the broker's certificate verified against the stack's CA. */
export function saslSslEnv(l: KafkaSaslSslInfo): Record<string, string> {
  return {
    KAFKA_BROKERS: l.address,
    KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
    KAFKA_SASL_USERNAME: l.username,
    KAFKA_SASL_PASSWORD_FILE: l.passwordFile,
    KAFKA_SSL_CA_FILE: l.caFile,
  };
}
