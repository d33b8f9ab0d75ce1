/** A producer behind the RecordSender port: connected on first use, so its owner can start while Kafka is down. */
import { Partitioners, type Kafka, type Producer } from 'kafkajs';
import { KAFKA_RETRY } from '../../base/retry-policies.js';
import { producerStateLost } from './failures.js';
import type { OutgoingRecord, RecordPosition, RecordSender } from './records.js';
import { createTurns } from './turns.js';

export interface ConnectedSender extends RecordSender {
  /** Connects now (start-up); later sends reuse the connection. */
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  /**
   * Gives up on the current producer and its connections: the next send makes and connects a new one; the old one is
   * disconnected in the background, now and again once its sends have ended, and nothing waits for that. For a caller
   * whose send never finished (a kafkajs request neither answered nor failed); the sender does it itself after a
   * failed send (see createSender).
   */
  replace(): void;
  /** Sends one record like `send`; resolves with where it was written, undefined when the broker's answer names no offset. */
  sendOne(topic: string, record: OutgoingRecord): Promise<RecordPosition | undefined>;
}

export interface SenderOptions {
  /** The broker drops duplicates a retried request would write (an idempotent producer). Default false. */
  idempotent?: boolean;
}

/** One producer of a sender, from its making until it is given up. */
interface Generation {
  producer: Producer;
  connected: Promise<void> | undefined;
  /** Sends on it that have not ended. */
  sending: number;
  givenUp: boolean;
  /** Ends the turns of the sends on it (an idempotent sender's), called when it is given up. */
  endTurns: Set<() => void>;
}

function newGeneration(kafka: Kafka, idempotent: boolean): Generation {
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    maxInFlightRequests: 1,
    idempotent,
    retry: {
      retries: KAFKA_RETRY.requests,
      initialRetryTime: KAFKA_RETRY.initialRetryTime,
      maxRetryTime: KAFKA_RETRY.maxRetryTime,
    },
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  return { producer, connected: undefined, sending: 0, givenUp: false, endTurns: new Set() };
}

async function connectGeneration(g: Generation): Promise<void> {
  g.connected ??= g.producer.connect().catch((err: unknown) => {
    g.connected = undefined;
    throw err;
  });
  await g.connected;
}

/** Disconnects the producer once it has connected, in the background; a failure to is of no interest. */
function disconnectGeneration(g: Generation): void {
  if (g.connected) void g.connected.then(() => g.producer.disconnect()).catch(() => undefined);
}

/**
 * Gives `g` up: disconnected now, and again once its last send has ended. A kafkajs send whose producer is
 * disconnected under it reconnects the producer to retry (its retrier connects a cluster it finds disconnected), and
 * those connections would stay open for good. The turns of its sends end: the sends waiting go to the next producer.
 */
function giveUp(g: Generation): void {
  if (g.givenUp) return;
  g.givenUp = true;
  for (const end of g.endTurns) end();
  g.endTurns.clear();
  disconnectGeneration(g);
}

/** Sends through `g`, counted among its sends until it ends. */
async function sendThrough(g: Generation, topic: string, messages: OutgoingRecord[]) {
  g.sending += 1;
  try {
    await connectGeneration(g);
    return await g.producer.send({ topic, acks: -1, messages });
  } finally {
    g.sending -= 1;
    if (g.givenUp && g.sending === 0) disconnectGeneration(g);
  }
}

/**
 * One request in flight at a time per connection; kafkajs's own retries of a request are short (KAFKA_RETRY.requests)
 * so that an outage reaches the caller's backoff. After a failed send the next goes through a new producer when this
 * one is idempotent (see `produce`), or when the broker refused the producer's idempotent state (producerStateLost):
 * kafkajs would refuse every later send of the old one the same way.
 *
 * The sends of an idempotent sender take turns, in the order they were called: each starts when the one before it has
 * ended or its producer was given up. kafkajs numbers a send's records when its request goes out and takes the numbers
 * back when the request fails, to reuse them on its retry; a send started meanwhile would get them instead, and the
 * broker, which may have written the failed request after all, would take that send for its duplicate and acknowledge
 * it unwritten. Sends at once also went out in no particular order. A sender that is not idempotent sends at once.
 */
export function createSender(kafka: Kafka, opts: SenderOptions = {}): ConnectedSender {
  let current: Generation | undefined;
  const turns = opts.idempotent ? createTurns() : undefined;
  const generation = () => (current ??= newGeneration(kafka, opts.idempotent ?? false));
  const replace = () => {
    if (current) giveUp(current);
    current = undefined;
  };
  /**
   * Sends; after a failed send an idempotent producer is replaced before the error goes on. A failed send may still
   * have been written (its leader died after taking it), yet kafkajs hands its sequence numbers to the next send: the
   * broker would then take that send for a duplicate of the failed one and acknowledge it without writing it. A new
   * producer starts new sequences. Any producer whose idempotent state the broker no longer accepts is replaced too.
   * Only the producer the send went through is replaced: one that is not current any more was given up already, and
   * its successor is none of this send's business.
   */
  const produce = async (topic: string, messages: OutgoingRecord[]) => {
    const endTurn = await turns?.take();
    const g = generation();
    if (endTurn) g.endTurns.add(endTurn);
    try {
      return await sendThrough(g, topic, messages);
    } catch (err) {
      if ((opts.idempotent || producerStateLost(err)) && current === g) replace();
      throw err;
    } finally {
      if (endTurn) {
        g.endTurns.delete(endTurn);
        endTurn();
      }
    }
  };
  return {
    connect: () => connectGeneration(generation()),
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
      const g = current;
      if (g?.connected) await g.connected.then(() => g.producer.disconnect()).catch(() => undefined);
    },
  };
}
