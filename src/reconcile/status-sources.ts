/**
 * What the status check reads besides the store (store-reader.ts): the event ids on the status topic from a time on,
 * read back by time window (topic-window.ts), each record's value being the event the outbox row holds
 * (src/adapters/status-events/relay.ts outboxRecord).
 */
import type { Kafka } from '../adapters/kafka/client.js';
import { planWindow, readWindow, withAdmin } from './topic-window.js';

/** Event ids on `topic` in records written from `since` on; `gone` when retention took part of that window. */
export async function statusTopicEventIds(
  kafka: Kafka,
  topic: string,
  since: Date,
  opts: { clientId: string; signal?: AbortSignal },
): Promise<{ eventIds: Set<string>; gone: number[] }> {
  const plan = await withAdmin(kafka, (admin) =>
    planWindow(admin, topic, { since, until: new Date() }, (_p, _u, high) => high),
  );
  const eventIds = new Set<string>();
  await readWindow(
    kafka,
    topic,
    plan.ranges,
    ({ record }) => {
      if (record.value === null) return;
      try {
        const id = (JSON.parse(record.value.toString()) as { eventId?: unknown }).eventId;
        if (typeof id === 'string') eventIds.add(id);
      } catch {
        // not an event of this service: nothing to match
      }
    },
    opts,
  );
  return { eventIds, gone: plan.gone };
}
