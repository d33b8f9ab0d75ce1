/**
 * An idempotent producer is replaced after a failed send, whatever failed: the next send goes through a new producer
 * (a producer whose idempotent state the broker no longer accepts would be refused every later send the same way;
 * after any other failure, its sequence numbers could be taken for a duplicate's). The errors are the
 * ones kafkajs itself builds from the broker's error codes and throws out of a send (a non-retriable error caused by
 * a protocol error); the producer behind the sender's port is a stand-in that answers with them.
 */
import { createRequire } from 'node:module';
import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded, type Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { producerStateLost } from '../../../../src/adapters/kafka/failures.js';
import { createSender } from '../../../../src/adapters/kafka/sender.js';

const { createErrorFromCode } = createRequire(import.meta.url)('kafkajs/src/protocol/error.js') as {
  createErrorFromCode: (code: number) => Error;
};

/** As kafkajs's producer throws a broker's non-retriable answer: its retrier bails with the protocol error as cause. */
const brokerRefused = (code: number) => {
  const protocol = createErrorFromCode(code);
  // As kafkajs's retrier builds it; its typings leave out the second argument.
  const NonRetriable = KafkaJSNonRetriableError as unknown as new (e: Error, meta: { cause: Error }) => Error;
  return new NonRetriable(protocol, { cause: protocol });
};

/** A Kafka client whose producers answer each send from `answers` in turn (an error is thrown, anything else sent). */
function kafkaAnswering(answers: (Error | undefined)[]) {
  const made: { disconnected: boolean }[] = [];
  const kafka = {
    producer: () => {
      const producer = { disconnected: false };
      made.push(producer);
      return {
        connect: async () => undefined,
        disconnect: async () => void (producer.disconnected = true),
        send: async () => {
          const answer = answers.shift();
          if (answer) throw answer;
          return [{ topicName: 't', partition: 0, errorCode: 0, baseOffset: '7' }];
        },
      };
    },
  } as unknown as Kafka;
  return { kafka, made };
}

describe('an idempotent producer whose state the broker no longer accepts', () => {
  it.each([
    [45, 'OUT_OF_ORDER_SEQUENCE_NUMBER'],
    [59, 'UNKNOWN_PRODUCER_ID'],
    [47, 'INVALID_PRODUCER_EPOCH'],
    [49, 'INVALID_PRODUCER_ID_MAPPING'],
  ])('broker error %i (%s) is told as a lost producer state', (code, type) => {
    expect(producerStateLost(brokerRefused(code))).toBe(type);
  });

  it('a broker that is down, a leader moving or a retriable answer is not', () => {
    const down = new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:19092');
    expect(producerStateLost(down)).toBeUndefined();
    expect(
      producerStateLost(
        new KafkaJSNumberOfRetriesExceeded(createErrorFromCode(6), { retryCount: 5, retryTime: 5000 } as never),
      ),
    ).toBeUndefined();
    expect(producerStateLost(brokerRefused(10))).toBeUndefined(); // MESSAGE_TOO_LARGE
  });

  it('the send fails, the producer is disconnected, and the next send goes through a new producer', async () => {
    const { kafka, made } = kafkaAnswering([brokerRefused(45), undefined]);
    const sender = createSender(kafka, { idempotent: true });
    await expect(sender.send('t', [{ key: 'k', value: 'v' }])).rejects.toThrow(/out of order sequence number/);
    await sender.send('t', [{ key: 'k', value: 'v' }]);
    expect(made).toHaveLength(2);
    await expect.poll(() => made[0]!.disconnected).toBe(true);
    expect(made[1]!.disconnected).toBe(false);
  });

  it('after any other failure too: a failed send may have been written, and its sequence numbers must not be reused', async () => {
    // kafkajs hands a failed send's sequence numbers to the next send; had the failed one been written, the broker
    // would take the next for its duplicate and acknowledge it unwritten (test/failover/producer.int.test.ts).
    const down = new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:19092');
    const { kafka, made } = kafkaAnswering([down, undefined]);
    const sender = createSender(kafka, { idempotent: true });
    await expect(sender.send('t', [{ key: 'k', value: 'v' }])).rejects.toThrow(/ECONNREFUSED/);
    await sender.send('t', [{ key: 'k', value: 'v' }]);
    expect(made).toHaveLength(2);
    await expect.poll(() => made[0]!.disconnected).toBe(true);
  });

  it('a producer that is not idempotent sends again after a failure that is not about its state', async () => {
    const down = new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:19092');
    const { kafka, made } = kafkaAnswering([down, undefined]);
    const sender = createSender(kafka);
    await expect(sender.send('t', [{ key: 'k', value: 'v' }])).rejects.toThrow(/ECONNREFUSED/);
    await sender.send('t', [{ key: 'k', value: 'v' }]);
    expect(made).toHaveLength(1);
  });
});
