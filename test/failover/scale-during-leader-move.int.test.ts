/**
 * Scale events while a leader moves: the node leading the most partitions of the orders topic is SIGKILLed, and
 * at once — before its partitions have new leaders — a third bridge starts to join the group and one of the first two
 * leaves it (SIGTERM, as an orchestrator scales in). Two rebalances run into a leader election: the leaving bridge must still settle what
 * it started, commit what it finished and leave in time (exit 0, within its shutdown deadline), and the group must
 * skip nothing. The records handed over again are counted (handled twice, and the duplicates each layer suppressed).
 */
import { describe, expect, it } from 'vitest';
import { busiestNode } from '../support/cluster.js';
import { oneNodeDown, runFailover } from './failover.js';

describe('scale events while a leader moves', () => {
  it('a bridge joins and another leaves: no record skipped, redeliveries absorbed', async () => {
    let joined = '';
    let left = '';
    await runFailover({
      name: 'scale-during-leader-move',
      shape: 'split',
      fault: oneNodeDown({
        how: 'kill',
        heldMs: 10_000,
        victim: ({ topics }) => busiestNode([topics.orders]),
        async whileDown(ctx) {
          // Both at once, the moment the node died: the election is still to come (about 9 s away).
          const leaving = ctx.instances.find((i) => i.roles === 'bridge')!;
          const joining = ctx.start('bridge');
          await ctx.retire(leaving);
          left = leaving.name;
          joined = (await joining).name;
        },
      }),
    });
    expect([joined, left]).toEqual(['bridge 4', 'bridge 2']);
  });
});
