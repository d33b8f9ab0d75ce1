/**
 * A bridge whose consumer crashed while Kafka was down rejoins its group as the member it was (patches/kafkajs+2.2.4.patch: kafkajs's
 * consumer keeps the member id of a consumer that could not leave). Joining as a new member instead leaves the old
 * one in the group until its session times out (BRIDGE_SESSION_TIMEOUT_MS, 30 s), and the coordinator completes no
 * rebalance before then: every partition of the group waits that long after a failover of the group's coordinator.
 *
 * The effect checked: the group's member after the outage is the member from before it, and the order produced
 * after the outage ships. Only the outage project runs this (one file at a time): it stops the stack's Kafka.
 */
import { describe, expect, it } from 'vitest';
import { stackDown, stackUp } from '../../tools/stack/index.js';
import { counter, events, scenario, waitFor } from '../support/harness.js';
import { RETRY } from './outage.js';

describe("a bridge's consumer that crashed while Kafka was down", () => {
  it('rejoins its group as the same member once Kafka is back', async () => {
    const s = await scenario('rejoin-member');
    const tenant = s.tenant();
    let kafkaDown = false;
    const members = async (): Promise<string[]> => {
      const admin = s.kafka.admin();
      await admin.connect();
      try {
        const { groups } = await admin.describeGroups([s.config.CONSUMER_GROUP]);
        return (groups[0]?.members ?? []).map((m) => m.memberId).sort();
      } finally {
        await admin.disconnect();
      }
    };
    const shipped = async (order: string) => (await s.row(tenant, order))?.status === 'shipped';
    try {
      const app = await s.startInstance({ bridgeRetry: RETRY });
      await s.produce([{ key: 'o-before', value: events.placed(tenant, 'o-before') }]);
      await waitFor('the order produced before the outage to ship', () => shipped('o-before'), 120_000, 250);
      const before = await members();
      expect(before).toHaveLength(1);

      kafkaDown = true;
      await stackDown({ services: ['kafka'], quiet: true });
      await waitFor(
        "the bridge's consumer to crash while Kafka is down",
        async () => (await counter(app, 'fulfilment_failures_total', { operation: 'consume' })) > 0,
        180_000,
        250,
      );
      await stackUp({ services: ['kafka'], quiet: true });
      kafkaDown = false;
      const back = Date.now();

      await s.produce([{ key: 'o-after', value: events.placed(tenant, 'o-after') }]);
      await waitFor('the order produced after the outage to ship', () => shipped('o-after'), 180_000, 250);
      process.stdout.write(`[rejoin-member] Kafka back → the next order shipped: ${Date.now() - back} ms\n`);
      expect(await members(), 'the member after the outage').toEqual(before);
    } finally {
      if (kafkaDown) await stackUp({ services: ['kafka'], quiet: true });
      await s.close();
    }
  });
});
