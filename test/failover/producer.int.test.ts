/**
 * A send in flight while the leader of some of its partitions dies either lands every record or fails: never resolves
 * with records missing. kafkajs 2.2.4 did resolve so (its retry skipped every broker that had answered the first try,
 * though the dead leader's partitions had moved to one of them); patches/kafkajs+2.2.4.patch tracks the answers per
 * partition. This drives the service's own sender (src/adapters/kafka/sender.ts, idempotent as the status relay makes
 * it): batches over six partitions back to back while the leader of partition 0 is SIGKILLed and restarted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTopicsWithLeaders } from '../../src/adapters/kafka/admin.js';
import { createKafka } from '../../src/adapters/kafka/client.js';
import { createSender } from '../../src/adapters/kafka/sender.js';
import { loadConfig } from '../../src/base/config.js';
import { clusterPlan, leaderOf, ledElsewhere, node, readWhole, whole } from '../support/cluster.js';
import { logger, uniqueSuffix, waitFor } from '../support/harness.js';

const PARTITIONS = 6;
const BATCH = 12;
const KILLS = 4;

describe('a producer whose partitions lose their leader mid-send', () => {
  const config = loadConfig(process.env);
  const topic = `failover.send.${uniqueSuffix('p')}`;
  const kafka = createKafka(config, logger, { clientId: uniqueSuffix('send') });

  beforeAll(async () => {
    clusterPlan();
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsWithLeaders(admin, [{ topic, numPartitions: PARTITIONS, replicationFactor: 3 }]);
    await admin.disconnect();
    await whole([topic]);
  });
  afterAll(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });

  it('lands every record whose send resolved, through four leader kills', async () => {
    const sender = createSender(kafka, { idempotent: true });
    const resolved: string[] = [];
    let failedSends = 0;
    let sending = true;
    let n = 0;
    const loop = (async () => {
      while (sending) {
        const batch = Array.from({ length: BATCH }, (_, i) => ({
          partition: i % PARTITIONS,
          key: `k-${n + i}`,
          value: `r-${n + i}`,
        }));
        n += BATCH;
        try {
          await sender.send(topic, batch);
          resolved.push(...batch.map((r) => r.value));
        } catch {
          // A send that fails is the caller's to repeat (the relay's rows wait); it only must not claim success.
          failedSends += 1;
        }
      }
    })();
    try {
      for (let kill = 0; kill < KILLS; kill += 1) {
        const before = resolved.length;
        await waitFor('sends under way', () => resolved.length >= before + 20 * BATCH, 120_000, 20);
        const leader = await leaderOf(topic, 0);
        await node('kill', leader);
        await ledElsewhere([topic], leader);
        const moved = resolved.length;
        await waitFor('sends to resume on the new leaders', () => resolved.length >= moved + 20 * BATCH, 120_000, 20);
        await node('start', leader);
        await whole([topic]);
      }
    } finally {
      sending = false;
      await loop;
      await sender.disconnect();
    }
    const onTopic = await readWhole(kafka, topic);
    const missing = resolved.filter((v) => !onTopic.has(v));
    process.stdout.write(
      `\n[failover:producer] ${JSON.stringify({ sent: n, resolved: resolved.length, failedSends, missing: missing.length, onTopic: onTopic.size })}\n`,
    );
    expect(resolved.length).toBeGreaterThan(KILLS * 40 * BATCH);
    expect(missing.slice(0, 20), `${missing.length} records whose send resolved are not on the topic`).toEqual([]);
  });
});
