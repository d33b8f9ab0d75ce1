/**
 * (d) The node leading the most partitions of the status topic is SIGKILLed while the relay publishes: a batch in
 * flight either lands whole or is sent again (its rows stay unsent until the broker acknowledged them).
 */
import { describe, it } from 'vitest';
import { busiestNode } from '../support/cluster.js';
import { waitFor } from '../support/harness.js';
import { scrape } from '../support/processes.js';
import { oneNodeDown, runFailover } from './failover.js';

describe("(d) the status topic's leader SIGKILLed while the relay publishes", () => {
  it('split roles: every status change published, none lost', async () => {
    await runFailover({
      name: 'status-leader-kill',
      shape: 'split',
      fault: oneNodeDown({
        how: 'kill',
        heldMs: 10_000,
        async victim({ topics, instances }) {
          const worker = instances.find((i) => i.roles === 'worker')!;
          const sent = () => scrape(worker.port, 'fulfilment_status_events_published_total');
          // The relay is publishing: its count moves.
          const before = await sent();
          await waitFor('the relay to publish', async () => (await sent()) > before, 120_000, 20);
          return busiestNode([topics.status]);
        },
      }),
    });
  });
});
