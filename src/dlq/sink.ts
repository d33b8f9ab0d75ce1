/**
 * The worker's way onto the DLQ topic: a sender connected on first use, so a worker starts and runs while Kafka
 * is down and only an event that must be dead-lettered waits for it (its activity retries).
 */
import type { DeadLetterSink } from '../../activities/index.js';
import type { PayloadKeys } from '../codec/keys.js';
import type { ConnectedSender } from '../kafka/sender.js';
import { publishDeadLetter } from './dead-letter.js';

/** With `encryption`, dead-letter values are encrypted with its current key (dead-letter.ts). */
export function createDeadLetterSink(sender: ConnectedSender, dlqTopic: string, group: string, encryption?: PayloadKeys): DeadLetterSink & { close(): Promise<void> } {
  return {
    group,
    publish: (d) => publishDeadLetter(sender, dlqTopic, d, encryption),
    close: () => sender.disconnect(),
  };
}
