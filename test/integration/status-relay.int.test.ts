/**
 * The status relay on the real stack (Kafka, PostgreSQL; orders run by a worker whose own relay is off, so the rows
 * wait for the relays this file starts itself): a relay stopped between publishing a batch and marking it sent
 * leaves the rows unsent, and the next relay publishes them again — the same ids, byte for byte; with several relays
 * one leads at a time and the others stand by, and when the leader goes one of them takes over and nothing is
 * published twice; while no relay runs the rows wait and the lag (the oldest unsent row's age) grows; the retention
 * run (workflow pruneStatusOutbox) deletes rows sent longer ago than the retention, in batches, and never an unsent one;
 * a row committed while a round runs goes out right after it (not at the next poll), a woken relay gathers the
 * rows committed while it waits into one request, and a send that never finishes fails its round at the deadline and
 * the rows go out through a new producer.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { createKafka } from '../../src/adapters/kafka/client.js';
import { createSender, type ConnectedSender } from '../../src/adapters/kafka/sender.js';
import { migrationConnection, runtimeConnection } from '../../src/adapters/store/connection.js';
import { createDb, inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import type { StatusEvent } from '../../src/adapters/status-events/event.js';
import { readStatusEvents, statusOutboxLag, type OutboxRow } from '../../src/adapters/status-events/outbox.js';
import { startStatusRelay, type StatusRelay } from '../../src/adapters/status-events/relay.js';
import type { PruneStatusOutboxResult } from '../../activities/status-outbox-pruning.js';
import {
  events,
  logger,
  scenario,
  waitFor,
  type Scenario,
  type TopicRecord,
  type TopicWatch,
} from '../support/harness.js';

describe('the status relay: crash between publish and mark-sent, several relays, rows that wait', () => {
  let s: Scenario;
  let app: App;
  let db: Db;
  let watch: TopicWatch;
  let tenant: string;
  const relays: StatusRelay[] = [];
  const senders: ReturnType<typeof createSender>[] = [];

  beforeAll(async () => {
    s = await scenario('status-relay', { STATUS_RELAY: 'false' });
    app = await s.startInstance();
    db = createDb(runtimeConnection(s.config), 2);
    watch = await s.watchTopic(s.config.STATUS_TOPIC);
    tenant = s.tenant('relay');
  });

  afterAll(async () => {
    for (const r of relays) await r.stop();
    for (const x of senders) await x.disconnect();
    await watch?.close();
    await db?.end();
    await s?.close();
  });

  function relay(
    name: string,
    afterPublish?: (rows: readonly OutboxRow[]) => Promise<void>,
    timing: { pollMs: number; gatherMs?: number } = { pollMs: 100 },
    send: { through?: (real: ConnectedSender) => ConnectedSender; deadlineMs?: number } = {},
  ): StatusRelay {
    const sender = createSender(createKafka(s.config, logger, { clientId: `status-relay-it-${name}` }), {
      idempotent: true,
    });
    senders.push(sender);
    const r = startStatusRelay({
      connection: runtimeConnection(s.config),
      topic: s.config.STATUS_TOPIC,
      sender: send.through ? send.through(sender) : sender,
      batch: 50,
      ...timing,
      ...(send.deadlineMs !== undefined ? { sendDeadlineMs: send.deadlineMs } : {}),
      logger: logger.child({ relay: name }),
      ...(afterPublish ? { afterPublish } : {}),
    });
    relays.push(r);
    return r;
  }

  const outbox = (orderIds?: string[]) =>
    inTenantTransaction(db, tenant, (tx) => readStatusEvents(tx, { tenantId: tenant, limit: 1000 })).then((rows) =>
      rows.filter((r) => !orderIds || orderIds.includes(r.event.orderId)),
    );
  const copiesOf = (eventId: string): TopicRecord[] =>
    watch.records.filter((r) => (JSON.parse(r.value!.toString()) as StatusEvent).eventId === eventId);

  async function shipOrders(orderIds: string[]): Promise<void> {
    await s.produce(orderIds.map((o) => ({ key: `${tenant}/${o}`, value: events.placed(tenant, o) })));
    await waitFor(
      `${orderIds.join(', ')} shipped, their events in the outbox`,
      async () => (await outbox(orderIds)).length === orderIds.length,
    );
  }

  it('with no relay running the rows wait and the lag grows from the oldest unsent row', async () => {
    await shipOrders(['o-1', 'o-2']);
    expect((await outbox()).every((e) => e.sentAt === null)).toBe(true);
    const first = await statusOutboxLag(db, s.config.STATUS_TOPIC);
    await waitFor('the lag to grow', async () => (await statusOutboxLag(db, s.config.STATUS_TOPIC)) > first);
    expect(watch.records).toEqual([]);
  });

  it('a relay stopped between publish and mark-sent: the next one publishes the same ids again, exact copies', async () => {
    let crashed: readonly OutboxRow[] = [];
    const a: StatusRelay = relay('a', async (rows) => {
      crashed = rows;
      void a.stop();
      throw new Error('stopped between publish and mark-sent');
    });
    await waitFor('relay a to publish and stop before marking', () => crashed.length > 0 && !a.leading());
    const ids = crashed.map((r) => r.eventId);
    await waitFor('the batch on the topic', () => ids.every((id) => copiesOf(id).length === 1));
    // Not marked: the rows still wait.
    expect((await outbox()).filter((e) => ids.includes(e.event.eventId)).map((e) => e.sentAt)).toEqual(
      ids.map(() => null),
    );

    relay('b');
    await waitFor('relay b to mark every row sent', async () => (await outbox()).every((e) => e.sentAt !== null));
    await waitFor('the batch published again', () => ids.every((id) => copiesOf(id).length === 2));
    for (const id of ids) {
      const [one, two] = copiesOf(id);
      expect({ key: two!.key?.toString(), value: two!.value!.toString(), headers: two!.headers }).toEqual({
        key: one!.key?.toString(),
        value: one!.value!.toString(),
        headers: one!.headers,
      });
      expect(two!.partition).toBe(one!.partition);
    }
    expect(await statusOutboxLag(db, s.config.STATUS_TOPIC)).toBe(0);
  });

  it('several relays: one leads, the others stand by; the leader gone, another takes over and nothing is sent twice', async () => {
    const [b] = relays.slice(-1) as [StatusRelay];
    const c = relay('c');
    const d = relay('d');
    await waitFor('relay b to lead', () => b.leading());
    expect([c.leading(), d.leading()]).toEqual([false, false]);

    await shipOrders(['o-3', 'o-4']);
    await waitFor('o-3 and o-4 sent', async () => (await outbox(['o-3', 'o-4'])).every((e) => e.sentAt !== null));

    await b.stop();
    await waitFor('c or d to take over', () => c.leading() || d.leading());
    expect([c.leading(), d.leading()].filter(Boolean)).toHaveLength(1);
    await shipOrders(['o-5', 'o-6']);
    await waitFor('o-5 and o-6 sent', async () => (await outbox(['o-5', 'o-6'])).every((e) => e.sentAt !== null));

    for (const e of await outbox(['o-3', 'o-4', 'o-5', 'o-6'])) {
      await waitFor(`${e.event.orderId}'s event on the topic`, () => copiesOf(e.event.eventId).length >= 1);
      expect(copiesOf(e.event.eventId), `${e.event.orderId} published once`).toHaveLength(1);
    }
  });

  it('the retention run deletes rows sent longer ago than the retention, in batches; an unsent row stays, however old', async () => {
    for (const r of relays) await r.stop();
    await shipOrders(['o-7']);
    // Eight days ago, as the owner inside the relay's policy: every row of this tenant; o-7's stays unsent.
    const owner = new pg.Client(migrationConnection(s.config));
    await owner.connect();
    try {
      await owner.query('BEGIN');
      await owner.query("SELECT set_config('app.status_outbox', 'relay', true)");
      await owner.query(
        "UPDATE status_outbox SET created_at = created_at - interval '8 days', sent_at = sent_at - interval '8 days' WHERE tenant_id = $1",
        [tenant],
      );
      await owner.query('COMMIT');
    } finally {
      await owner.end();
    }
    const before = await outbox();
    const sentBefore = before.filter((e) => e.sentAt !== null).length;
    expect(sentBefore).toBe(6);
    const result = await app.client.workflow.execute<
      (input: { retentionDays: number; batchSize: number }) => Promise<PruneStatusOutboxResult>
    >('pruneStatusOutbox', {
      taskQueue: s.config.TEMPORAL_TASK_QUEUE,
      workflowId: `prune-status-outbox-${s.suffix}`,
      args: [{ retentionDays: 7, batchSize: 4 }],
    });
    expect(result.deleted).toBeGreaterThanOrEqual(sentBefore);
    expect(result.batches).toBeGreaterThanOrEqual(2);
    expect((await outbox()).map((e) => [e.event.orderId, e.sentAt])).toEqual([['o-7', null]]);
  });

  // A poll ten minutes away: a row that waited for it would fail the test's waits (a minute at most) instead.
  const noPoll = 600_000;
  const sentIn = async (orderIds: string[]) =>
    waitFor(`${orderIds.join(', ')} sent`, async () => (await outbox(orderIds)).every((e) => e.sentAt !== null));

  it('a row committed while a round runs is published at once after it, not at the next poll', async () => {
    for (const r of relays) await r.stop();
    let during = false;
    relay(
      'e',
      async (rows) => {
        if (during || !rows.some((r) => r.orderId === 'o-8')) return;
        during = true;
        // o-9 is committed (and notifies) after this round read the outbox and before it ends.
        await shipOrders(['o-9']);
      },
      { pollMs: noPoll },
    );
    await shipOrders(['o-8']);
    await sentIn(['o-8']);
    expect(during).toBe(true);
    await sentIn(['o-9']);
  });

  it('a woken relay gathers for STATUS_RELAY_GATHER_MS: rows committed meanwhile go out in one request', async () => {
    for (const r of relays) await r.stop();
    const batches: string[][] = [];
    // A long gather (the service allows up to 1 s) so that four orders shipped one after another on a loaded machine
    // all commit inside it.
    relay('f', async (rows) => void batches.push(rows.map((r) => r.orderId)), { pollMs: noPoll, gatherMs: 15_000 });
    // The relay's first round reads at once, woken by nothing, and gathers nothing: on a loaded machine it can start
    // while the orders below commit and take the first of them alone. One order sent first means the relay is past it,
    // waiting to be woken, before the four commit.
    await shipOrders(['o-9b']);
    await sentIn(['o-9b']);
    const orders = ['o-10', 'o-11', 'o-12', 'o-13'];
    await shipOrders(orders);
    await sentIn(orders);
    expect(batches.filter((b) => b.some((o) => orders.includes(o)))).toEqual([expect.arrayContaining(orders)]);
  });

  it('a send that never finishes: at the deadline the round fails, the producer is replaced, the rows go out through a new one', async () => {
    for (const r of relays) await r.stop();
    let sends = 0;
    let replaced = 0;
    // The first send hangs forever, as a kafkajs request that is neither answered nor failed does. The deadline is
    // 2 s here instead of the service's 60 s (STATUS_RELAY_SEND_DEADLINE_MS) so that the test waits seconds.
    relay('g', undefined, undefined, {
      deadlineMs: 2_000,
      through: (real) => ({
        ...real,
        send: (topic, records) => (sends++ === 0 ? new Promise<never>(() => undefined) : real.send(topic, records)),
        replace: () => {
          replaced += 1;
          real.replace();
        },
      }),
    });
    await shipOrders(['o-14']);
    await sentIn(['o-14']);
    expect({ sends: sends >= 2, replaced }).toEqual({ sends: true, replaced: 1 });
    const [row] = await outbox(['o-14']);
    await waitFor("o-14's event on the topic", () => copiesOf(row!.event.eventId).length === 1);
  });
});
