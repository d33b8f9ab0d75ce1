/**
 * (e) Two of the three nodes down: fewer replicas in sync than min.insync.replicas (2), so every write with acks=all
 * is refused (NOT_ENOUGH_REPLICAS) — dead letters, status events, the bridges' commits, the test's own producer —
 * while the one node left still serves reads. One node is killed first and its partitions move; the second is killed
 * while the stream flows, so the bridges hold records they cannot commit and poison they cannot dead-letter. The
 * bridges keep their place and go unready, saying why (refused commits or dead letters, or — a consumer that gave up
 * and cannot rejoin while no group can be written — out of the group); what waits to be written waits; all of it goes
 * out once the nodes are back.
 */
import { describe, expect, it } from 'vitest';
import { clusterPlan, coordinatorOf, ledElsewhere, node, whole } from '../support/cluster.js';
import { waitFor } from '../support/harness.js';
import { probe } from '../support/processes.js';
import { runFailover } from './failover.js';

describe('(e) two nodes down at once', () => {
  it('combined processes: everything waits, nothing is dropped or written around, then everything resumes', async () => {
    const reasons: string[] = [];
    await runFailover({
      name: 'two-nodes-down',
      shape: 'combined',
      async fault({ s, topics, instances, produced, records }, started, ended) {
        const all = [topics.orders, topics.dlq, topics.status, '__consumer_offsets'];
        // The coordinator survives: the group stays whole, reads go on, and only writes are refused.
        const keep = await coordinatorOf(s.config.CONSUMER_GROUP);
        const [first, second] = clusterPlan()
          .kafka.nodes.map((n) => n.id)
          .filter((id) => id !== keep);
        await node('kill', first!);
        started();
        await ledElsewhere(all, first!);
        const at = produced();
        await waitFor('more of the stream produced', () => produced() >= at + records / 8, 120_000, 20);
        await node('kill', second!);
        const unready = await waitFor(
          'every bridge to report Kafka refusing its writes',
          async () => {
            const probes = await Promise.all(instances.map((i) => probe(i.port, '/readyz')));
            // Refused writes, or — a consumer that gave up while no group could be joined (joining writes to
            // __consumer_offsets too) — out of the group: unready either way, and saying it is Kafka.
            const unreadyForKafka = (p: (typeof probes)[number]) =>
              p?.status === 503 && p.body.checks?.kafka?.ok === false;
            return probes.every(unreadyForKafka) ? probes : undefined;
          },
          180_000,
          500,
        );
        reasons.push(...unready.map((p) => p?.body.checks?.kafka?.reason ?? JSON.stringify(p?.body)));
        for (const id of [second!, first!]) await node('start', id);
        ended();
        await whole(all);
        let last = '';
        await waitFor(
          'every process ready again',
          async () => {
            const probes = await Promise.all(instances.map((i) => probe(i.port, '/readyz')));
            last = JSON.stringify(probes.map((p) => p?.body));
            return probes.every((p) => p?.status === 200);
          },
          180_000,
          500,
        ).catch((err: unknown) => {
          throw new Error(`${(err as Error).message}; last: ${last}`);
        });
      },
    });
    process.stdout.write(`\n[failover:two-nodes-down] unready: ${JSON.stringify(reasons)}\n`);
    for (const r of reasons) expect(r).toMatch(/^Kafka/);
  });
});
