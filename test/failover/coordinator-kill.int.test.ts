/**
 * (b) The node coordinating the bridges' consumer group is SIGKILLed mid-stream: heartbeats, joins and commits have
 * nowhere to go until its partition of `__consumer_offsets` has a new leader, which becomes the coordinator.
 */
import { describe, expect, it } from 'vitest';
import { coordinatorOf, ledElsewhere } from '../support/cluster.js';
import { oneNodeDown, runFailover } from './failover.js';

describe('(b) the group coordinator SIGKILLed', () => {
  it('split roles: the bridges find the new coordinator by themselves; nothing lost or repeated in effect', async () => {
    const coordinators: number[] = [];
    await runFailover({
      name: 'coordinator-kill',
      shape: 'split',
      fault: oneNodeDown({
        how: 'kill',
        heldMs: 10_000,
        alsoWatch: ['__consumer_offsets'],
        victim: async ({ s }) => {
          coordinators.push(await coordinatorOf(s.config.CONSUMER_GROUP));
          return coordinators[0]!;
        },
        // Where the coordinator went, read while the node is still down.
        async whileDown({ s }) {
          await ledElsewhere(['__consumer_offsets'], coordinators[0]!);
          coordinators.push(await coordinatorOf(s.config.CONSUMER_GROUP));
        },
      }),
    });
    expect(coordinators[1], `the coordinator moved off node ${coordinators[0]}`).not.toBe(coordinators[0]);
  });
});
