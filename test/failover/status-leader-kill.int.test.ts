/**
 * (d) The node leading the most partitions of the status topic is SIGKILLed while the relay publishes: a batch in
 * flight either lands whole or is sent again (its rows stay unsent until the broker acknowledged them).
 *
 * That a batch was in flight is made so and shown, not hoped for: the node is frozen first (SIGSTOP: its connections
 * stay open, nothing is answered), so the relay's next send holding one of its partitions waits for an answer; once
 * the relay's lag shows a row held that long (2 s, where it publishes within a fraction of one), the frozen node is
 * killed. The relay's producer spans (one per row, from the send's start to its end, exported to an OTLP receiver
 * here) must then show a send that started before the kill and ended after it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { busiestNode, freeze, ledElsewhere, node, whole } from '../support/cluster.js';
import { waitFor } from '../support/harness.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { scrape } from '../support/processes.js';
import { runFailover } from './failover.js';

/** How long the relay's oldest unsent row must wait before the frozen node is killed: its send is held. */
const HELD_S = 2;

describe("(d) the status topic's leader SIGKILLed while the relay publishes", () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('split roles: a batch in flight when the leader died is published, every status change with it', async () => {
    let statusTopic = '';
    /** Just before the kill was asked for, and once it was done. */
    let killFrom = 0;
    let killedAt = 0;
    await runFailover({
      name: 'status-leader-kill',
      shape: 'split',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
      async fault({ topics, instances }, started, ended) {
        statusTopic = topics.status;
        const all = [topics.orders, topics.dlq, topics.status];
        const worker = instances.find((i) => i.roles === 'worker')!;
        const sent = () => scrape(worker.port, 'fulfilment_status_events_published_total');
        const lag = () => scrape(worker.port, 'fulfilment_status_relay_lag_seconds', { topic: topics.status });
        // The relay is publishing: its count moves.
        const before = await sent();
        await waitFor('the relay to publish', async () => (await sent()) > before, 120_000, 20);
        const victim = await busiestNode([topics.status]);
        const thaw = await freeze(victim);
        started();
        try {
          await waitFor(
            `a status row held ${HELD_S} s by the frozen leader (the relay's send waits for its answer)`,
            async () => (await lag()) >= HELD_S,
            60_000,
            100,
          );
        } catch (err) {
          thaw();
          throw err;
        }
        killFrom = Date.now();
        await node('kill', victim);
        killedAt = Date.now();
        await ledElsewhere(all, victim);
        await new Promise((r) => setTimeout(r, 10_000));
        await node('start', victim);
        ended();
        await whole(all);
      },
    });
    // The processes were stopped: their spans are exported by then, or soon after.
    const publishes = () => receiver.spans.filter((sp) => sp.name === `publish ${statusTopic}`);
    const inFlight = await waitFor(
      'a status event whose send started before the kill and ended after it',
      () => {
        const across = publishes().filter((sp) => sp.startMs < killFrom && sp.endMs > killedAt);
        return across.length > 0 ? across : undefined;
      },
      30_000,
      250,
    ).catch((err: unknown) => {
      const spans = publishes().map((sp) => `${sp.startMs - killFrom}..${sp.endMs - killFrom}`);
      throw new Error(`${(err as Error).message}; publish spans, ms from the kill: ${spans.join(' ')}`);
    });
    process.stdout.write(
      `\n[failover:status-leader-kill] in flight at the kill: ${inFlight.length} status events, sent ${Math.min(
        ...inFlight.map((sp) => killFrom - sp.startMs),
      )}–${Math.max(...inFlight.map((sp) => killFrom - sp.startMs))} ms before it\n`,
    );
    expect(inFlight.length).toBeGreaterThan(0);
  });
});
