/**
 * Integration-test harness: each test gets its own topics, consumer group, task queue, tenants and an
 * in-process warehouse, on the shared real stack (Kafka, Temporal dev server, PostgreSQL), so test files
 * run in parallel without seeing each other. Waiting is always for a condition, never a fixed sleep.
 */
import { randomUUID } from 'node:crypto';
import { Partitioners, type Admin, type IHeaders, type Kafka, type Producer } from 'kafkajs';
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import { startApp, type App, type AppOptions } from '../../src/app.js';
import { createLateEventRecorder } from '../../src/roles/bridge/late-events.js';
import type { LateEventRecorder } from '../../src/roles/bridge/order-starter.js';
import { createKafka } from '../../src/adapters/kafka/client.js';
import { createConsumerSupervisor } from '../../src/adapters/kafka/consumer-supervisor.js';
import { DelaySequence } from '../../src/roles/bridge/backoff-gate.js';
import { createTopicsWithLeaders } from '../../src/adapters/kafka/admin.js';
import { loadConfig, type Config } from '../../src/base/config.js';
import { metricValue } from '../../src/base/metrics.js';
import { createLogger } from '../../src/base/log.js';
import { inTenantTransaction } from '../../src/adapters/store/db.js';
import { readFulfilment } from '../../src/adapters/store/fulfilments.js';
import { startWarehouse, type Shipment, type WarehouseServer } from '../../tools/warehouse/server.js';
import { provisionPostgres } from '../../src/roles/provision/schema-and-grants.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';

export const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
Runtime.install({
  logger: new DefaultLogger((process.env.TEST_TEMPORAL_LOG_LEVEL as LogLevel | undefined) ?? 'ERROR'),
});

import { waitFor } from './promises.js';
import type { FulfilmentRow } from '../../src/vocabulary/order.js';

export { waitFor };

export function uniqueSuffix(name: string): string {
  return `${name}-${Date.now().toString(36)}-${randomUUID().slice(0, 6)}`;
}

export interface Scenario {
  suffix: string;
  /** The environment an instance of this scenario runs with (for child processes). */
  env: Record<string, string>;
  config: Config;
  kafka: Kafka;
  admin: Admin;
  producer: Producer;
  warehouse: WarehouseServer;
  /** Fresh tenant ids private to this scenario. */
  tenant(label?: string): string;
  /** Starts one service instance (worker + bridge unless `roles` says otherwise). */
  startInstance(opts?: Partial<AppOptions>, env?: Record<string, string>): Promise<App>;
  produce(
    messages: { value: Buffer | string | object | null; key?: string; partition?: number; headers?: IHeaders }[],
    topic?: string,
  ): Promise<void>;
  row(tenantId: string, orderId: string): Promise<FulfilmentRow | undefined>;
  shipments(tenantId: string): Promise<Shipment[]>;
  /** The late path a bridge of this scenario takes (src/roles/bridge/late-events.ts), for tests that start orders directly. */
  late: LateEventRecorder;
  readTopic(topic: string, count: number): Promise<TopicRecord[]>;
  /** Reads `topic` from the start into `records` until closed: one consumer for a whole file, not one per check. */
  watchTopic(topic: string): Promise<TopicWatch>;
  close(): Promise<void>;
}

export interface TopicRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, string>;
  partition: number;
  offset: string;
}

export interface TopicWatch {
  /** Records read so far, in arrival order. */
  records: TopicRecord[];
  close(): Promise<void>;
}

export async function scenario(name: string, env: Record<string, string> = {}): Promise<Scenario> {
  const suffix = uniqueSuffix(name);
  const warehouse = await startWarehouse({ port: 0 });
  const baseEnv = {
    ...process.env,
    ORDERS_TOPIC: `orders.it.${suffix}`,
    DLQ_TOPIC: `dlq.it.${suffix}`,
    // The scenario's own status topic: its workers' rows go there, published by its own relays only.
    STATUS_TOPIC: `status.it.${suffix}`,
    CONSUMER_GROUP: `fulfilment-${suffix}`,
    TEMPORAL_TASK_QUEUE: `orders-${suffix}`,
    WAREHOUSE_URL: warehouse.url,
    METRICS_PORT: '0',
    // Everything else the service's own defaults (docs/testing.md "The defaults"): runs close the moment the order
    // settles (ORDER_LINGER_SECONDS 0), the bridge starts orders eagerly beside its worker, the quick shipment first.
    // Test workers leave the deployment's ledger-retention schedule alone (ledger-retention.int.test.ts makes its own).
    LEDGER_PRUNE_INTERVAL: '0',
    STATUS_OUTBOX_PRUNE_INTERVAL: '0',
    ...env,
  };
  const config = loadConfig(baseEnv);
  // The schema and the runtime role's grants, as `fulfilment provision --only postgres` makes them (idempotent).
  await provisionPostgres(config);
  const kafka = createKafka(config, logger, { clientId: `it-${suffix}` });
  const admin = kafka.admin();
  await admin.connect();
  // Waits out a broker that has just restarted (an outage test's previous case) not knowing the new topics yet.
  // Replicas: the broker's default (-1), as provisioning makes them: 1 on the single broker, 3 on the cluster.
  await createTopicsWithLeaders(admin, [
    { topic: config.ORDERS_TOPIC, numPartitions: 3, replicationFactor: -1 },
    { topic: config.DLQ_TOPIC, numPartitions: 1, replicationFactor: -1 },
    { topic: config.STATUS_TOPIC, numPartitions: 3, replicationFactor: -1 },
  ]);
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  const apps: App[] = [];
  const probeDb = (await import('../../src/adapters/store/db.js')).createDb(runtimeConnection(config), 2);
  let tenants = 0;

  async function watchTopic(topic: string): Promise<TopicWatch> {
    const records: TopicRecord[] = [];
    // A record read again (a consumer restarted before its commit) is the same record: kept once.
    const seen = new Set<string>();
    const stopping = new AbortController();
    const say = (line: string) => process.stdout.write(`[watch ${topic}] ${line}\n`);
    // The bridge's own consumer supervisor: a consumer that crashes through an outage test's broker restart is
    // restarted (by kafkajs, or by the supervisor when kafkajs gives up), so the watch sees the whole topic.
    const member = createConsumerSupervisor({
      kafka,
      topic,
      groupId: `watch-${uniqueSuffix('w')}`,
      sessionTimeoutMs: 30_000,
      maxBytesPerPartition: 1 << 20,
      partitionsConcurrently: 1,
      restartDelays: new DelaySequence({ initialDelayMs: 200, maxDelayMs: 2_000 }),
      stopping: stopping.signal,
      events: {
        joined: () => undefined,
        committed: () => undefined,
        crashed: () => undefined,
        restarting: (err, delayMs) => say(`consumer failed (${err.message}); restarting it in ${delayMs} ms`),
        restartFailed: (err) => say(`restart failed (${err.message})`),
        gaveUp: (err) => say(`gave up: ${err.message}`),
      },
      async onBatch({ partition, records: batch, resolve, commit }) {
        for (const r of batch) {
          const at = `${partition}/${r.offset}`;
          if (seen.has(at)) continue;
          seen.add(at);
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(r.headers ?? {}))
            if (v !== undefined) headers[k] = String(Array.isArray(v) ? v[0] : v);
          records.push({ key: r.key, value: r.value, headers, partition, offset: r.offset });
        }
        const last = batch.at(-1);
        if (!last) return;
        const next = (BigInt(last.offset) + 1n).toString();
        resolve(next);
        // A commit refused (a rebalance, a broker restarting) only means the next member reads some records again.
        await commit(next).catch(() => undefined);
      },
    });
    await member.start();
    return {
      records,
      close: async () => {
        stopping.abort();
        await member.disconnect();
      },
    };
  }

  return {
    suffix,
    env: Object.fromEntries(Object.entries(baseEnv).filter((e): e is [string, string] => e[1] !== undefined)),
    config,
    kafka,
    admin,
    producer,
    warehouse,
    tenant: (label = 't') => `${label}-${suffix}-${(tenants += 1)}`.slice(0, 64),
    async startInstance(opts = {}, instanceEnv = {}) {
      const app = await startApp(loadConfig({ ...baseEnv, ...instanceEnv }), {
        logger,
        serveMetrics: false,
        bridgeRetry: { initialDelayMs: 100, maxDelayMs: 2000 },
        ...opts,
      });
      apps.push(app);
      return app;
    },
    async produce(messages, topic = config.ORDERS_TOPIC) {
      await producer.send({
        topic,
        acks: -1,
        messages: messages.map((m) => ({
          key: m.key,
          partition: m.partition,
          headers: m.headers,
          value:
            m.value === null || Buffer.isBuffer(m.value) || typeof m.value === 'string'
              ? m.value
              : JSON.stringify(m.value),
        })),
      });
    },
    late: createLateEventRecorder({ db: probeDb, statusTopic: config.STATUS_TOPIC }),
    row: (tenantId, orderId) => inTenantTransaction(probeDb, tenantId, (tx) => readFulfilment(tx, tenantId, orderId)),
    async shipments(tenantId) {
      const res = await fetch(`${warehouse.url}/shipments?tenantId=${encodeURIComponent(tenantId)}`);
      return (await res.json()) as Shipment[];
    },
    watchTopic,
    async readTopic(topic, count) {
      const watch = await watchTopic(topic);
      try {
        await waitFor(`${count} records on ${topic}`, () => watch.records.length >= count, 60_000);
      } finally {
        await watch.close();
      }
      return watch.records;
    },
    async close() {
      for (const app of apps.reverse()) await app.stop();
      await producer.disconnect();
      await admin
        .deleteTopics({ topics: [config.ORDERS_TOPIC, config.DLQ_TOPIC, config.STATUS_TOPIC] })
        .catch(() => undefined);
      await admin.disconnect();
      await probeDb.end();
      await warehouse.close();
    },
  };
}

export { events } from './events.js';

/** Current value of a counter in an instance's registry for the given labels (0 when never incremented). */
export function counter(app: App, name: string, labels: Record<string, string> = {}): Promise<number> {
  return metricValue(app.metrics.registry, name, labels);
}

/** True once the group's committed offsets reach the end of every partition of `topic`. */
export async function caughtUp(admin: Admin, groupId: string, topic: string): Promise<boolean> {
  const [ends, committed] = await Promise.all([
    admin.fetchTopicOffsets(topic),
    admin.fetchOffsets({ groupId, topics: [topic] }),
  ]);
  const done = new Map(committed[0]?.partitions.map((p) => [p.partition, BigInt(p.offset)]) ?? []);
  return ends.every((e) => BigInt(e.high) === 0n || (done.get(e.partition) ?? -1n) >= BigInt(e.high));
}

// ---- Helpers for stream, outage and rebalance tests (test/outage, rebalance.int.test.ts) ----

/** Committed offset per partition of `topic` for `groupId`; -1 where nothing was committed. */
export async function committedOffsets(admin: Admin, groupId: string, topic: string): Promise<Map<number, bigint>> {
  const [res] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map(res?.partitions.map((p) => [p.partition, BigInt(p.offset)]) ?? []);
}

/** End offset (high watermark) per partition of `topic`. */
export async function endOffsets(admin: Admin, topic: string): Promise<Map<number, bigint>> {
  return new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)]));
}

/** True once the group's committed offsets reach `target` on every partition (a snapshot of endOffsets). */
export async function reached(
  admin: Admin,
  groupId: string,
  topic: string,
  target: Map<number, bigint>,
): Promise<boolean> {
  const done = await committedOffsets(admin, groupId, topic);
  return [...target].every(([partition, end]) => end === 0n || (done.get(partition) ?? -1n) >= end);
}

/** Number of records ever written to `topic` (sum of its partitions' end offsets). */
export async function recordsOn(admin: Admin, topic: string): Promise<number> {
  return [...(await endOffsets(admin, topic)).values()].reduce((sum, high) => sum + Number(high), 0);
}

/** Every fulfilments row of `tenantId`, read tenant-scoped as the service reads them. */
export async function tenantRows(
  db: import('../../src/adapters/store/db.js').Db,
  tenantId: string,
): Promise<FulfilmentRow[]> {
  return inTenantTransaction(
    db,
    tenantId,
    async (tx) => (await tx.query<FulfilmentRow>('SELECT * FROM fulfilments WHERE tenant_id = $1', [tenantId])).rows,
  );
}

/**
 * Paces a stream of records onto a topic in chunks; a chunk that cannot be written (Kafka down) is tried again until it
 * lands. `holds` stop the stream at a record count until a step of the test is done, so the step happens while records
 * are still to come (on a loaded machine the stream would otherwise be over before it).
 */
export class PacedProducer {
  /** Records acknowledged so far, in stream order. */
  produced = 0;
  /** Sends that failed and were tried again. */
  failedSends = 0;
  readonly done: Promise<void>;
  private stopped = false;

  constructor(
    send: (chunk: { value: object; key?: string; partition?: number }[]) => Promise<void>,
    records: { value: object; key?: string; partition?: number }[],
    opts: { chunk: number; paceMs: number; holds?: { at: number; until: Promise<unknown> }[] },
  ) {
    this.done = (async () => {
      for (let i = 0; i < records.length && !this.stopped; i += opts.chunk) {
        for (const hold of opts.holds ?? []) if (i >= hold.at) await hold.until;
        const chunk = records.slice(i, i + opts.chunk);
        for (;;) {
          try {
            await send(chunk);
            break;
          } catch {
            this.failedSends += 1;
            if (this.stopped) return;
            await new Promise((r) => setTimeout(r, 500));
          }
        }
        this.produced += chunk.length;
        await new Promise((r) => setTimeout(r, opts.paceMs));
      }
    })();
  }

  stop(): Promise<void> {
    this.stopped = true;
    return this.done;
  }
}
