/**
 * The worker's way onto the DLQ topic: a sender connected on first use, so a worker starts and runs while Kafka
 * is down and only an event that must be dead-lettered waits for it (its activity retries).
 */
import type { PayloadKeys } from '../../base/config/payload-keys.js';
import type { ConnectedSender } from '../kafka/sender.js';
import { publishDeadLetter, type DeadLetter, type DeadLetterForm } from './dead-letter.js';

/** Where events refused after the edge are dead-lettered (the same DLQ topic the bridge writes). */
export interface DeadLetterSink {
  /** Consumer group named in the dead letters' headers, so every dead letter says whose it was. */
  group: string;
  publish(d: DeadLetter): Promise<DeadLetterForm>;
}

/** With `encryption`, dead-letter values are encrypted with its current key (dead-letter.ts). */
export function createDeadLetterSink(
  sender: ConnectedSender,
  dlqTopic: string,
  group: string,
  encryption?: PayloadKeys,
): DeadLetterSink & { close(): Promise<void> } {
  return {
    group,
    publish: (d) => publishDeadLetter(sender, dlqTopic, d, encryption),
    close: () => sender.disconnect(),
  };
}
