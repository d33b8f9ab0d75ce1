/**
 * (c) A rolling restart, as an upgrade or a patch makes one: each node in turn is stopped with SIGTERM (a controlled
 * shutdown, which hands its leaderships over first), started again, and the next waits until every replica has
 * caught up.
 */
import { describe, it } from 'vitest';
import { clusterPlan, node, whole } from '../support/cluster.js';
import { runFailover } from './failover.js';

describe('(c) a rolling restart of all three nodes', () => {
  it('combined processes: nothing lost, nothing shipped twice, nothing cancelled shipped', async () => {
    await runFailover({
      name: 'rolling-restart',
      shape: 'combined',
      async fault({ topics }, started, ended) {
        const all = [topics.orders, topics.dlq, topics.status, '__consumer_offsets'];
        for (const [i, n] of clusterPlan().kafka.nodes.entries()) {
          await node('stop', n.id);
          if (i === 0) started();
          await node('start', n.id);
          await whole(all);
        }
        ended();
      },
    });
  });
});
