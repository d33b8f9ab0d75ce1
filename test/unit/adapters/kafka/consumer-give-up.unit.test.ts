import {
  KafkaJSConnectionError,
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSSASLAuthenticationError,
} from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { isPermanentKafkaError } from '../../../../src/adapters/kafka/consumer-supervisor.js';

const protocol = (type: string) =>
  new KafkaJSProtocolError({ type, code: 0, retriable: false, message: type } as never);

describe('when the bridge consumer gives up for good', () => {
  it('on refused credentials or authorisation, however kafkajs wraps them', () => {
    expect(
      isPermanentKafkaError(
        new (KafkaJSSASLAuthenticationError as unknown as new (m: string) => Error)(
          'SASL SCRAM SHA512 authentication failed',
        ),
      ),
    ).toBe(true);
    for (const type of [
      'SASL_AUTHENTICATION_FAILED',
      'TOPIC_AUTHORIZATION_FAILED',
      'GROUP_AUTHORIZATION_FAILED',
      'CLUSTER_AUTHORIZATION_FAILED',
    ]) {
      expect(isPermanentKafkaError(protocol(type)), type).toBe(true);
      expect(
        isPermanentKafkaError(
          new (KafkaJSNonRetriableError as unknown as new (m: string, o: { cause: Error }) => Error)('crashed', {
            cause: protocol(type),
          }),
        ),
        `${type} wrapped`,
      ).toBe(true);
    }
  });

  it('never on what a restart may cure: connections, coordinators, rebalances, exhausted retries', () => {
    expect(isPermanentKafkaError(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED'))).toBe(false);
    for (const type of [
      'NOT_COORDINATOR',
      'REBALANCE_IN_PROGRESS',
      'UNKNOWN_TOPIC_OR_PARTITION',
      'LEADER_NOT_AVAILABLE',
    ])
      expect(isPermanentKafkaError(protocol(type)), type).toBe(false);
    expect(
      isPermanentKafkaError(
        new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError('down'), {
          retryCount: 5,
          retryTime: 5000,
        } as never),
      ),
    ).toBe(false);
    expect(isPermanentKafkaError(new Error('anything else'))).toBe(false);
  });
});
