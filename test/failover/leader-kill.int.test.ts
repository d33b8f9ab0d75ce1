/**
 * (a) The node leading the most partitions of the orders topic is SIGKILLed mid-stream: its partitions get new
 * leaders only once its session with the controller times out (about 9 s); it is started again 10 s after they did.
 */
import { describe, it } from 'vitest';
import { busiestNode } from '../support/cluster.js';
import { oneNodeDown, runFailover, type Shape } from './failover.js';

describe('(a) the leader of the busiest partitions SIGKILLed', () => {
  for (const shape of ['combined', 'split'] satisfies Shape[])
    it(`${shape}: nothing lost, nothing shipped twice, nothing cancelled shipped`, async () => {
      await runFailover({
        name: `leader-kill-${shape}`,
        shape,
        fault: oneNodeDown({ how: 'kill', heldMs: 10_000, victim: ({ topics }) => busiestNode([topics.orders]) }),
      });
    });
});
