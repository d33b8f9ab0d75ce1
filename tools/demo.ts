/**
 * `npm run demo`: brings the stack up if needed, runs the worker and the bridge on topics, a consumer group and a task
 * queue of the demo's own, publishes a short story of everything a consumer meets, waits until it has settled, and
 * prints what happened to each order — from PostgreSQL, the warehouse, the dead-letter topic, the workflows, the
 * status events the service published (STATUS_TOPIC, a topic of the demo's own) and the counters — with Web UI links.
 */
import { randomUUID } from 'node:crypto';
import { Partitioners } from 'kafkajs';
import { startApp, type App } from '../src/app.js';
import { createKafka } from '../src/adapters/kafka/client.js';
import { loadConfig, type Config } from '../src/base/config.js';
import { createLogger } from '../src/base/log.js';
import { metricValue } from '../src/base/metrics.js';
import { stackDown, stackStatus, stackUp, type ServiceName } from './stack/index.js';
import { inTenantTransaction } from '../src/adapters/store/db.js';
import { readFulfilment } from '../src/adapters/store/fulfilments.js';
import type { StatusEvent } from '../src/adapters/status-events/event.js';
import { readStatusEvents } from '../src/adapters/status-events/outbox.js';
import { describeReport, provision } from '../src/roles/provision/index.js';
import { installTemporalRuntime } from '../src/domain/temporal.js';
import { sleep } from '../src/base/sleep.js';
import { orderStatusQuery, orderWorkflowId, type OrderView } from '../workflows/api.js';

const run = Date.now().toString(36);
const acme = `demo-${run}-acme`;
const globex = `demo-${run}-globex`;

interface Step {
  story: string;
  tenant: string;
  order: string;
  /** What must be true before the demo calls this story settled. */
  settled: (row: { status: string; placed_at: Date | null } | undefined, view: OrderView | undefined) => boolean;
}

const event = (type: string, tenantId: string, orderId: string, orderVersion: number, data: object) => ({
  eventId: `${type.split('.')[1]}-${randomUUID()}`,
  type,
  schemaVersion: 1,
  occurredAt: new Date().toISOString(),
  tenantId,
  orderId,
  orderVersion,
  correlationId: `demo-${run}-${orderId}`,
  data,
});
const placed = (t: string, o: string, v = 1) =>
  event('orders.OrderPlaced', t, o, v, { customerId: 'cust-42', lines: [{ sku: 'MUG-01', quantity: 2 }] });
const cancelled = (t: string, o: string, v: number) =>
  event('orders.OrderCancelled', t, o, v, { reason: 'changed my mind' });

async function main(): Promise<void> {
  // Topics, group and task queue of its own: a service running beside the demo neither takes its records nor gives
  // it others, so its table and counters are whole. Removed at the end.
  const config = loadConfig({
    ...process.env,
    ORDERS_TOPIC: `orders.demo.${run}`,
    DLQ_TOPIC: `orders.demo.${run}.dlq`,
    STATUS_TOPIC: `fulfilment.status.demo.${run}`,
    CONSUMER_GROUP: `fulfilment-demo-${run}`,
    TEMPORAL_TASK_QUEUE: `demo-${run}`,
    LEDGER_PRUNE_INTERVAL: '0',
    STATUS_OUTBOX_PRUNE_INTERVAL: '0',
    // Not the production default (0): runs stay open a little after they settle, so that the late events of the story
    // (a duplicate, a stale version) reach the run and show in its counts (the table's applied/dup/stale). At 0 they
    // meet a closed run and the bridge records them through the store instead, with the same outcome
    // (docs/how-it-works.md, "Closing, and events that come late"). The demo waits for the runs to close before it stops.
    ORDER_LINGER_SECONDS: '5',
  });
  const logger = createLogger(process.env.LOG_LEVEL ?? 'warn');
  // The demo has no signal handling of its own: Ctrl-C stops its worker through the SDK's.
  await installTemporalRuntime(logger, 'WARN', true);
  const before = await stackStatus();
  const after = await stackUp();
  const startedHere = (Object.keys(after.services) as ServiceName[]).filter(
    (n) => before.services[n].state !== 'running' && after.services[n].state === 'running',
  );
  // What the service never creates itself: `fulfilment provision` (idempotent).
  for (const line of describeReport(await provision(config, logger), config)) process.stdout.write(`${line}\n`);
  const app = await startApp({ ...config, METRICS_PORT: 0 }, { logger, serveMetrics: false });
  try {
    await tell(config, app);
  } finally {
    await app.stop();
    const admin = createKafka(config, createLogger('silent'), { clientId: `demo-${run}` }).admin();
    await admin.connect();
    await admin
      .deleteTopics({ topics: [config.ORDERS_TOPIC, config.DLQ_TOPIC, config.STATUS_TOPIC] })
      .catch(() => undefined);
    await admin.deleteGroups([config.CONSUMER_GROUP]).catch(() => undefined);
    await admin.disconnect();
    if (startedHere.length > 0) await stackDown({ services: startedHere });
  }
}

async function tell(config: Config, app: App): Promise<void> {
  const kafka = createKafka(config, createLogger('silent'), { clientId: `demo-${run}` });
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const send = (messages: { value: string | object; key?: string; partition?: number }[]) =>
    producer.send({
      topic: config.ORDERS_TOPIC,
      acks: -1,
      messages: messages.map((m) => ({ ...m, value: typeof m.value === 'string' ? m.value : JSON.stringify(m.value) })),
    });

  const duplicate = placed(acme, 'o-duplicate');
  const poisonKey = `demo-${run}-poison`;
  const steps: Step[] = [
    { story: 'normal order', tenant: acme, order: 'o-normal', settled: (r) => r?.status === 'shipped' },
    {
      story: 'delivered three times',
      tenant: acme,
      order: 'o-duplicate',
      settled: (r, v) => r?.status === 'shipped' && (v?.duplicatesSuppressed ?? 0) >= 1,
    },
    {
      story: 'cancel before placement',
      tenant: acme,
      order: 'o-cancel-first',
      settled: (r) => r?.status === 'cancelled' && r.placed_at !== null,
    },
    {
      story: 'v3, then stale v2',
      tenant: acme,
      order: 'o-stale',
      settled: (r, v) => r?.status === 'shipped' && (v?.staleIgnored ?? 0) >= 1,
    },
    { story: 'same order id, tenant acme', tenant: acme, order: 'o-shared', settled: (r) => r?.status === 'shipped' },
    {
      story: 'same order id, tenant globex',
      tenant: globex,
      order: 'o-shared',
      settled: (r) => r?.status === 'cancelled',
    },
  ];

  console.log(`publishing the story to ${config.ORDERS_TOPIC} (run ${run}) ...`);
  await send([{ key: `${acme}/o-normal`, value: placed(acme, 'o-normal') }]);
  // The same event three times, on three partitions (as a producer retry or a redelivery would).
  await send([0, 1, 2].map((partition) => ({ partition, value: duplicate })));
  // The cancellation lands first, on another partition than its placement.
  await send([{ partition: 0, value: cancelled(acme, 'o-cancel-first', 2) }]);
  await waitFor(() => view(app, acme, 'o-cancel-first').then((v) => v?.status === 'awaiting-placement'));
  await send([{ partition: 3, value: placed(acme, 'o-cancel-first', 1) }]);
  // A newer version first, then an older one with a fresh event id.
  await send([{ key: `${acme}/o-stale`, value: placed(acme, 'o-stale', 3) }]);
  await waitFor(() => row(app, acme, 'o-stale').then((r) => r?.status === 'shipped'));
  await send([{ key: `${acme}/o-stale`, value: cancelled(acme, 'o-stale', 2) }]);
  // A type this consumer does not know, and a poison record.
  await send([{ key: `${acme}/o-refund`, value: event('orders.OrderRefunded', acme, 'o-refund', 4, {}) }]);
  await send([{ key: poisonKey, value: '{"eventId": "broken' }]);
  // One order id, two tenants: acme's ships, globex's is cancelled — neither touches the other.
  await send([
    { key: `${acme}/o-shared`, value: placed(acme, 'o-shared') },
    { key: `${globex}/o-shared`, value: cancelled(globex, 'o-shared', 2) },
  ]);

  console.log('waiting for it to settle ...');
  for (const s of steps)
    await waitFor(async () => s.settled(await row(app, s.tenant, s.order), await view(app, s.tenant, s.order)));
  const dlq = await findDeadLetter(kafka, config.DLQ_TOPIC, poisonKey);
  await waitFor(async () => (await count(app, 'fulfilment_unknown_event_types_total')) >= 1);
  await producer.disconnect();

  const table: Record<string, string | number>[] = [];
  for (const s of steps) {
    const r = await row(app, s.tenant, s.order);
    const v = await view(app, s.tenant, s.order);
    const shipments = (await (await fetch(`${config.WAREHOUSE_URL}/shipments?tenantId=${s.tenant}`)).json()) as {
      orderId: string;
      status: string;
    }[];
    table.push({
      story: s.story,
      order: `${s.tenant.replace(`demo-${run}-`, '')}/${s.order}`,
      'db status': r?.status ?? '-',
      version: r?.order_version ?? '-',
      shipments: shipments.filter((x) => x.orderId === s.order && x.status === 'dispatched').length,
      'applied/dup/stale': v ? `${v.appliedEvents}/${v.duplicatesSuppressed}/${v.staleIgnored}` : '-',
    });
  }
  table.push({
    story: 'unknown event type',
    order: 'acme/o-refund',
    'db status': (await row(app, acme, 'o-refund'))?.status ?? 'no row',
    version: '-',
    shipments: 0,
    'applied/dup/stale': 'ignored',
  });
  table.push({
    story: 'poison message',
    order: '-',
    'db status': dlq ? `DLQ ${dlq}` : 'not found',
    version: '-',
    shipments: 0,
    'applied/dup/stale': '-',
  });
  console.table(table);

  // What other services heard: the status events the relay published from the outbox, per order in commit order.
  const published = await readStatusTopic(kafka, config.STATUS_TOPIC, await committedEventIds(app, [acme, globex]));
  console.log(`status events published to ${config.STATUS_TOPIC} (key <tenant>/<order>):`);
  console.table(
    steps.map((s) => ({
      story: s.story,
      order: `${s.tenant.replace(`demo-${run}-`, '')}/${s.order}`,
      'status events':
        published
          .filter((e) => e.tenantId === s.tenant && e.orderId === s.order)
          .map((e) => `${e.type.replace('fulfilment.', '')} (v${e.orderVersion})`)
          .join(' → ') || '-',
    })),
  );

  const counters: Record<string, number> = {};
  for (const outcome of ['accepted', 'recorded-late', 'duplicate', 'ignored', 'dead-lettered']) {
    counters[`bridge ${outcome}`] = await count(app, 'fulfilment_bridge_records_total', { outcome });
  }
  for (const outcome of ['applied', 'duplicate', 'stale', 'dead-lettered', 'refused']) {
    counters[`worker ${outcome}`] = await count(app, 'fulfilment_events_processed_total', { outcome });
  }
  counters['duplicates suppressed'] = await count(app, 'fulfilment_duplicates_suppressed_total');
  counters['unknown types'] = await count(app, 'fulfilment_unknown_event_types_total');
  console.log('counters (this process):');
  console.table(counters);
  // The settled runs linger ORDER_LINGER_SECONDS, then close: wait, so that none is left open without a worker (a
  // cancellation still awaiting its placement stays open, as it would in production).
  for (const s of steps) {
    if ((await row(app, s.tenant, s.order))?.placed_at === null) continue;
    await waitFor(
      async () =>
        (await app.client.workflow.getHandle(orderWorkflowId(s.tenant, s.order)).describe()).status.name !== 'RUNNING',
    );
  }
  console.log('Web UI:');
  for (const s of steps) {
    console.log(
      `  ${s.story.padEnd(30)} ${config.TEMPORAL_UI_URL}/namespaces/${config.TEMPORAL_NAMESPACE}/workflows/${encodeURIComponent(orderWorkflowId(s.tenant, s.order))}`,
    );
  }
}

const row = (app: App, tenant: string, order: string) =>
  inTenantTransaction(app.db!, tenant, (tx) => readFulfilment(tx, tenant, order));

async function view(app: App, tenant: string, order: string): Promise<OrderView | undefined> {
  return app.client.workflow
    .getHandle(orderWorkflowId(tenant, order))
    .query(orderStatusQuery)
    .catch(() => undefined);
}

const count = (app: App, name: string, labels: Record<string, string> = {}) =>
  metricValue(app.metrics.registry, name, labels);

/** Polls until `probe` is true; the demo gives up after two minutes. */
async function waitFor(probe: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline)
      throw new Error('the story did not settle within two minutes; see the logs (LOG_LEVEL=info)');
    await sleep(200);
  }
}

/** The ids of every status event the store committed for `tenants`, once the relay has sent them all. */
async function committedEventIds(app: App, tenants: string[]): Promise<Set<string>> {
  const rows = async () =>
    (
      await Promise.all(
        tenants.map((t) => inTenantTransaction(app.db!, t, (tx) => readStatusEvents(tx, { tenantId: t, limit: 1000 }))),
      )
    ).flat();
  await waitFor(async () => (await rows()).every((e) => e.sentAt !== null));
  return new Set((await rows()).map((e) => e.event.eventId));
}

/** Reads the status topic from the start until every id of `ids` was seen; returns the events once each, in order. */
async function readStatusTopic(
  kafka: ReturnType<typeof createKafka>,
  topic: string,
  ids: Set<string>,
): Promise<StatusEvent[]> {
  const group = `demo-status-reader-${run}`;
  const consumer = kafka.consumer({ groupId: group });
  const seen = new Map<string, StatusEvent>();
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const e = JSON.parse(message.value?.toString() ?? 'null') as StatusEvent | null;
      if (e && !seen.has(e.eventId)) seen.set(e.eventId, e);
    },
  });
  try {
    await waitFor(async () => [...ids].every((id) => seen.has(id)));
  } finally {
    await consumer.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteGroups([group]).catch(() => undefined);
    await admin.disconnect();
  }
  return [...seen.values()];
}

/** Reads the DLQ from the start with a throwaway group until the record with `key` is found; returns "partition:offset". */
async function findDeadLetter(
  kafka: ReturnType<typeof createKafka>,
  topic: string,
  key: string,
): Promise<string | undefined> {
  const consumer = kafka.consumer({ groupId: `demo-reader-${run}` });
  let found: string | undefined;
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message, partition }) => {
      if (message.key?.toString() === key)
        found = `${partition}:${message.offset} (${message.headers?.['dlq-error-class']?.toString()})`;
    },
  });
  try {
    await waitFor(async () => found !== undefined);
  } finally {
    await consumer.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteGroups([`demo-reader-${run}`]).catch(() => undefined);
    await admin.disconnect();
  }
  return found;
}

main().then(
  () => process.exit(0), // the Temporal runtime keeps the loop alive; everything was stopped above
  (err: unknown) => {
    console.error((err as Error).stack ?? String(err));
    process.exit(1);
  },
);
