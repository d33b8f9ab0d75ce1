/**
 * The sender (src/adapters/kafka/sender.ts) on the real broker, its connections held in hand
 * (test/support/kafka-sockets.ts): a send given up while its answer never comes leaves no connection open once it ends,
 * whatever kafkajs's retries did meanwhile; when it finally fails, the producer that replaced it goes on; and two sends
 * at once on the idempotent sender each write their record once, in call order, even when an answer is lost.
 */
import type { Kafka, ProducerConfig } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopicsWithLeaders } from '../../src/adapters/kafka/admin.js';
import { createSender, type ConnectedSender } from '../../src/adapters/kafka/sender.js';
import { kafkaSockets, type KafkaSockets } from '../support/kafka-sockets.js';
import { scenario, waitFor, type Scenario, type TopicWatch } from '../support/harness.js';
import { track } from '../support/promises.js';

describe('the sender: producers given up, sends at once', () => {
  let s: Scenario;
  const topics: string[] = [];
  const watches: TopicWatch[] = [];
  const senders: ConnectedSender[] = [];

  beforeAll(async () => {
    s = await scenario('sender');
  });

  afterAll(async () => {
    for (const sender of senders) await sender.disconnect();
    for (const w of watches) await w.close();
    if (topics.length) await s?.admin.deleteTopics({ topics }).catch(() => undefined);
    await s?.close();
  });

  /** A topic of one partition of its own, and what has been written to it (values as text). */
  async function ownTopic(name: string) {
    const topic = `sender.it.${name}.${s.suffix}`;
    await createTopicsWithLeaders(s.admin, [{ topic, numPartitions: 1, replicationFactor: -1 }]);
    topics.push(topic);
    const watch = await s.watchTopic(topic);
    watches.push(watch);
    const values = () => watch.records.map((r) => r.value?.toString());
    return {
      topic,
      values,
      has: (value: string) => values().includes(value),
      /** Every record written so far, once the watch has read up to the end of the partition. */
      async all(): Promise<(string | undefined)[]> {
        const [end] = await s.admin.fetchTopicOffsets(topic);
        await waitFor(`every record of ${topic} read`, () => watch.records.length >= Number(end!.high));
        return values();
      },
    };
  }

  const sender = (kafka: Kafka) => {
    const made = createSender(kafka, { idempotent: true });
    senders.push(made);
    return made;
  };
  const record = (value: string) => ({ key: 'k', value });
  /** A topic and an idempotent sender on a client of their own: one record sent, then the broker's answers held. */
  async function answersHeld(name: string) {
    const t = await ownTopic(name);
    const net = kafkaSockets(s.config, `sender-it-${name}-${s.suffix}`);
    const send = sender(net.kafka);
    await send.send(t.topic, [record('before')]);
    net.holdAnswers();
    return { t, net, send };
  }

  it('a send given up while its answer never comes: once it ends, no connection of its producer is left open', async () => {
    const { t, net, send } = await answersHeld('given-up');
    const given = track(send.send(t.topic, [record('given up')]));
    await waitFor('the broker to write the record whose answer is held', () => t.has('given up'));
    // As the status relay does at its deadline.
    send.replace();
    // The silent connection is reset and the network is back: kafkajs's retry of the send goes on by itself.
    const madeBefore = net.made();
    net.cut();
    net.restore();
    await waitFor('the given-up send to end', () => given.state !== 'pending');
    // kafkajs connected the given-up producer again to retry the send: those connections are closed too.
    expect(net.made()).toBeGreaterThan(madeBefore);
    await waitFor('every connection of the given-up producer to be closed', () => net.open() === 0, 30_000);
  });

  it('a send given up that finally fails leaves the producer that replaced it alone', async () => {
    const t = await ownTopic('fails-late');
    // Each producer the sender makes is a client of its own, so each one's connections are told apart.
    const nets = [1, 2, 3].map((n) => kafkaSockets(s.config, `sender-it-fails-late-${n}-${s.suffix}`));
    let made = 0;
    const send = sender({ producer: (c: ProducerConfig) => nets[made++]!.kafka.producer(c) } as unknown as Kafka);
    const [first, second, third] = nets as [KafkaSockets, KafkaSockets, KafkaSockets];
    await send.send(t.topic, [record('first')]);
    first.holdAnswers();
    const given = track(send.send(t.topic, [record('given up')]));
    await waitFor('the broker to write the record whose answer is held', () => t.has('given up'));
    send.replace();
    await send.send(t.topic, [record('second')]);
    const secondOpen = second.open();
    const secondMade = second.made();
    expect(secondOpen).toBeGreaterThan(0);
    // The first producer's network stays cut: its retries are refused until the send fails.
    first.cut();
    await waitFor('the given-up send to fail', () => given.state === 'rejected', 120_000);
    await send.send(t.topic, [record('third')]);
    expect({ open: second.open(), made: second.made(), third: third.made() }).toEqual({
      open: secondOpen,
      made: secondMade,
      third: 0,
    });
    expect(await t.all()).toEqual(['first', 'given up', 'second', 'third']);
  });

  it('two sends at once on the idempotent sender: each record is written once, in order, though an answer was lost', async () => {
    const { t, net, send } = await answersHeld('at-once');
    const one = track(send.send(t.topic, [record('one')]));
    const two = track(send.send(t.topic, [record('two')]));
    await waitFor('the broker to write a record of the two, its answer held', () => t.values().length > 1);
    // The answer is lost with its connection; the network is back for the retries.
    net.cut();
    net.restore();
    await waitFor('both sends to end', () => one.state !== 'pending' && two.state !== 'pending', 120_000);
    expect([one.state, two.state]).toEqual(['fulfilled', 'fulfilled']);
    expect(await t.all()).toEqual(['before', 'one', 'two']);
  });
});
