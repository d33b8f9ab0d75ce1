/** A producer behind the RecordSender port: connected on first use, so its owner can start while Kafka is down. */
import { Partitioners, type Kafka, type Producer } from 'kafkajs';
import { KAFKA_RETRY } from '../retry-policies.js';
import { producerStateLost } from './failures.js';
import type { OutgoingRecord, RecordPosition, RecordSender } from './records.js';

export interface ConnectedSender extends RecordSender {
  /** Connects now (start-up); later sends reuse the connection. */
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  /**
   * Gives up on the current producer and its connections: the next send makes and connects a new one; the old one is
   * disconnected in the background, and nothing waits for that. For a caller whose send never finished (a kafkajs
   * request neither answered nor failed); the sender does it itself when the broker refuses the producer's state.
   */
  replace(): void;
  /** Sends one record like `send`; resolves with where it was written, undefined when the broker's answer names no offset. */
  sendOne(topic: string, record: OutgoingRecord): Promise<RecordPosition | undefined>;
}

export interface SenderOptions {
  /** The broker drops duplicates a retried request would write (an idempotent producer). Default false. */
  idempotent?: boolean;
}

/**
 * One request in flight at a time, so records sent to one partition keep their order; kafkajs's own retries of a
 * request are short (KAFKA_RETRY.requests) so that an outage reaches the caller's backoff. After a failed send the next
 * goes through a new producer when this one is idempotent (see `produce`), or when the broker refused the producer's
 * idempotent state (producerStateLost): kafkajs would refuse every later send of the old one the same way.
 */
export function createSender(kafka: Kafka, opts: SenderOptions = {}): ConnectedSender {
  let producer: Producer | undefined;
  let connected: Promise<void> | undefined;
  const connect = async (): Promise<Producer> => {
    producer ??= kafka.producer({
      allowAutoTopicCreation: false,
      maxInFlightRequests: 1,
      idempotent: opts.idempotent ?? false,
      retry: {
        retries: KAFKA_RETRY.requests,
        initialRetryTime: KAFKA_RETRY.initialRetryTime,
        maxRetryTime: KAFKA_RETRY.maxRetryTime,
      },
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
  const replace = () => {
    const [old, oldConnected] = [producer, connected];
    producer = undefined;
    connected = undefined;
    if (old && oldConnected) void oldConnected.then(() => old.disconnect()).catch(() => undefined);
  };
  /**
   * Sends; after a failed send an idempotent producer is replaced before the error goes on. A failed send may still
   * have been written (its leader died after taking it), yet kafkajs hands its sequence numbers to the next send: the
   * broker would then take that send for a duplicate of the failed one and acknowledge it without writing it. A new
   * producer starts new sequences. Any producer whose idempotent state the broker no longer accepts is replaced too.
   */
  const produce = async (topic: string, messages: OutgoingRecord[]) => {
    try {
      return await (await connect()).send({ topic, acks: -1, messages });
    } catch (err) {
      if (opts.idempotent || producerStateLost(err)) replace();
      throw err;
    }
  };
  return {
    connect: async () => void (await connect()),
    async send(topic: string, records: OutgoingRecord[]) {
      await produce(topic, records);
    },
    async sendOne(topic: string, record: OutgoingRecord) {
      const [meta] = await produce(topic, [record]);
      const offset = meta?.baseOffset ?? meta?.offset;
      return meta && offset !== undefined ? { topic, partition: meta.partition, offset } : undefined;
    },
    replace,
    async disconnect() {
      if (connected) await connected.then(() => producer?.disconnect()).catch(() => undefined);
    },
  };
}
