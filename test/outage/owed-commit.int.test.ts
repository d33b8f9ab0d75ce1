/**
 * A commit the bridge owes after Kafka came back, on partitions where nothing new arrives. Each partition's one
 * record is held in the bridge's hand-over; Kafka stops; the held hand-overs are let go and succeed (Temporal is up),
 * so each record is finished while its partition's offset commit fails — the partition is reported parked. Kafka
 * comes back and nothing more is produced on that partition: every partition must still commit its record and stop
 * being reported parked — by itself, not when a later record happens to arrive (src/roles/bridge/partition-run.ts, "a
 * commit that failed is owed").
 *
 * Partition 0's record is produced alone and the others only once it is held. A fetched batch is only read into its
 * partition's window (partition-run.ts), so the others are fetched while partition 0's hand-over is held: usually all
 * three are held by the first Kafka stop; Kafka is stopped once more for any partition a round missed, until every
 * partition has owed a commit.
 *
 * Only the outage project runs this (one file at a time): it stops the stack's Kafka.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { OrderStarter } from '../../src/roles/bridge/order-starter.js';
import { stackDown, stackUp } from '../../tools/stack/index.js';
import { caughtUp, events, scenario, waitFor } from '../support/harness.js';
import { RETRY } from './outage.js';

const PARTITIONS = 3;

/** One Kafka stop: the hand-overs it holds until Kafka is down, and the partitions whose records they are. */
interface Round {
  held: Set<number>;
  release: PromiseWithResolvers<void>;
}

const newRound = (): Round => ({ held: new Set(), release: Promise.withResolvers() });

/** Seconds each partition is reported parked, by partition. */
async function parkedSeconds(app: App): Promise<Map<number, number>> {
  const metric = app.metrics.registry.getSingleMetric('fulfilment_bridge_partition_parked_seconds');
  const values = (await metric?.get())?.values ?? [];
  return new Map(values.map((v) => [Number(v.labels.partition), v.value]));
}

describe('a commit that failed while Kafka was down', () => {
  it('is made once Kafka is back, on partitions where nothing new arrives; none is left reported parked', async () => {
    const s = await scenario('owed-commit');
    const tenant = s.tenant();
    const orders = Array.from({ length: PARTITIONS }, (_, p) => `o-${p}`);
    let round = newRound();
    const rounds: number[][] = [];
    let kafkaDown = false;
    try {
      const app = await s.startInstance({
        bridgeRetry: RETRY,
        wrapStarter: (starter: OrderStarter): OrderStarter => ({
          async deliver(evts) {
            const mine = round;
            mine.held.add(evts[0]!.origin!.partition);
            await mine.release.promise;
            return starter.deliver(evts);
          },
        }),
      });
      const placed = (partition: number) => ({
        partition,
        key: orders[partition]!,
        value: events.placed(tenant, orders[partition]!),
      });
      await s.produce([placed(0)]);
      await waitFor("partition 0's record held in the hand-over", () => round.held.has(0), 120_000);
      await s.produce(orders.slice(1).map((_, i) => placed(i + 1)));

      const owing = new Set<number>();
      while (owing.size < PARTITIONS) {
        await waitFor(`round ${rounds.length + 1}: a record held in the hand-over`, () => round.held.size > 0, 120_000);
        kafkaDown = true;
        await stackDown({ services: ['kafka'], quiet: true });
        const current = round;
        current.release.resolve();
        // Every record this round held is handed over and its partition parked on the failing commit; read held
        // again after the reads, so that one that joined meanwhile is waited for too.
        await waitFor(
          `round ${rounds.length + 1}: the held records handed over while Kafka is down, their commits failing`,
          async () => {
            const partitions = [...current.held];
            const rows = await Promise.all(partitions.map((p) => s.row(tenant, orders[p]!)));
            const parked = await parkedSeconds(app);
            return (
              rows.every((r) => r !== undefined) &&
              partitions.every((p) => (parked.get(p) ?? 0) > 0) &&
              current.held.size === partitions.length
            );
          },
          120_000,
          250,
        );
        // A record fetched from now on waits for the next round.
        round = newRound();
        for (const p of current.held) owing.add(p);
        rounds.push([...current.held].sort((a, b) => a - b));
        await stackUp({ services: ['kafka'], quiet: true });
        kafkaDown = false;
      }
      process.stdout.write(`[owed-commit] partitions owing a commit, by round: ${JSON.stringify(rounds)}\n`);

      await waitFor(
        'the group to commit every partition',
        () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
        120_000,
        250,
      );
      await waitFor(
        'no partition reported parked',
        async () => {
          const parked = await parkedSeconds(app);
          return parked.size === PARTITIONS && [...parked.values()].every((v) => v === 0);
        },
        60_000,
        250,
      );
      // Every partition owed a commit, each in one round (the loop ends once all three owed).
      expect(rounds.flat().sort((a, b) => a - b)).toEqual([0, 1, 2]);
      expect(rounds[0]).toContain(0);
    } finally {
      round.release.resolve();
      if (kafkaDown) await stackUp({ services: ['kafka'], quiet: true });
      await s.close();
    }
  });
});
