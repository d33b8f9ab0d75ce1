/**
 * `dlq redrive` creates its redrive log (`<DLQ_TOPIC>.redrives`) with KAFKA_REPLICATION_FACTOR replicas, as
 * provisioning creates the service's topics: a factor the brokers cannot meet is refused by them, and nothing is sent,
 * rather than the log being created with the brokers' default behind the configuration's back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dlqRedrive } from '../../src/cli/dlq/redrive.js';
import { redriveLogTopicOf } from '../../src/cli/dlq/redrive-log.js';
import { memoryOutput } from '../../src/cli/output.js';
import { events, recordsOn, scenario, type Scenario } from '../support/harness.js';

describe('the redrive log is created with the configured replication factor', () => {
  let s: Scenario;
  let brokers: number;
  const redriveLog = () => redriveLogTopicOf(s.config.DLQ_TOPIC);
  /** Replicas of each partition of `topic`; undefined when it does not exist. */
  const replicas = async (topic: string) =>
    (await s.admin.listTopics()).includes(topic)
      ? (await s.admin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions.map((p) => p.replicas.length)
      : undefined;
  const redrive = (replicationFactor: number) =>
    dlqRedrive(
      { config: { ...s.config, KAFKA_REPLICATION_FACTOR: replicationFactor }, out: memoryOutput() },
      { all: true, operator: 'it' },
    );

  beforeAll(async () => {
    s = await scenario('redrive-log');
    brokers = (await s.admin.describeCluster()).brokers.length;
    const tenant = s.tenant();
    await s.produce([{ key: `${tenant}/o-1`, value: events.placed(tenant, 'o-1') }], s.config.DLQ_TOPIC);
  });

  afterAll(async () => {
    await s?.admin.deleteTopics({ topics: [redriveLog()] }).catch(() => undefined);
    await s?.close();
  });

  it('more replicas than there are brokers: the brokers refuse the log, and nothing is sent', async () => {
    await expect(redrive(brokers + 1)).rejects.toThrow(
      `the redrive log ${redriveLog()} could not be created with ${brokers + 1} replicas: Replication-factor is invalid (INVALID_REPLICATION_FACTOR)`,
    );
    expect(await replicas(redriveLog())).toBeUndefined();
    expect(await recordsOn(s.admin, s.config.ORDERS_TOPIC)).toBe(0);
  });

  it('as many as there are brokers: the log has them, and the dead letter is sent', async () => {
    const result = await redrive(brokers);
    expect(result.sent).toHaveLength(1);
    expect(await replicas(redriveLog())).toEqual([brokers]);
    expect(await recordsOn(s.admin, s.config.ORDERS_TOPIC)).toBe(1);
  });
});
