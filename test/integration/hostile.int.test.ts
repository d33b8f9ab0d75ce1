/**
 * Hostile input on the real stack: each record below is handled (dead-lettered, refused, or applied as its
 * tenant's own) while canary records on every partition prove that the stream kept flowing and committing.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { MAX_UNKNOWN_TYPE_LABELS } from '../../src/base/metrics.js';
import { UNKNOWN_TYPE_LABEL_CHARS } from '../../src/roles/bridge/record-pipeline.js';
import { workflowSettings } from '../../src/domain/workflow-settings.js';
import { tenantWeights } from '../../src/base/tenants/weights.js';
import { createOrderStarter } from '../../src/roles/bridge/order-starter.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { type OrderEvent } from '../../src/vocabulary/order.js';
import { caughtUp, counter, events, scenario, waitFor, type Scenario, type TopicWatch } from '../support/harness.js';

/** Partitions of a scenario's topic (test/support/harness.ts). */
const PARTITIONS = 3;

let s: Scenario;
let app: App;
let dlq: TopicWatch;
beforeAll(async () => {
  s = await scenario('hostile', { WAREHOUSE_BREAKER_FAILURES: '3' });
  app = await s.startInstance();
  dlq = await s.watchTopic(s.config.DLQ_TOPIC);
});
afterAll(async () => {
  await dlq?.close();
  await s?.close();
});

/** Waits for the dead letter whose origin is `partition:offset` of the orders topic. */
function deadLetterOf(partition: number, offset: string) {
  return waitFor(
    `the dead letter of ${partition}:${offset}`,
    () =>
      dlq.records.find(
        (r) => r.headers['dlq-original-partition'] === String(partition) && r.headers['dlq-original-offset'] === offset,
      ),
    90_000,
    100,
  );
}

/** Produces `value` to `partition` and returns its offset. */
async function produceAt(
  partition: number,
  value: Buffer | string | object,
  headers?: Record<string, string>,
): Promise<string> {
  const [meta] = await s.producer.send({
    topic: s.config.ORDERS_TOPIC,
    acks: -1,
    messages: [
      {
        partition,
        headers,
        value: Buffer.isBuffer(value) || typeof value === 'string' ? value : JSON.stringify(value),
      },
    ],
  });
  return meta!.baseOffset!;
}

/** Canary placements behind the hostile record on every partition: each ships, and the group commits past all. */
async function canariesFlow(tenant: string, label: string): Promise<void> {
  const ids = Array.from({ length: PARTITIONS }, (_, p) => `canary-${label}-${p}`);
  await s.produce(ids.map((id, p) => ({ partition: p, key: id, value: events.placed(tenant, id) })));
  await waitFor(
    `canaries behind ${label} shipped`,
    async () => (await Promise.all(ids.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
    90_000,
    100,
  );
  await waitFor(
    `the group committed past the canaries behind ${label}`,
    () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
    90_000,
    100,
  );
}

describe('hostile records', () => {
  it('a ~1 MB record whose DLQ copy cannot fit is dead-lettered without its value (size and SHA-256 kept)', async () => {
    const tenant = s.tenant();
    // Fits the orders topic (max.message.bytes ≈ 1 MiB) but not once the dlq-* headers are added.
    const value = Buffer.from(JSON.stringify({ ...events.placed(tenant, 'huge'), padding: 'x'.repeat(1_048_000) }));
    const offset = await produceAt(1, value, { 'correlation-id': 'corr-huge' });
    await canariesFlow(tenant, 'huge');
    const dl = await deadLetterOf(1, offset);
    expect(dl.value === null || dl.value.length === 0).toBe(true);
    expect(dl.headers).toMatchObject({
      'dlq-error-class': 'MalformedEventError',
      'dlq-value-form': 'too-large',
      'dlq-value-size': String(value.length),
      'dlq-value-sha256': createHash('sha256').update(value).digest('hex'),
      'dlq-stage': 'edge',
      'correlation-id': 'corr-huge',
    });
    expect(dl.headers['dlq-error-message']).toMatch(/bytes: expected at most/);
  });

  const unstorable: [string, (tenant: string) => object | string, string][] = [
    [
      'orderVersion above the integer column',
      (t) => events.placed(t, 'v-int', { orderVersion: 2_147_483_648 }),
      'orderVersion',
    ],
    ['orderVersion beyond 2^53', (t) => events.placed(t, 'v-big', { orderVersion: 2 ** 53 + 2 }), 'orderVersion'],
    ['NUL in eventId', (t) => events.placed(t, 'nul-id', { eventId: 'evt\u0000x' }), 'eventId'],
    [
      'NUL in data.customerId',
      (t) => events.placed(t, 'nul-cust', { data: { customerId: 'c\u0000', lines: [{ sku: 's', quantity: 1 }] } }),
      'data.customerId',
    ],
    [
      'NUL in a sku',
      (t) => events.placed(t, 'nul-sku', { data: { customerId: 'c', lines: [{ sku: 's\u0000', quantity: 1 }] } }),
      'data.lines[0].sku',
    ],
    [
      'lone surrogate in a sku',
      (t) => events.placed(t, 'sur-sku', { data: { customerId: 'c', lines: [{ sku: 's\ud800', quantity: 1 }] } }),
      'data.lines[0].sku',
    ],
    [
      'NUL in shippingAddress',
      (t) =>
        events.placed(t, 'nul-addr', {
          data: { customerId: 'c', lines: [{ sku: 's', quantity: 1 }], shippingAddress: { name: 'a\u0000' } },
        }),
      'data.shippingAddress',
    ],
    [
      'lone surrogate in shippingAddress',
      (t) =>
        events.placed(t, 'sur-addr', {
          data: { customerId: 'c', lines: [{ sku: 's', quantity: 1 }], shippingAddress: { name: '\udc00' } },
        }),
      'data.shippingAddress',
    ],
    // A key a merging consumer could turn into a prototype change, anywhere in the free-form address.
    [
      'a __proto__ key in shippingAddress',
      (t) =>
        JSON.stringify(
          events.placed(t, 'proto', {
            data: {
              customerId: 'c',
              lines: [{ sku: 's', quantity: 1 }],
              shippingAddress: { PROTO: { isAdmin: true } },
            },
          }),
        ).replace('"PROTO"', '"__proto__"'),
      'data.shippingAddress.__proto__',
    ],
    [
      'a constructor key nested in shippingAddress',
      (t) =>
        events.placed(t, 'ctor', {
          data: {
            customerId: 'c',
            lines: [{ sku: 's', quantity: 1 }],
            shippingAddress: { street: { constructor: { prototype: { x: 1 } } } },
          },
        }),
      'data.shippingAddress.street.constructor',
    ],
    [
      'an offset of +25:00 in occurredAt',
      (t) => events.placed(t, 'tz', { occurredAt: '2026-11-30T12:00:00+25:00' }),
      'occurredAt',
    ],
    [
      'a header-unsafe correlationId',
      (t) => events.placed(t, 'corr', { correlationId: 'a\r\nx-injected: 1' }),
      'correlationId',
    ],
    [
      '5,000 levels of nesting',
      (t) =>
        JSON.stringify({ ...events.placed(t, 'deep'), data: 'DEEP' }).replace(
          '"DEEP"',
          `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`,
        ),
      'nests',
    ],
  ];
  for (const [name, build, field] of unstorable) {
    it(`${name}: dead-lettered at the edge, naming the field; nothing stored; the stream flows`, async () => {
      const tenant = s.tenant();
      const record = build(tenant);
      const orderId = (typeof record === 'string' ? JSON.parse(record.replace(/"data":.*$/s, '"x":0}')) : record)
        .orderId as string;
      const offset = await produceAt(0, record);
      await canariesFlow(tenant, orderId);
      const dl = await deadLetterOf(0, offset);
      expect(dl.headers['dlq-error-class']).toBe('MalformedEventError');
      expect(dl.headers['dlq-error-message']).toContain(field);
      expect(await s.row(tenant, orderId)).toBeUndefined();
    });
  }

  it('a flood of distinct, long unknown event types on every partition: ignored and committed, counted under bounded labels; the stream flows', async () => {
    const tenant = s.tenant();
    // More distinct names than the counter labels, each longer than a label keeps, with characters a label must not break on.
    const names = Array.from(
      { length: MAX_UNKNOWN_TYPE_LABELS + 10 },
      (_, i) => `orders.Flood${i}"\\{}${'x'.repeat(400)}`,
    );
    await s.produce(
      names.map((type, i) => ({
        partition: i % PARTITIONS,
        key: `${tenant}/flood-${i}`,
        value: { ...events.placed(tenant, `flood-${i}`), type },
      })),
    );
    await canariesFlow(tenant, 'flood');
    for (let i = 0; i < names.length; i += 1) expect(await s.row(tenant, `flood-${i}`)).toBeUndefined();
    expect(dlq.records.filter((r) => String(r.key ?? '').startsWith(`${tenant}/flood-`))).toEqual([]);
    const series = (await app.metrics.registry.getSingleMetric('fulfilment_unknown_event_types_total')!.get()).values;
    expect(series.length).toBeLessThanOrEqual(MAX_UNKNOWN_TYPE_LABELS + 1);
    for (const v of series) expect(String(v.labels.type).length).toBeLessThanOrEqual(UNKNOWN_TYPE_LABEL_CHARS);
    expect(series.reduce((sum, v) => sum + v.value, 0)).toBeGreaterThanOrEqual(names.length);
  });

  it('a header-unsafe correlation-id header is refused at the edge too', async () => {
    const tenant = s.tenant();
    const offset = await produceAt(
      2,
      { ...events.placed(tenant, 'corr-h'), correlationId: undefined },
      { 'correlation-id': 'caf\u00e9 \u{1F600}' },
    );
    await canariesFlow(tenant, 'corr-h');
    const dl = await deadLetterOf(2, offset);
    expect(dl.headers['dlq-error-message']).toContain('header correlation-id');
  });

  it('two tenants using the same event id: both events are applied, each as its own tenant’s', async () => {
    const [a, b] = [s.tenant('a'), s.tenant('b')];
    const eventId = `shared-${s.suffix}`;
    await s.produce([
      { partition: 0, value: events.placed(a, 'same-id', { eventId }) },
      { partition: 1, value: events.placed(b, 'same-id', { eventId }) },
    ]);
    await canariesFlow(a, 'same-id');
    await waitFor(
      'both tenants’ orders shipped',
      async () =>
        (await s.row(a, 'same-id'))?.status === 'shipped' && (await s.row(b, 'same-id'))?.status === 'shipped',
    );
    expect((await s.row(a, 'same-id'))!.last_event_id).toBe(eventId);
    expect((await s.row(b, 'same-id'))!.last_event_id).toBe(eventId);
  });
});

describe('defence behind the edge (events that reach the workflow without passing the parser)', () => {
  it('an event the store can never hold is refused after one attempt and dead-lettered with its origin; the order is not stuck', async () => {
    const tenant = s.tenant();
    const starter = createOrderStarter(app.client, s.config.TEMPORAL_TASK_QUEUE, workflowSettings(s.config), s.late, {
      weightOf: tenantWeights(s.config),
    });
    const bad = events.placed(tenant, 'unstorable', {
      orderVersion: 3_000_000_000,
      origin: { topic: s.config.ORDERS_TOPIC, partition: 2, offset: '900001', timestamp: '1796000000000' },
    }) as OrderEvent;
    expect(await starter.deliver([bad])).toBe('accepted');
    await canariesFlow(tenant, 'unstorable');
    const dl = await deadLetterOf(2, '900001');
    expect(dl.headers).toMatchObject({
      'dlq-stage': 'workflow',
      'dlq-error-class': 'UnstorableEventError',
      'dlq-value-form': 'validated-event',
      'dlq-event-id': bad.eventId,
      'dlq-tenant-id': tenant,
      'dlq-original-topic': s.config.ORDERS_TOPIC,
      'dlq-original-timestamp': '1796000000000',
      'dlq-consumer-group': s.config.CONSUMER_GROUP,
    });
    expect(dl.headers['dlq-error-message']).toMatch(/SQLSTATE 22003/);
    expect(JSON.parse(dl.value!.toString())).toMatchObject({ eventId: bad.eventId, orderVersion: 3_000_000_000 });
    // One attempt only: the activity failed non-retryably, no retry was scheduled.
    const history = await app.client.workflow.getHandle(orderWorkflowId(tenant, 'unstorable')).fetchHistory();
    const starts = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes);
    expect(starts.every((e) => (e.activityTaskStartedEventAttributes!.attempt ?? 1) === 1)).toBe(true);
    // The order's workflow goes on: a valid placement is applied and ships.
    await s.produce([{ partition: 2, value: events.placed(tenant, 'unstorable', { orderVersion: 2 }) }]);
    await waitFor(
      'the next valid event to ship the order',
      async () => (await s.row(tenant, 'unstorable'))?.status === 'shipped',
    );
  });

  it("one order's header-unsafe correlation id fails that order alone: the breaker stays closed and 30 normal orders ship", async () => {
    const tenant = s.tenant();
    const starter = createOrderStarter(app.client, s.config.TEMPORAL_TASK_QUEUE, workflowSettings(s.config), s.late, {
      weightOf: tenantWeights(s.config),
    });
    const badIds = Array.from({ length: 6 }, (_, i) => `bad-corr-${i}`);
    for (const [i, id] of badIds.entries()) {
      await starter.deliver([
        events.placed(tenant, id, {
          correlationId: ['a\r\nb', 'nul\u0000', '\u{1F600}', 'caf\u00e9', 'x\ny', 'tab\there'][i],
        }) as OrderEvent,
      ]);
    }
    const good = Array.from({ length: 30 }, (_, i) => `good-${i}`);
    await s.produce(good.map((id, i) => ({ partition: i % PARTITIONS, key: id, value: events.placed(tenant, id) })));
    await waitFor(
      'the 30 normal orders shipped',
      async () => (await Promise.all(good.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
      120_000,
      250,
    );
    await canariesFlow(tenant, 'bad-corr');
    await waitFor(
      'the bad orders held as failed',
      async () => (await Promise.all(badIds.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'failed'),
      60_000,
      250,
    );
    for (const id of badIds)
      expect((await s.row(tenant, id))!.failure_reason).toMatch(/cannot be built from this order's data/);
    expect(await counter(app, 'fulfilment_circuit_opened_total', { dependency: 'warehouse' })).toBe(0);
    expect(await counter(app, 'fulfilment_circuit_state', { dependency: 'warehouse' })).toBe(0);
    // Only the good orders and the canaries reached the warehouse.
    expect((await s.shipments(tenant)).length).toBe(30 + PARTITIONS);
  });
});
