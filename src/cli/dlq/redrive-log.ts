/**
 * The redrive log: which dead letters have been redriven, so a repeated `dlq redrive` skips them (unless
 * `--again`). It is a compacted Kafka topic next to the DLQ, `<DLQ_TOPIC>.redrives` (one partition,
 * KAFKA_REPLICATION_FACTOR replicas), created by the first redrive that sends something, written and read through the
 * Kafka port like the DLQ itself.
 *
 * Rules:
 * - a record's key is the dead letter's origin (copies.ts originKey: the same origin for every copy), or its DLQ
 *   position for a dead letter without origin headers; the value is a JSON RedriveLogEntry; the latest value of a key
 *   wins, and a tombstone (null value, written by `dlq purge` for dead letters it deleted) removes the key;
 * - an entry is written after its record was acknowledged by the orders topic: a redrive stopped between the two
 *   leaves a record sent but not recorded, so a later run sends it once more (at-least-once, never lost);
 * - the redrive log is read once at the start of a run; it is not a lock: two redrives running at the same time may
 *   both send a dead letter.
 */
import type { Kafka } from '../../adapters/kafka/client.js';
import type { RecordSender } from '../../adapters/kafka/records.js';
import { withAdmin } from '../../adapters/kafka/admin.js';
import { formatPosition } from '../position.js';
import { originKey } from './copies.js';
import { readDlq } from './reader.js';
import type { DlqRecord } from './record.js';

/** The redrive log topic of a DLQ topic. */
export function redriveLogTopicOf(dlqTopic: string): string {
  return `${dlqTopic}.redrives`;
}

/** One redrive of one dead letter. */
export interface RedriveLogEntry {
  /** DLQ position of the copy that was sent. */
  dlqPosition: string;
  /** `topic partition:offset` the dead letter was consumed from, when its headers say. */
  origin: string | null;
  /** Where the record was written: `topic partition:offset`. */
  to: string;
  /** When it was sent, RFC 3339. */
  at: string;
  operator: string;
  /** What the edge parser made of it when it was sent. */
  verdict: 'order-event' | 'unknown-type' | 'malformed';
  /** Sent with `--force` although malformed. */
  forced: boolean;
  /** Sent with `--again` although the redrive log held an earlier redrive. */
  again: boolean;
  /** `dlq-attempts` of the dead letter at the time. */
  attempts: number | null;
}

/** The redrive log key of a dead letter. */
export function redriveLogKey(record: Pick<DlqRecord, 'headers' | 'partition' | 'offset'>): string {
  return originKey(record) ?? JSON.stringify(['dlq-position', formatPosition(record.partition, record.offset)]);
}

/** The redrive log as it stands: latest entry per key. Empty when the topic does not exist yet. */
export async function readRedriveLog(
  kafka: Kafka,
  topic: string,
  clientId?: string,
): Promise<Map<string, RedriveLogEntry>> {
  if (!(await withAdmin(kafka, (admin) => admin.topicExists(topic)))) return new Map();
  const entries = new Map<string, RedriveLogEntry>();
  for (const r of (await readDlq({ kafka, topic, clientId })).records) {
    const key = r.key?.toString();
    if (key === undefined) continue;
    if (r.value === null || r.value.length === 0) {
      entries.delete(key);
      continue;
    }
    try {
      entries.set(key, JSON.parse(r.value.toString()) as RedriveLogEntry);
    } catch {
      // not written by this tool: ignored
    }
  }
  return entries;
}

/**
 * Creates the redrive log topic unless it exists: compacted, one partition, so entries of one key stay in order, and
 * `replicationFactor` replicas (KAFKA_REPLICATION_FACTOR, as provisioning gives the service's topics; unset: the
 * brokers' default). A factor the brokers refuse fails it, naming what they said.
 */
export async function ensureRedriveLog(kafka: Kafka, topic: string, replicationFactor?: number): Promise<void> {
  await withAdmin(kafka, async (admin) => {
    if (await admin.topicExists(topic)) return;
    try {
      await admin.createTopic(topic, {
        partitions: 1,
        ...(replicationFactor !== undefined ? { replicationFactor } : {}),
        config: { 'cleanup.policy': 'compact' },
      });
    } catch (err) {
      const replicas = replicationFactor ?? "the brokers' default number of";
      throw new Error(`the redrive log ${topic} could not be created with ${replicas} replicas: ${reasons(err)}`, {
        cause: err,
      });
    }
  });
}

/** What the brokers said: each topic's error of a refused creation (kafkajs gathers them), or the error's message. */
function reasons(err: unknown): string {
  const { errors, message } = err as { errors?: { message?: string; type?: string }[]; message?: string };
  return errors?.length ? errors.map((e) => `${e.message} (${e.type})`).join('; ') : String(message ?? err);
}

export async function recordRedrive(
  sender: RecordSender,
  topic: string,
  key: string,
  entry: RedriveLogEntry,
): Promise<void> {
  await sender.send(topic, [{ key, value: JSON.stringify(entry) }]);
}

/** Removes the entries of `keys` (tombstones). */
export async function forgetRedrives(sender: RecordSender, topic: string, keys: string[]): Promise<void> {
  if (keys.length > 0)
    await sender.send(
      topic,
      keys.map((key) => ({ key, value: null })),
    );
}
