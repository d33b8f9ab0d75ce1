import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bridge } from '../../src/roles/bridge/bridge.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { createDb, inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import { CONSUMER_NAME } from '../../src/vocabulary/order.js';
import {
  PacedProducer,
  caughtUp,
  committedOffsets,
  counter,
  events,
  recordsOn,
  scenario,
  tenantRows,
  waitFor,
  type Scenario,
} from '../support/harness.js';

type OrderEvent = ReturnType<typeof events.placed> | ReturnType<typeof events.cancelled>;

/** A commit the bridge made, as kafkajs reported it (only commits the broker accepted are reported). */
interface CommitSeen {
  seq: number;
  partition: number;
  offset: bigint;
}

/** Records commits and group joins of an in-process bridge from before it starts, stamped with a shared sequence number. */
function watchBridge(bridge: Bridge, clock: { seq: number }) {
  const commits: CommitSeen[] = [];
  const joins: { seq: number; partitions: number[] }[] = [];
  bridge.events.on('commit', (partition, offset) => commits.push({ seq: (clock.seq += 1), partition, offset }));
  bridge.events.on('join', (partitions) => joins.push({ seq: (clock.seq += 1), partitions }));
  return { commits, joins };
}

describe('per-order lanes within one partition', () => {
  let s: Scenario;
  beforeAll(async () => {
    // One event per delivery: this is about lanes and the window (coalescing is lanes.unit.test.ts's and pipeline.int.test.ts's).
    s = await scenario('lanes', { BRIDGE_READ_AHEAD_RECORDS: '6', BRIDGE_COALESCE_MAX_EVENTS: '1' });
  });
  afterAll(async () => s?.close());

  it('runs different orders concurrently, keeps one order in order, bounds what runs ahead, and commits only the finished prefix', async () => {
    const tenant = s.tenant();
    const held = 'held';
    // Other orders: each has a lane of its own, so nothing waits behind the held order but its own next event.
    const others = Array.from({ length: 12 }, (_, i) => `other-${i}`);
    const stream: OrderEvent[] = [
      events.placed(tenant, others[0]!), // offset 0: finishes at once
      events.placed(tenant, held), // offset 1: held until released
      events.placed(tenant, held, { orderVersion: 2 }), // offset 2: same order, must wait for offset 1
      ...others.slice(1).map((o) => events.placed(tenant, o)), // offsets 3..: other orders
    ];
    const indexOf = new Map(stream.map((e, i) => [e.eventId, i]));

    const clock = { seq: 0 };
    const log: { seq: number; index: number; phase: 'start' | 'end' }[] = [];
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let watched!: ReturnType<typeof watchBridge>;
    const app = await s.startInstance({
      onBridge: (bridge) => (watched = watchBridge(bridge, clock)),
      wrapStarter: (starter) => ({
        async deliver(delivered) {
          const indexes = delivered.map((event) => indexOf.get(event.eventId)!);
          for (const index of indexes) log.push({ seq: (clock.seq += 1), index, phase: 'start' });
          if (indexes.includes(1)) await released;
          const outcome = await starter.deliver(delivered);
          for (const index of indexes) log.push({ seq: (clock.seq += 1), index, phase: 'end' });
          return outcome;
        },
      }),
    });
    const ended = (i: number) => log.some((l) => l.index === i && l.phase === 'end');
    const started = (i: number) => log.some((l) => l.index === i && l.phase === 'start');

    await s.produce(stream.map((value) => ({ partition: 0, key: value.orderId, value })));
    // Window of 6 past the oldest unfinished record (offset 1): offsets 3–6 of other orders run and finish.
    await waitFor('the other orders inside the window to finish while offset 1 is held', () =>
      [0, 3, 4, 5, 6].every(ended),
    );
    await waitFor('the finished prefix (offset 0) to be committed', () =>
      watched.commits.some((c) => c.partition === 0 && c.offset === 1n),
    );
    expect(started(1) && !ended(1)).toBe(true);
    expect(started(2)).toBe(false); // the held order's next event waits for it
    expect(stream.slice(7).some((_, k) => started(7 + k))).toBe(false); // nothing beyond the window started
    expect((await committedOffsets(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC)).get(0)).toBe(1n);

    release();
    await waitFor('everything committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
    const seqOf = (i: number, phase: 'start' | 'end') => log.find((l) => l.index === i && l.phase === phase)!.seq;
    expect(seqOf(2, 'start')).toBeGreaterThan(seqOf(1, 'end'));
    // Every commit names a position whose every earlier record had finished before the commit was made.
    for (const c of watched.commits.filter((x) => x.partition === 0)) {
      for (let i = 0; i < Number(c.offset); i += 1)
        expect(seqOf(i, 'end'), `offset ${i} before commit ${c.offset}`).toBeLessThan(c.seq);
    }
    // No record ever started 6 or more records past the oldest unfinished one.
    for (const l of log.filter((x) => x.phase === 'start')) {
      let oldest = 0;
      while (log.some((x) => x.index === oldest && x.phase === 'end' && x.seq < l.seq)) oldest += 1;
      expect(l.index - oldest, `offset ${l.index}`).toBeLessThan(6);
    }
    await app.stop();
  });

  it('a consumer kafkajs gives up on (a non-retriable crash) is restarted by the bridge, never left stopped', async () => {
    let calls = 0;
    const app = await s.startInstance({
      wrapStarter: (starter) => ({
        async deliver(event) {
          calls += 1;
          // A programming error, not a dependency failure: kafkajs will not restart the consumer for it.
          if (calls === 1) throw new TypeError('simulated bug in the delivery path');
          return starter.deliver(event);
        },
      }),
    });
    const tenant = s.tenant();
    await s.produce([{ value: events.placed(tenant, 'o1') }]);
    await waitFor(
      'the order to ship after the consumer was restarted',
      async () => (await s.row(tenant, 'o1'))?.status === 'shipped',
    );
    expect(
      await counter(app, 'fulfilment_failures_total', {
        operation: 'consume',
        error_class: 'KafkaJSNonRetriableError',
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(await counter(app, 'fulfilment_retries_total', { operation: 'consume' })).toBeGreaterThanOrEqual(1);
    await waitFor('everything committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
    await app.stop();
  });
});

/** What one order of the rebalance stream is, and what it must end as. */
interface OrderPlan {
  orderId: string;
  events: OrderEvent[];
  kind: 'ships' | 'cancelled-first' | 'cancelled-after';
  maxVersion: number;
  /** Event ids the store must have claimed (every event that is not stale). */
  mustApply: string[];
}

/** 300 orders: placements, updates, cancellations after and before placement, stale re-sends; then duplicates up to 1,000 records. */
function rebalanceStream(tenant: string): {
  plans: OrderPlan[];
  records: { key?: string; partition?: number; value: OrderEvent }[];
} {
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const plans: OrderPlan[] = [];
  for (let i = 0; i < 300; i += 1) {
    const orderId = `r-${String(i).padStart(3, '0')}`;
    const lines = [{ sku: `SKU-${i % 5}`, quantity: 1 }];
    if (i % 10 === 1) {
      // The cancellation is published before the placement: the placement must be recorded cancelled, never shipped.
      const cancel = events.cancelled(tenant, orderId, { orderVersion: 5 });
      const placed = events.placed(tenant, orderId, { data: { customerId: 'c', lines } });
      plans.push({
        orderId,
        events: [cancel, placed],
        kind: 'cancelled-first',
        maxVersion: 5,
        mustApply: [cancel.eventId, placed.eventId],
      });
      continue;
    }
    const evs: OrderEvent[] = [events.placed(tenant, orderId, { data: { customerId: 'c', lines } })];
    if (i % 3 === 0)
      evs.push(
        events.placed(tenant, orderId, {
          orderVersion: 2,
          data: { customerId: 'c', lines: [{ sku: `SKU-${i % 5}`, quantity: 2 }] },
        }),
      );
    if (i % 5 === 0) evs.push(events.cancelled(tenant, orderId, { orderVersion: 3 }));
    const mustApply = evs.map((e) => e.eventId);
    const maxVersion = Math.max(...evs.map((e) => e.orderVersion));
    // A stale re-send after a newer version: version 1 under a new event id, with lines that must never be stored.
    if (i % 7 === 0 && maxVersion > 1)
      evs.push(
        events.placed(tenant, orderId, {
          orderVersion: 1,
          data: { customerId: 'stale', lines: [{ sku: 'STALE', quantity: 99 }] },
        }),
      );
    plans.push({ orderId, events: evs, kind: i % 5 === 0 ? 'cancelled-after' : 'ships', maxVersion, mustApply });
  }
  // Interleave: groups of 20 orders, first events of the group, then second events, and so on. Each order's
  // events go to one partition, chosen here rather than by the producer's (possibly stale) partition count.
  const records: { key?: string; partition?: number; value: OrderEvent }[] = [];
  for (let g = 0; g < plans.length; g += 20) {
    const group = plans.slice(g, g + 20);
    for (let k = 0; k < 4; k += 1)
      for (const p of group)
        if (p.events[k]) records.push({ key: p.orderId, partition: partitionOf(p.orderId, 6), value: p.events[k]! });
  }
  // Exact duplicates (same event id) of earlier records, later in the same partition; those of single-event
  // orders half the time on another partition too (a producer not keying by order), where arriving early is harmless.
  const single = new Set(plans.filter((p) => p.events.length === 1).map((p) => p.orderId));
  while (records.length < 1000) {
    const at = 1 + Math.floor(random() * records.length);
    const original = records[Math.floor(random() * at)]!;
    const elsewhere = single.has(original.value.orderId) && random() < 0.5;
    records.splice(at, 0, {
      key: original.key,
      partition: elsewhere ? Math.floor(random() * 6) : original.partition,
      value: original.value,
    });
  }
  return { plans, records };
}

/** A stable string hash of `key` into [0, n): each order's events always go to one partition. */
function partitionOf(key: string, n: number): number {
  let h = 0;
  for (let i = 0; i < key.length; i += 1) h = (h * 31 + key.charCodeAt(i)) | 0;
  return Math.abs(h) % n;
}

interface Child {
  proc: ChildProcess;
  output(): string;
  delivered(): number;
  exited: Promise<NodeJS.Signals | number | null>;
}

function spawnBridge(env: Record<string, string>): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'test/support/bridge-process.ts'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let delivered = 0;
  proc.stdout!.on('data', (d: Buffer) => {
    const text = d.toString();
    out += text.includes('ready') || text.includes('stopped') ? text : '';
    delivered += text
      .split('\n')
      .filter((l) => l.startsWith('delivered '))
      .reduce((n, l) => n + l.split(' ').length - 1, 0);
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    proc.on('exit', (code, signal) => resolve(signal ?? code)),
  );
  return { proc, output: () => out, delivered: () => delivered, exited };
}

describe('bridges joining, leaving and crashing during a 1,000-record stream', () => {
  let s: Scenario;
  let db: Db;
  const children: Child[] = [];
  beforeAll(async () => {
    s = await scenario('rebalance', { BRIDGE_SESSION_TIMEOUT_MS: '6000', WORKER_SHUTDOWN_GRACE_MS: '5000' });
    // Six partitions, so each of up to four members holds at least one.
    await s.admin.createPartitions({ topicPartitions: [{ topic: s.config.ORDERS_TOPIC, count: 6 }] });
    db = createDb(runtimeConnection(s.config), 2);
  });
  afterAll(async () => {
    for (const c of children) c.proc.kill('SIGKILL');
    await db?.end();
    await s?.close();
  });

  it('keeps every invariant: one row per order, cancellations win, no stale overwrite, nothing lost, nothing twice', async () => {
    const t0 = Date.now();
    const timeline: string[] = [];
    const mark = (what: string) => timeline.push(`${((Date.now() - t0) / 1000).toFixed(1)}s ${what}`);
    const clock = { seq: 0 };
    const worker = await s.startInstance({ roles: { worker: true, bridge: false } });
    const watched: ReturnType<typeof watchBridge>[] = [];
    const bridge = () =>
      s.startInstance({ roles: { worker: false, bridge: true }, onBridge: (b) => watched.push(watchBridge(b, clock)) });
    const b1 = await bridge();
    const tenant = s.tenant();
    const { plans, records } = rebalanceStream(tenant);

    // Offsets the group has committed must never go back: sampled all along.
    const regressions: string[] = [];
    const last = new Map<number, bigint>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const now = await committedOffsets(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC).catch(
          () => new Map<number, bigint>(),
        );
        for (const [p, o] of now) {
          if (o < (last.get(p) ?? -1n)) regressions.push(`partition ${p}: ${last.get(p)} → ${o}`);
          if (o >= 0n) last.set(p, o);
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    })();

    // The child processes start first (a few seconds each), so they are members while the stream flows.
    const c1 = spawnBridge(s.env);
    const c2 = spawnBridge(s.env);
    children.push(c1, c2);
    await waitFor(
      'both child bridges to start',
      () => c1.output().includes('ready') && c2.output().includes('ready'),
      90_000,
    );
    mark('b1, c1 and c2 (child processes) consuming');
    // Each membership change happens while records are still to come: the stream holds at its step's record count until
    // the step is done (on a loaded machine an unheld stream can be over before a step, leaving a member nothing to deliver).
    const step = {
      b2Joined: Promise.withResolvers<void>(),
      c1Stopped: Promise.withResolvers<void>(),
      c2Killed: Promise.withResolvers<void>(),
      b3Joined: Promise.withResolvers<void>(),
    };
    const stream = new PacedProducer((chunk) => s.produce(chunk), records, {
      chunk: 20,
      paceMs: 300,
      holds: [
        { at: 100, until: step.b2Joined.promise },
        { at: 400, until: step.c1Stopped.promise },
        { at: 650, until: step.c2Killed.promise },
        { at: 800, until: step.b3Joined.promise },
      ],
    });
    mark('stream started');
    await waitFor('100 records produced', () => stream.produced >= 100);
    const b2 = await bridge();
    step.b2Joined.resolve();
    mark('b2 joined');
    await waitFor(
      '400 records produced and c1 delivering',
      () => stream.produced >= 400 && c1.delivered() >= 5,
      90_000,
    );
    c1.proc.kill('SIGTERM');
    expect(await c1.exited).toBe(0);
    step.c1Stopped.resolve();
    mark(
      `c1 stopped by SIGTERM after ${c1.delivered()} deliveries (${/stopped (\d+)/.exec(c1.output())?.[1]} ms to settle, commit and leave)`,
    );
    const before = c2.delivered();
    await waitFor('c2 to deliver some records', () => c2.delivered() >= before + 5, 90_000);
    c2.proc.kill('SIGKILL');
    expect(await c2.exited).toBe('SIGKILL');
    step.c2Killed.resolve();
    mark(`c2 killed with SIGKILL after ${c2.delivered()} deliveries`);
    await waitFor('650 records produced', () => stream.produced >= 650, 90_000);
    await b1.stop();
    mark('b1 stopped');
    await waitFor('800 records produced', () => stream.produced >= 800, 90_000);
    const b3 = await bridge();
    step.b3Joined.resolve();
    mark('b3 joined');
    await stream.done;
    mark('stream done');
    await waitFor(
      'the group to commit the whole stream',
      () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
      120_000,
    );
    mark('group caught up');

    // Settled: every order's row as its events say. While not, the probe names the orders still open (and their rows),
    // so a deadline passed on a loaded machine says what was still working.
    const settled = async () => {
      const rows = new Map((await tenantRows(db, tenant)).map((r) => [r.order_id, r]));
      const open = plans.filter((p) => {
        const r = rows.get(p.orderId);
        if (!r || r.order_version !== p.maxVersion) return true;
        if (p.kind === 'cancelled-first') return !(r.status === 'cancelled' && r.placed_at !== null);
        if (p.kind === 'cancelled-after')
          return !(r.status === 'cancelled' || (r.status === 'shipped' && r.cancel_refused_at !== null));
        return r.status !== 'shipped';
      });
      if (open.length === 0) return true;
      const shown = open.slice(0, 5).map((p) => {
        const r = rows.get(p.orderId);
        return `${p.orderId} (${p.kind}, v${p.maxVersion}): ${r ? `${r.status} v${r.order_version}` : 'no row'}`;
      });
      throw new Error(`${open.length} of ${plans.length} orders not settled yet, e.g. ${shown.join('; ')}`);
    };
    // The work is bounded by the stream (1,000 records), not by a time: the deadline only bounds a loaded machine.
    await waitFor('every order to settle', settled, 300_000, 500);
    mark('every order settled');
    sampling = false;
    await sampler;

    // 1. Exactly one row per placed order, and no other rows.
    const rows = await tenantRows(db, tenant);
    expect(rows).toHaveLength(plans.length);
    const byOrder = new Map(rows.map((r) => [r.order_id, r]));
    // 2. An order whose cancellation came first never shipped; 3. no stale event changed anything.
    for (const p of plans) {
      const r = byOrder.get(p.orderId)!;
      if (p.kind === 'cancelled-first')
        expect(r, p.orderId).toMatchObject({ status: 'cancelled', cancelled_before_placement: true, shipped_at: null });
      expect(JSON.stringify(r.lines), p.orderId).not.toContain('STALE');
      expect(r.customer_id, p.orderId).not.toBe('stale');
      expect(r.order_version, p.orderId).toBe(p.maxVersion);
    }
    // 4. Nothing lost: every non-stale event was claimed by the store; nothing was dead-lettered.
    const claimed = new Set(
      await inTenantTransaction(db, tenant, async (tx) =>
        (
          await tx.query<{ event_id: string }>('SELECT event_id FROM processed_events WHERE consumer = $1', [
            CONSUMER_NAME,
          ])
        ).rows.map((r) => r.event_id),
      ),
    );
    const unclaimed = plans.flatMap((p) =>
      p.mustApply
        .filter((id) => !claimed.has(id))
        .map((id) => `${p.orderId} (${p.kind}) event ${p.events.findIndex((e) => e.eventId === id)}: ${id}`),
    );
    if (unclaimed.length) {
      for (const u of unclaimed) {
        const orderId = u.split(' ')[0]!;
        const view = await worker.client.workflow
          .getHandle(`order/${tenant}/${orderId}`)
          .query('status')
          .catch((e: unknown) => String(e));
        process.stdout.write(
          `UNCLAIMED ${u}\n  row ${JSON.stringify(byOrder.get(orderId))}\n  view ${JSON.stringify(view)}\n`,
        );
      }
    }
    expect(unclaimed).toEqual([]);
    expect(await recordsOn(s.admin, s.config.DLQ_TOPIC)).toBe(0);
    // One shipment per shipped order, none for a cancelled one.
    const dispatched = new Map<string, number>();
    for (const sh of await s.shipments(tenant))
      if (sh.status === 'dispatched') dispatched.set(sh.orderId, (dispatched.get(sh.orderId) ?? 0) + 1);
    for (const r of rows) expect(dispatched.get(r.order_id) ?? 0, r.order_id).toBe(r.status === 'shipped' ? 1 : 0);
    // Committed offsets never went back, and no in-process bridge committed a partition it did not hold.
    expect(regressions).toEqual([]);
    for (const w of watched) {
      for (const c of w.commits) {
        const assignment = w.joins.filter((j) => j.seq < c.seq).at(-1);
        expect(assignment?.partitions ?? [], `commit of partition ${c.partition} at ${c.offset}`).toContain(
          c.partition,
        );
      }
    }

    const duplicates = (
      await Promise.all(
        [b1, b2, b3].map((b) => counter(b, 'fulfilment_bridge_records_total', { outcome: 'duplicate' })),
      )
    ).reduce((a, b) => a + b, 0);
    const drainStart = Date.now();
    await worker.stop();
    mark(`worker drained in ${Date.now() - drainStart} ms (grace ${s.config.WORKER_SHUTDOWN_GRACE_MS} ms)`);
    process.stdout.write(
      `\n[rebalance] ${records.length} records, ${plans.length} orders, ${rows.filter((r) => r.status === 'shipped').length} shipped, ` +
        `${rows.filter((r) => r.status === 'cancelled').length} cancelled, ${duplicates} duplicates suppressed by in-process bridges\n  ${timeline.join('\n  ')}\n`,
    );
    await Promise.all([b2.stop(), b3.stop()]);
  }, 600_000); // bounded by its 1,000 records and five bridges' restarts, not by time: a loaded machine needs longer
});
