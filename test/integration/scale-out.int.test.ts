/**
 * Scale-out: against one stack, 2 worker processes and 3 bridge processes — each the real service
 * (`node --import tsx src/service.ts`, FULFILMENT_ROLES=worker or bridge, its own METRICS_PORT) — share one orders
 * topic of 6 partitions, one consumer group and one task queue. A few hundred events across every partition,
 * with duplicates (also on another partition, so another bridge), out-of-order versions and cancellations that
 * reach their order before its placement (published on another partition), show that every bridge was assigned
 * partitions and handed work over, that both workers executed activities, and that every invariant holds.
 */
import { readlinkSync } from 'node:fs';
import { Partitioners, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caughtUp, counter, events, recordsOn, scenario, waitFor, type Scenario } from '../support/harness.js';
import { freePort, scrape } from '../support/processes.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import type { App } from '../../src/app.js';
import type { FulfilmentRow } from '../../src/vocabulary/order.js';

const PARTITIONS = 6;
const BRIDGES = 3;
const WORKERS = 2;
/** Orders per kind (below), over 3 tenants and all 6 partitions: 300 records for 180 orders. */
const PER_KIND = { plain: 90, duplicated: 30, reordered: 30, cancelledFirst: 30 };
const COPIES = 3;
const DEADLINE_MS = 300_000;

interface Instance {
  role: 'worker' | 'bridge';
  name: string;
  port: number;
  proc: ServiceProcess;
}

/** Partitions of the last "joined group" an instance logged (its current assignment once the group is stable). */
function lastAssignment(i: Instance): number[] | undefined {
  const joined = i.proc.lines.filter((l) => l.msg === 'joined group');
  return joined.at(-1)?.partitions as number[] | undefined;
}

describe('scale-out: 2 worker and 3 bridge processes against one stack', () => {
  let s: Scenario;
  let producer: Producer;
  const instances: Instance[] = [];
  const bridges = () => instances.filter((i) => i.role === 'bridge');
  const workers = () => instances.filter((i) => i.role === 'worker');

  beforeAll(async () => {
    s = await scenario('scale-out');
    await s.admin.createPartitions({ topicPartitions: [{ topic: s.config.ORDERS_TOPIC, count: PARTITIONS }] });
    await waitFor(
      `${PARTITIONS} partitions on ${s.config.ORDERS_TOPIC}`,
      async () => (await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC)).length === PARTITIONS,
    );
    // A producer of its own: the scenario's learnt the topic with 3 partitions.
    producer = s.kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
  });

  afterAll(async () => {
    // Bridges first, so nothing new is handed over while the workers drain.
    for (const i of [...bridges(), ...workers()]) await i.proc.stop();
    await producer?.disconnect();
    await s?.close();
  });

  it(
    'every bridge holds partitions, both workers execute activities, and every order ends exactly as its events say',
    { timeout: 900_000 },
    async () => {
      for (const [role, count] of [
        ['worker', WORKERS],
        ['bridge', BRIDGES],
      ] as const) {
        for (let n = 1; n <= count; n += 1) {
          const port = await freePort();
          // A clean stop is checked here, not the deadline (worker-lifecycle checks that): on a machine at a load of 86 a
          // bridge took longer than the default 30 s to leave its group and was rightly cut off with exit 2.
          const proc = startServiceProcess({
            ...s.env,
            FULFILMENT_ROLES: role,
            METRICS_PORT: String(port),
            KAFKA_CLIENT_ID: `scale-out-${role}-${n}`,
            SHUTDOWN_DEADLINE_MS: '180000',
          });
          instances.push({ role, name: `${role} ${n}`, port, proc });
        }
      }
      for (const i of instances) await i.proc.said('service ready', DEADLINE_MS);

      // Each is a real service process on the same Node as this test (node_modules/.bin/node under npm: Node 24).
      for (const i of instances) {
        if (process.platform === 'linux')
          expect(readlinkSync(`/proc/${i.proc.child.pid}/exe`), i.name).toBe(process.execPath);
      }
      expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(24);

      // The group settles with all three bridges as members, every one assigned partitions, together all six.
      await waitFor(
        'the group to be stable with every bridge holding partitions',
        async () => {
          const [group] = (await s.admin.describeGroups([s.config.CONSUMER_GROUP])).groups;
          if (group?.state !== 'Stable' || group.members.length !== BRIDGES) return false;
          const assigned = bridges().map(lastAssignment);
          if (assigned.some((a) => !a || a.length === 0)) return false;
          const all = assigned.flatMap((a) => a!).sort((a, b) => a - b);
          return all.length === PARTITIONS && all.every((p, idx) => p === idx);
        },
        DEADLINE_MS,
        250,
      );
      const assignment = Object.fromEntries(bridges().map((b) => [b.name, lastAssignment(b)]));
      const owner = new Map(bridges().flatMap((b) => lastAssignment(b)!.map((p) => [p, b.name] as const)));
      /** The first partition after `p` that another bridge holds. */
      const elsewhere = (p: number) => {
        for (let d = 1; d < PARTITIONS; d += 1)
          if (owner.get((p + d) % PARTITIONS) !== owner.get(p)) return (p + d) % PARTITIONS;
        throw new Error(`every partition is held by ${owner.get(p)}`);
      };

      // ---- The traffic ----
      const tenants = [s.tenant('a'), s.tenant('b'), s.tenant('c')];
      type Msg = { partition: number; key: string; value: object };
      const first: Msg[] = [];
      const rest: Msg[] = [];
      const expectShipped = new Map<string, { version: number; lastEventId: string }>();
      const cancelledFirst: string[] = [];
      const ref = (tenant: string, order: string) => `${tenant}/${order}`;
      let n = 0;
      const next = (kind: string) => {
        n += 1;
        return { tenant: tenants[n % tenants.length]!, order: `${kind}-${n}`, p: n % PARTITIONS };
      };
      for (let k = 0; k < PER_KIND.plain; k += 1) {
        const { tenant, order, p } = next('plain');
        const placed = events.placed(tenant, order);
        (k % 2 ? rest : first).push({ partition: p, key: order, value: placed });
        expectShipped.set(ref(tenant, order), { version: 1, lastEventId: placed.eventId });
      }
      // The same event three times: twice on its partition, once on a partition another bridge holds.
      for (let k = 0; k < PER_KIND.duplicated; k += 1) {
        const { tenant, order, p } = next('dup');
        const placed = events.placed(tenant, order);
        first.push({ partition: p, key: order, value: placed });
        rest.push({ partition: p, key: order, value: placed }, { partition: elsewhere(p), key: order, value: placed });
        expectShipped.set(ref(tenant, order), { version: 1, lastEventId: placed.eventId });
      }
      // Newer first, then an older version with a fresh event id on the same partition (so it surely arrives
      // second): a stale placement, or a stale cancellation that must not cancel the newer placement.
      for (let k = 0; k < PER_KIND.reordered; k += 1) {
        const { tenant, order, p } = next('reorder');
        const newer = events.placed(tenant, order, { orderVersion: 3 });
        const older =
          k % 2
            ? events.placed(tenant, order, { orderVersion: 2 })
            : events.cancelled(tenant, order, { orderVersion: 2 });
        first.push({ partition: p, key: order, value: newer });
        rest.push({ partition: p, key: order, value: older });
        expectShipped.set(ref(tenant, order), { version: 3, lastEventId: newer.eventId });
      }
      // The cancellation first; its placement on a partition another bridge holds, once the tombstone is there.
      const placements: Msg[] = [];
      for (let k = 0; k < PER_KIND.cancelledFirst; k += 1) {
        const { tenant, order, p } = next('cancel-first');
        first.push({ partition: p, key: order, value: events.cancelled(tenant, order, { orderVersion: 2 }) });
        placements.push({
          partition: elsewhere(p),
          key: order,
          value: events.placed(tenant, order, { orderVersion: 1 }),
        });
        cancelledFirst.push(ref(tenant, order));
      }
      const send = (msgs: Msg[]) =>
        producer.send({
          topic: s.config.ORDERS_TOPIC,
          acks: -1,
          messages: msgs.map((m) => ({ partition: m.partition, key: m.key, value: JSON.stringify(m.value) })),
        });
      const split = (r: string) => r.split('/') as [string, string];
      const rows = async (refs: string[]) => Promise.all(refs.map((r) => s.row(...split(r))));

      await send(first);
      await waitFor(
        'every early cancellation to leave its tombstone',
        async () => (await rows(cancelledFirst)).every((r) => r?.status === 'cancelled' && r.placed_at === null),
        DEADLINE_MS,
        500,
      );
      await send([...rest, ...placements]);
      const total = first.length + rest.length + placements.length;
      expect(total).toBe(
        PER_KIND.plain + PER_KIND.duplicated * COPIES + PER_KIND.reordered * 2 + PER_KIND.cancelledFirst * 2,
      );
      const perPartition = (await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC)).map((o) => Number(o.high));
      expect(perPartition.every((h) => h > 0)).toBe(true);

      // ---- Everything settles ----
      const shippedRefs = [...expectShipped.keys()];
      await waitFor(
        `all ${shippedRefs.length} placed, not cancelled orders to ship`,
        async () => (await rows(shippedRefs)).every((r) => r?.status === 'shipped'),
        DEADLINE_MS,
        1000,
      );
      await waitFor(
        'every late placement to be recorded on its tombstone',
        async () => (await rows(cancelledFirst)).every((r) => r?.placed_at !== null && r?.placed_at !== undefined),
        DEADLINE_MS,
        500,
      );
      await waitFor(
        'the group to commit every offset of every partition',
        () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
        DEADLINE_MS,
        500,
      );
      const stale = () =>
        Promise.all(instances.map((i) => scrape(i.port, 'fulfilment_events_processed_total', { outcome: 'stale' })));
      const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
      await waitFor(
        'every out-of-order older version to be decided stale',
        async () => sum(await stale()) >= PER_KIND.reordered,
        DEADLINE_MS,
        500,
      );
      const suppressed = () =>
        Promise.all(instances.map((i) => scrape(i.port, 'fulfilment_duplicates_suppressed_total')));
      await waitFor(
        'every extra copy to be suppressed',
        async () => sum(await suppressed()) >= PER_KIND.duplicated * (COPIES - 1),
        DEADLINE_MS,
        500,
      );

      // ---- The invariants ----
      const shipments = (await Promise.all(tenants.map((t) => s.shipments(t)))).flat();
      const dispatched = new Map<string, number>();
      for (const sh of shipments)
        if (sh.status === 'dispatched')
          dispatched.set(ref(sh.tenantId, sh.orderId), (dispatched.get(ref(sh.tenantId, sh.orderId)) ?? 0) + 1);
      // Each placed, not cancelled order shipped exactly once, and nothing else shipped.
      for (const r of shippedRefs) expect(dispatched.get(r), r).toBe(1);
      expect(dispatched.size).toBe(shippedRefs.length);
      // No order whose cancellation came first shipped; each is recorded as cancelled before placement.
      for (const r of cancelledFirst)
        expect(
          shipments.filter((sh) => ref(sh.tenantId, sh.orderId) === r),
          r,
        ).toEqual([]);
      for (const row of await rows(cancelledFirst)) {
        expect(row).toMatchObject({
          status: 'cancelled',
          cancelled_before_placement: true,
          shipped_at: null,
          shipment_id: null,
          order_version: 2,
        });
      }
      // Each order's row is at its newest version, written by its newest event.
      const shippedRows = (await rows(shippedRefs)) as FulfilmentRow[];
      shippedRows.forEach((row, idx) => {
        const want = expectShipped.get(shippedRefs[idx]!)!;
        expect({
          ref: shippedRefs[idx],
          version: row.order_version,
          lastEventId: row.last_event_id,
          shipment: dispatched.get(shippedRefs[idx]!),
        }).toEqual({
          ref: shippedRefs[idx],
          version: want.version,
          lastEventId: want.lastEventId,
          shipment: 1,
        });
      });
      // Nothing was dead-lettered.
      expect(await recordsOn(s.admin, s.config.DLQ_TOPIC)).toBe(0);

      // ---- Who did the work ----
      const handedOver = await Promise.all(
        bridges().map((b) => scrape(b.port, 'fulfilment_bridge_records_total', { outcome: 'accepted' })),
      );
      const applied = await Promise.all(
        workers().map((w) => scrape(w.port, 'fulfilment_events_processed_total', { outcome: 'applied' })),
      );
      const activityLines = workers().map((w) => w.proc.lines.filter((l) => l.msg === 'recording order event').length);
      const report = {
        assignment,
        recordsPerPartition: perPartition,
        acceptedPerBridge: handedOver,
        appliedPerWorker: applied,
        recordOrderEventActivitiesPerWorker: activityLines,
        suppressedDuplicatesPerInstance: await suppressed(),
        staleDecidedPerInstance: await stale(),
      };
      process.stdout.write(`[scale-out] ${JSON.stringify(report)}\n`);
      // Every bridge handed over records of its partitions; the bridges, not the workers, consumed.
      for (const [idx, b] of bridges().entries()) expect(handedOver[idx], b.name).toBeGreaterThan(0);
      expect(sum(handedOver)).toBeGreaterThanOrEqual(expectShipped.size + cancelledFirst.length * 2);
      // Both workers executed activities: regular ones (recordOrderEvent logs) and the outcome reports (/metrics).
      for (const [idx, w] of workers().entries()) {
        expect(activityLines[idx], w.name).toBeGreaterThan(0);
        expect(applied[idx], w.name).toBeGreaterThan(0);
      }
      // Every placement and first cancellation was applied (at least once: a retried outcome report counts again).
      expect(sum(applied)).toBeGreaterThanOrEqual(expectShipped.size + cancelledFirst.length * 2);

      // Each process stops cleanly on SIGTERM (bridges first).
      for (const i of [...bridges(), ...workers()]) {
        const code = await i.proc.stop();
        const fatal = i.proc.lines.filter((l) => l.level === 60).map((l) => String(l.msg));
        expect(code, `${i.name} exit code${fatal.length ? ` (${fatal.join('; ')})` : ''}`).toBe(0);
      }
    },
  );
});

describe('one bridge more than partitions', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await scenario('spare-bridge');
  });
  afterAll(async () => s?.close());

  it(
    'is assigned nothing and idles, then is assigned a partition when a bridge leaves',
    { timeout: 600_000 },
    async () => {
      const partitions = (await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC)).length;
      await s.startInstance({ roles: { worker: true, bridge: false } });
      const assigned = new Map<number, number[]>();
      const members: App[] = [];
      for (let k = 0; k <= partitions; k += 1) {
        members.push(
          await s.startInstance({
            roles: { worker: false, bridge: true },
            onBridge: (b) => b.events.on('join', (p) => assigned.set(k, p)),
          }),
        );
      }
      const sizes = () => members.map((_, k) => assigned.get(k)?.length ?? -1);
      await waitFor(
        `the group to be stable with ${partitions + 1} members, one of them holding nothing`,
        async () => {
          const [group] = (await s.admin.describeGroups([s.config.CONSUMER_GROUP])).groups;
          return (
            group?.state === 'Stable' &&
            group.members.length === partitions + 1 &&
            sizes().filter((n) => n === 1).length === partitions &&
            sizes().filter((n) => n === 0).length === 1
          );
        },
        DEADLINE_MS,
        250,
      );
      const spare = sizes().indexOf(0);
      const leaving = sizes().findIndex((n) => n > 0);

      await members[leaving]!.stop();
      // Kafka reassigns every partition among the members that remain: the spare now holds one.
      await waitFor(
        'the spare bridge to be assigned a partition once another bridge left',
        async () => {
          const [group] = (await s.admin.describeGroups([s.config.CONSUMER_GROUP])).groups;
          if (group?.state !== 'Stable' || group.members.length !== partitions) return false;
          const held = members.flatMap((_, k) => (k === leaving ? [] : (assigned.get(k) ?? []))).sort((a, b) => a - b);
          return (
            (assigned.get(spare) ?? []).length === 1 && held.length === partitions && held.every((p, idx) => p === idx)
          );
        },
        DEADLINE_MS,
        250,
      );
      const tenant = s.tenant();
      const ids = Array.from({ length: partitions }, (_, p) => `after-leave-${p}`);
      await s.produce(ids.map((id, p) => ({ partition: p, key: id, value: events.placed(tenant, id) })));
      await waitFor(
        'an order on every partition to ship',
        async () => (await Promise.all(ids.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
        DEADLINE_MS,
        250,
      );
      await waitFor(
        'the group to commit every partition',
        () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
        DEADLINE_MS,
        250,
      );
      expect(
        await counter(members[spare]!, 'fulfilment_bridge_records_total', { outcome: 'accepted' }),
      ).toBeGreaterThan(0);
    },
  );
});
