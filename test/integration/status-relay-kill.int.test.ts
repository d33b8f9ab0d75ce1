/**
 * A status relay killed (SIGKILL, a process of its own: test/support/relay-child.ts) after it published a batch and
 * before it marked it sent: its PostgreSQL session dies with it, so its lead on the topic goes, the rows stay unsent,
 * and the next relay publishes them again — the same ids, exact copies, on the same partitions. Real Kafka and
 * PostgreSQL; the orders are run by a worker whose own relay is off.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka } from '../../src/adapters/kafka/client.js';
import { createSender } from '../../src/adapters/kafka/sender.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { createDb, inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import type { StatusEvent } from '../../src/adapters/status-events/event.js';
import { readStatusEvents, statusOutboxLag } from '../../src/adapters/status-events/outbox.js';
import { startStatusRelay, type StatusRelay } from '../../src/adapters/status-events/relay.js';
import {
  events,
  logger,
  scenario,
  waitFor,
  type Scenario,
  type TopicRecord,
  type TopicWatch,
} from '../support/harness.js';

const CHILD = fileURLToPath(new URL('../support/relay-child.ts', import.meta.url));

describe('a status relay killed between publish and mark-sent', () => {
  let s: Scenario;
  let db: Db;
  let watch: TopicWatch;
  let relay: StatusRelay | undefined;
  let sender: ReturnType<typeof createSender> | undefined;

  beforeAll(async () => {
    s = await scenario('status-relay-kill', { STATUS_RELAY: 'false' });
    await s.startInstance();
    db = createDb(runtimeConnection(s.config), 2);
    watch = await s.watchTopic(s.config.STATUS_TOPIC);
  });

  afterAll(async () => {
    await relay?.stop();
    await sender?.disconnect();
    await watch?.close();
    await db?.end();
    await s?.close();
  });

  it(
    'leaves the batch unsent, and the next relay publishes the same ids again, exact copies',
    { timeout: 300_000 },
    async () => {
      const tenant = s.tenant('kill');
      const orders = ['o-1', 'o-2', 'o-3'];
      const outbox = () =>
        inTenantTransaction(db, tenant, (tx) => readStatusEvents(tx, { tenantId: tenant, limit: 1000 }));
      const copiesOf = (eventId: string): TopicRecord[] =>
        watch.records.filter((r) => (JSON.parse(r.value!.toString()) as StatusEvent).eventId === eventId);
      await s.produce(orders.map((o) => ({ key: `${tenant}/${o}`, value: events.placed(tenant, o) })));
      await waitFor(
        'the orders shipped, their events in the outbox',
        async () => (await outbox()).length === orders.length,
        120_000,
        100,
      );

      const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
        env: s.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout!.on('data', (c: Buffer) => void (out += c.toString()));
      child.stderr!.on('data', (c: Buffer) => void (err = (err + c.toString()).slice(-4000)));
      const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
        child.on('exit', (code, signal) => resolve(signal ?? code)),
      );
      const published = await waitFor(
        'the child relay to publish a batch',
        () => {
          if (child.exitCode !== null) throw new Error(`the relay child exited ${child.exitCode}: ${err}`);
          const line = out.split('\n').find((l) => l.startsWith('{"published"'));
          return line ? (JSON.parse(line) as { published: string[] }).published : undefined;
        },
        120_000,
        50,
      );
      await waitFor('its batch on the topic', () => published.every((id) => copiesOf(id).length === 1), 60_000, 50);
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      // Killed before marking: the rows still wait.
      const rows = (await outbox()).filter((e) => published.includes(e.event.eventId));
      expect(rows.map((e) => e.sentAt)).toEqual(published.map(() => null));

      sender = createSender(createKafka(s.config, logger, { clientId: 'status-relay-kill-it' }), { idempotent: true });
      relay = startStatusRelay({
        connection: runtimeConnection(s.config),
        topic: s.config.STATUS_TOPIC,
        sender,
        batch: 50,
        pollMs: 100,
        logger,
      });
      await waitFor(
        'the next relay to mark every row sent',
        async () => (await outbox()).every((e) => e.sentAt !== null),
        120_000,
        100,
      );
      await waitFor('the batch published again', () => published.every((id) => copiesOf(id).length === 2), 60_000, 50);
      for (const id of published) {
        const [one, two] = copiesOf(id);
        expect({ key: two!.key?.toString(), value: two!.value!.toString(), headers: two!.headers }).toEqual({
          key: one!.key?.toString(),
          value: one!.value!.toString(),
          headers: one!.headers,
        });
        expect(two!.partition).toBe(one!.partition);
      }
      console.log(
        `killed after publishing ${published.length} event(s); republished the same ids: ${published.join(', ')}`,
      );
      expect(await statusOutboxLag(db, s.config.STATUS_TOPIC)).toBe(0);
    },
  );
});
