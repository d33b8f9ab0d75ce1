/**
 * What patches/kafkajs+2.2.4.patch changes in the producer, shown on a scripted two-node cluster
 * (test/support/scripted-kafka.ts) rather than by killing leaders and hoping a send is in flight
 * (test/failover/producer.int.test.ts). One send writes partition 0 (led by node 1) and partition 1 (led by node 2).
 * Node 1 answers; then partition 1 moves to node 1 and node 2 refuses it (NOT_LEADER_FOR_PARTITION). kafkajs 2.2.4
 * kept its answers per broker: the retry skipped node 1, which had answered, and the send resolved with partition 1
 * never written. Patched, the retry sends partition 1, and only it, to node 1.
 */
import { Kafka, logLevel } from 'kafkajs';
import '../../../../src/adapters/kafka/request-queue-timer.js';
import { afterEach, describe, expect, it } from 'vitest';
import { NONE, NOT_LEADER_FOR_PARTITION, scriptedKafka, type ScriptedKafka } from '../../../support/scripted-kafka.js';

const TOPIC = 'orders';

describe("kafkajs's producer, when a partition's leader moves to a broker that already answered the same send", () => {
  let cluster: ScriptedKafka | undefined;
  afterEach(async () => {
    await cluster?.close();
  });

  it('writes the moved partition to its new leader before the send resolves, and nothing twice', async () => {
    const c = (cluster = await scriptedKafka([1, 2], { [TOPIC]: [1, 2] }));
    c.beforeProduceAnswer = async (node) => {
      if (node !== 2) return;
      // Node 2's answer comes after node 1's, and by then partition 1 is led by node 1 (an election moved it).
      await c.answered(1, TOPIC, 0);
      c.moveLeader(TOPIC, 1, 1);
    };
    const producer = new Kafka({
      clientId: 'scripted',
      brokers: [c.address(1)],
      logLevel: logLevel.NOTHING,
      retry: { initialRetryTime: 10, retries: 3 },
    }).producer();
    await producer.connect();
    try {
      const answers = await producer.send({
        topic: TOPIC,
        messages: [
          { partition: 0, value: 'first' },
          { partition: 1, value: 'second' },
          { partition: 1, value: 'third' },
        ],
      });
      expect(answers.map((a) => a.partition).sort()).toEqual([0, 1]);
      expect(c.written(TOPIC, 0)).toBe(1);
      expect(c.written(TOPIC, 1)).toBe(2);
      expect(c.produced).toEqual([
        { node: 1, topic: TOPIC, partition: 0, records: 1, errorCode: NONE },
        { node: 2, topic: TOPIC, partition: 1, records: 2, errorCode: NOT_LEADER_FOR_PARTITION },
        { node: 1, topic: TOPIC, partition: 1, records: 2, errorCode: NONE },
      ]);
    } finally {
      await producer.disconnect();
    }
  });
});
