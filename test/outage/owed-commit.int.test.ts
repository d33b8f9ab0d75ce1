/**
 * A commit the bridge owes after Kafka came back, on partitions where nothing new arrives. One record per partition
 * is fetched and held in the bridge's hand-over; Kafka stops; the hand-overs are let go and succeed (Temporal is up),
 * so every record is finished while its offset commit fails. Kafka comes back and nothing more is produced: every
 * partition must still commit its record and stop being reported parked — by itself, not when a later record
 * happens to arrive (src/bridge/partition-run.ts, "a commit that failed is owed").
 *
 * Only the outage project runs this (one file at a time): it stops the stack's Kafka.
 */
import { describe, expect, it } from 'vitest';
import type { OrderStarter } from '../../src/bridge/order-starter.js';
import { stackDown, stackUp } from '../../tools/stack/index.js';
import { caughtUp, counter, events, scenario, waitFor } from '../support/harness.js';
import { RETRY } from './outage.js';

const PARTITIONS = 3;

describe('a commit that failed while Kafka was down', () => {
  it('is made once Kafka is back, on partitions where nothing new arrives; none is left reported parked', async () => {
    const s = await scenario('owed-commit');
    const release = Promise.withResolvers<void>();
    const held = new Set<number>();
    let restarted = false;
    try {
      const app = await s.startInstance({
        bridgeRetry: RETRY,
        wrapStarter: (starter: OrderStarter): OrderStarter => ({
          async deliver(evts) {
            held.add(evts[0]!.origin!.partition);
            await release.promise;
            return starter.deliver(evts);
          },
        }),
      });
      const tenant = s.tenant();
      const orders = Array.from({ length: PARTITIONS }, (_, p) => `o-${p}`);
      await s.produce(
        orders.map((orderId, partition) => ({ partition, key: orderId, value: events.placed(tenant, orderId) })),
      );
      await waitFor('a record of every partition held in the hand-over', () => held.size === PARTITIONS, 120_000);

      await stackDown({ services: ['kafka'], quiet: true });
      try {
        release.resolve();
        await waitFor(
          'the orders handed over while Kafka is down',
          async () => (await Promise.all(orders.map((o) => s.row(tenant, o)))).every((r) => r !== undefined),
          120_000,
          250,
        );
        await waitFor(
          'an offset commit to fail',
          async () => (await counter(app, 'fulfilment_retries_total', { operation: 'commit' })) > 0,
          120_000,
          250,
        );
      } finally {
        await stackUp({ services: ['kafka'], quiet: true });
        restarted = true;
      }

      await waitFor(
        'the group to commit every partition',
        () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
        120_000,
        250,
      );
      const parked = async () =>
        (await app.metrics.registry.getSingleMetric('fulfilment_bridge_partition_parked_seconds')?.get())?.values ?? [];
      await waitFor(
        'no partition reported parked',
        async () => {
          const values = await parked();
          return values.length > 0 && values.every((v) => v.value === 0);
        },
        60_000,
        250,
      );
      expect(held.size).toBe(PARTITIONS);
    } finally {
      release.resolve();
      if (!restarted) await stackUp({ services: ['kafka'], quiet: true });
      await s.close();
    }
  });
});
