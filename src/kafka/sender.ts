/** A producer behind the RecordSender port: connected on first use, so its owner can start while Kafka is down. */
import { Partitioners, type Kafka, type Producer } from 'kafkajs';
import { KAFKA_RETRY } from '../retry-policies.js';
import type { OutgoingRecord, RecordSender } from './records.js';

export interface ConnectedSender extends RecordSender {
  /** Connects now (start-up); later sends reuse the connection. */
  connect(): Promise<void>;
  disconnect(): Promise<void>;
}

/**
 * One request in flight at a time, so records sent to one partition keep their order; kafkajs's own retries of a
 * request are short (KAFKA_RETRY.requests) so that an outage reaches the caller's backoff.
 */
export function createSender(kafka: Kafka): ConnectedSender {
  let producer: Producer | undefined;
  let connected: Promise<void> | undefined;
  const connect = async (): Promise<Producer> => {
    producer ??= kafka.producer({
      allowAutoTopicCreation: false,
      maxInFlightRequests: 1,
      retry: { retries: KAFKA_RETRY.requests, initialRetryTime: KAFKA_RETRY.initialRetryTime, maxRetryTime: KAFKA_RETRY.maxRetryTime },
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    const p = producer;
    connected ??= p.connect().catch((err: unknown) => {
      connected = undefined;
      throw err;
    });
    await connected;
    return p;
  };
  return {
    connect: async () => void (await connect()),
    async send(topic: string, records: OutgoingRecord[]) {
      await (await connect()).send({ topic, acks: -1, messages: records });
    },
    async disconnect() {
      if (connected) await connected.then(() => producer?.disconnect()).catch(() => undefined);
    },
  };
}
