/**
 * (f) The node leading the most partitions of the orders topic cut off by the network rather than killed: the link of
 * its network namespace goes down (STACK_KAFKA_NETNS=1, as the suite's failover lane runs the cluster). It runs on,
 * unreachable: requests to it hang instead of being refused, until its session with the controller times out (9 s)
 * and its partitions get new leaders. It stays cut off 15 s past that, then its link comes back and it rejoins.
 */
import { describe, it } from 'vitest';
import { busiestNode } from '../support/cluster.js';
import { oneNodeDown, runFailover } from './failover.js';

describe('(f) one node cut off by the network', () => {
  it('split roles: nothing lost, nothing shipped twice, nothing cancelled shipped', async () => {
    await runFailover({
      name: 'network-cut',
      shape: 'split',
      fault: oneNodeDown({ how: 'cut', heldMs: 15_000, victim: ({ topics }) => busiestNode([topics.orders]) }),
    });
  });
});
