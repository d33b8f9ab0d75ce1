/**
 * Scale events while a leader moves: the node leading the most partitions of the orders topic is SIGKILLed, and
 * at once — before its partitions have new leaders — a third bridge starts to join the group and one of the first two
 * leaves it (SIGTERM, as an orchestrator scales in). Two rebalances run into a leader election: the leaving bridge must still settle what
 * it started, commit what it finished and leave in time (exit 0, within its shutdown deadline), and the group must
 * skip nothing. The case shows the premise held (the dead node still led partitions when both began) and that both
 * bridges were members that did work: the one that left had partitions before it left, the one that joined was given
 * some. The records handed over again are counted (handled twice, and the duplicates each layer suppressed).
 */
import { describe, expect, it } from 'vitest';
import { busiestNode, placement } from '../support/cluster.js';
import { oneNodeDown, runFailover, type Instance } from './failover.js';

/** The partitions each 'joined group' line of the bridge's log gave it, in order. */
const assignments = (i: Instance): number[][] =>
  i.proc.lines.filter((l) => l.msg === 'joined group').map((l) => (l.partitions as number[] | undefined) ?? []);

describe('scale events while a leader moves', () => {
  it('a bridge joins and another leaves: no record skipped, redeliveries absorbed', async () => {
    let victim = -1;
    let stillLedByVictim: number[] = [];
    let joiner: Instance | undefined;
    let leaver: Instance | undefined;
    await runFailover({
      name: 'scale-during-leader-move',
      shape: 'split',
      fault: oneNodeDown({
        how: 'kill',
        heldMs: 10_000,
        victim: async ({ topics }) => (victim = await busiestNode([topics.orders])),
        async whileDown(ctx) {
          // The partitions the dead node still leads as both begin: the election is still to come (about 9 s away).
          stillLedByVictim = (await placement([ctx.topics.orders]))
            .filter((p) => p.leader === victim || p.leader < 0)
            .map((p) => p.partition);
          const leaving = ctx.instances.find((i) => i.roles === 'bridge')!;
          const joining = ctx.start('bridge');
          await ctx.retire(leaving);
          leaver = leaving;
          joiner = await joining;
        },
      }),
    });
    expect(
      stillLedByVictim.length,
      'partitions of the orders topic without their new leader as both began',
    ).toBeGreaterThan(0);
    /** The partitions of each time the bridge joined the group; some must be its. */
    const given = (i: Instance | undefined) => (i ? assignments(i).flat().length : 0);
    expect(given(leaver), 'partitions the leaving bridge had before it left').toBeGreaterThan(0);
    expect(given(joiner), 'partitions the joining bridge was given').toBeGreaterThan(0);
  });
});
