/**
 * (d) The node leading the most partitions of the status topic is SIGKILLed while the relay publishes: a batch in
 * flight either lands whole or is sent again (its rows stay unsent until the broker acknowledged them).
 *
 * That a batch was in flight is made so and shown, not hoped for: the node is frozen (SIGSTOP: its connections stay
 * open, nothing is answered) while status changes are being written — orders of a tenant of the case's own, sent just
 * before, some under way and not all shipped — so the relay's sends of them wait for an answer; once
 * the relay's lag shows a row held that long (2 s, where it publishes within a fraction of one), the frozen node is
 * killed. The relay's producer spans (one per row, from the send's start to its end, exported to an OTLP receiver
 * here) must then show a send that started before the kill and ended after it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { busiestNode, freeze, ledElsewhere, node, whole } from '../support/cluster.js';
import { createDb } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { events, tenantRows, waitFor } from '../support/harness.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { scrape } from '../support/processes.js';
import { runFailover, type FaultContext } from './failover.js';

/** How long the relay's oldest unsent row must wait before the frozen node is killed: its send is held. */
const HELD_S = 2;
/** Orders whose status changes are written while the node is frozen: the rows it holds. */
const EXTRA_ORDERS = 20;
/** Batches of them sent at most, each when the one before settled before the freeze caught it. */
const EXTRA_BATCHES = 5;

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
      async fault(ctx, started, ended) {
        const { topics, instances } = ctx;
        statusTopic = topics.status;
        const all = [topics.orders, topics.dlq, topics.status];
        const worker = instances.find((i) => i.roles === 'worker')!;
        const sent = () => scrape(worker.port, 'fulfilment_status_events_published_total');
        const lag = () => scrape(worker.port, 'fulfilment_status_relay_lag_seconds', { topic: topics.status });
        // The relay is publishing: its count moves.
        const before = await sent();
        await waitFor('the relay to publish', async () => (await sent()) > before, 120_000, 20);
        const victim = await busiestNode([topics.status]);
        // Status rows written while the node is frozen: the relay's sends of them wait for its answer (every partition
        // has a replica on it, and acks=all waits for every in-sync replica until the controller fences it, ~9 s).
        // The stream cannot be relied on for them: in a quick run everything before the freeze is published already,
        // and what comes after is held by the frozen node too. So orders of a tenant of their own (the stream's checks
        // count tenants a and b) are sent first, and the node is frozen while their status changes are being written:
        // some of them exist, not every order has shipped. A batch that finished before it was caught is followed by
        // another.
        const thaw = await freezeWhileStatusIsWritten(ctx, victim);
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

/**
 * Sends EXTRA_ORDERS orders of a tenant of their own and freezes node `victim` once some of them are under way and not
 * every one has shipped, so that their remaining status changes are written while it is frozen; a batch that settled
 * before the freeze caught it is thawed and followed by another. Returns the thaw.
 */
async function freezeWhileStatusIsWritten({ s, placedAlso }: FaultContext, victim: number): Promise<() => void> {
  const tenant = s.tenant('c');
  const db = createDb(runtimeConnection(s.config), 1);
  try {
    for (let batch = 0; batch < EXTRA_BATCHES; batch += 1) {
      const ids = Array.from({ length: EXTRA_ORDERS }, (_, i) => `x${batch}-${String(i).padStart(3, '0')}`);
      placedAlso(ids.map((id) => `${tenant}/${id}`));
      await s.produce(
        ids.map((orderId) => ({
          key: `${tenant}/${orderId}`,
          value: events.placed(tenant, orderId, { orderVersion: 1 }),
        })),
      );
      const rows = () => tenantRows(db, tenant).then((all) => all.filter((r) => ids.includes(r.order_id)));
      await waitFor(`an order of batch ${batch} under way`, async () => (await rows()).length > 0, 60_000, 10);
      const thaw = await freeze(victim);
      const now = await rows();
      if (now.length < ids.length || now.some((r) => r.status !== 'shipped')) {
        const shipped = now.filter((r) => r.status === 'shipped').length;
        process.stdout.write(
          `[failover:status-leader-kill] frozen during batch ${batch}: ${now.length} of ${ids.length} orders under way, ${shipped} shipped\n`,
        );
        return thaw;
      }
      thaw();
    }
    throw new Error(`${EXTRA_BATCHES} batches of ${EXTRA_ORDERS} orders each settled before the freeze caught them`);
  } finally {
    await db.end();
  }
}
