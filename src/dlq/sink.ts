/**
 * The worker's way onto the DLQ topic: a kafkajs producer connected on first use, so a worker starts and runs
 * while Kafka is down and only an event that must be dead-lettered waits for it (its activity retries).
 */
import { Partitioners, type Kafka, type Producer } from 'kafkajs';
import type { DeadLetterSink } from '../../activities/index.js';
import { publishDeadLetter } from './dead-letter.js';

export function createDeadLetterSink(kafka: Kafka, dlqTopic: string, group: string): DeadLetterSink & { close(): Promise<void> } {
  let producer: Producer | undefined;
  let connected: Promise<void> | undefined;
  const connect = () => {
    producer ??= kafka.producer({ allowAutoTopicCreation: false, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
    const p = producer;
    connected ??= p.connect().catch((err: unknown) => {
      connected = undefined;
      throw err;
    });
    return connected.then(() => p);
  };
  return {
    group,
    async publish(d) {
      return publishDeadLetter(await connect(), dlqTopic, d);
    },
    async close() {
      if (connected) await connected.then(() => producer?.disconnect()).catch(() => undefined);
    },
  };
}
