/**
 * Schema versions on the real stack: the checked-in v2 example ships like a v1 order; a record of a version this
 * service does not know is dead-lettered naming the supported versions, while canaries on every partition ship
 * behind it; the fields an order event carries beyond its version's schema are counted.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { caughtUp, counter, events, scenario, waitFor, type Scenario, type TopicWatch } from '../support/harness.js';

/** Partitions of a scenario's topic (test/support/harness.ts). */
const PARTITIONS = 3;

const example = (version: number) =>
  JSON.parse(
    readFileSync(new URL(`../../docs/schema/order-placed.v${version}.example.json`, import.meta.url), 'utf8'),
  ) as Record<string, unknown> & { data: Record<string, unknown> };

let s: Scenario;
let app: App;
let dlq: TopicWatch;
beforeAll(async () => {
  s = await scenario('schema-versions');
  app = await s.startInstance();
  dlq = await s.watchTopic(s.config.DLQ_TOPIC);
});
afterAll(async () => {
  await dlq?.close();
  await s?.close();
});

describe('schema versions', () => {
  it('the checked-in v2 example ships like its v1 equivalent: items become the shipment lines', async () => {
    const tenant = s.tenant();
    const v1 = { ...example(1), tenantId: tenant, orderId: 'ord-v1', eventId: `evt-v1-${s.suffix}` };
    const v2 = { ...example(2), tenantId: tenant, orderId: 'ord-v2', eventId: `evt-v2-${s.suffix}` };
    await s.produce([
      { key: `${tenant}/ord-v1`, value: v1 },
      { key: `${tenant}/ord-v2`, value: v2 },
    ]);
    for (const order of ['ord-v1', 'ord-v2']) {
      await waitFor(`${order} shipped`, async () => (await s.row(tenant, order))?.status === 'shipped', 60_000);
    }
    const [one, two] = await Promise.all([s.row(tenant, 'ord-v1'), s.row(tenant, 'ord-v2')]);
    expect(two).toMatchObject({
      status: one!.status,
      order_version: one!.order_version,
      customer_id: one!.customer_id,
      lines: one!.lines,
    });
    const shipments = await s.shipments(tenant);
    const lines = (order: string) => shipments.find((x) => x.orderId === order)?.lines;
    expect(lines('ord-v2')).toEqual(v2.data.items);
    expect(lines('ord-v2')).toEqual(lines('ord-v1'));
    expect(await counter(app, 'fulfilment_unknown_fields_total')).toBe(0);
  });

  it('a v999 record is dead-lettered naming the supported versions; canaries on every partition ship behind it', async () => {
    const tenant = s.tenant();
    const offsets: string[] = [];
    for (let p = 0; p < PARTITIONS; p += 1) {
      const value = {
        ...example(2),
        schemaVersion: 999,
        tenantId: tenant,
        orderId: `ord-v999-${p}`,
        eventId: `evt-v999-${p}-${s.suffix}`,
      };
      const [meta] = await s.producer.send({
        topic: s.config.ORDERS_TOPIC,
        acks: -1,
        messages: [
          {
            partition: p,
            key: `v999-${p}`,
            value: JSON.stringify(value),
            headers: { 'correlation-id': `corr-v999-${p}` },
          },
        ],
      });
      offsets.push(meta!.baseOffset!);
    }
    const canaries = Array.from({ length: PARTITIONS }, (_, p) => `canary-${p}`);
    await s.produce(canaries.map((id, p) => ({ partition: p, key: id, value: events.placed(tenant, id) })));
    await waitFor(
      'the canaries shipped',
      async () => (await Promise.all(canaries.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
      90_000,
    );
    await waitFor(
      'the group committed past the canaries',
      () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
      90_000,
    );
    for (const [p, offset] of offsets.entries()) {
      const dl = await waitFor(`the dead letter of ${p}:${offset}`, () =>
        dlq.records.find(
          (r) => r.headers['dlq-original-partition'] === String(p) && r.headers['dlq-original-offset'] === offset,
        ),
      );
      expect(dl.headers).toMatchObject({
        'dlq-error-class': 'MalformedEventError',
        'dlq-stage': 'edge',
        'correlation-id': `corr-v999-${p}`,
      });
      expect(dl.headers['dlq-error-message']).toBe(
        'field schemaVersion: version 999 is not supported (supported schema versions: 1, 2)',
      );
      expect(dl.key?.toString()).toBe(`v999-${p}`);
      expect(await s.row(tenant, `ord-v999-${p}`)).toBeUndefined();
    }
  });

  it('fields beyond the record’s version are dropped and counted by name; the order still ships', async () => {
    const tenant = s.tenant();
    const before = await counter(app, 'fulfilment_unknown_fields_total');
    const v2 = example(2);
    await s.produce([
      {
        key: `${tenant}/extra-v2`,
        value: {
          ...v2,
          tenantId: tenant,
          orderId: 'extra-v2',
          eventId: `evt-extra-v2-${s.suffix}`,
          promo: 'SPRING',
          data: { ...v2.data, giftWrap: true, lines: [] },
        },
      },
      { key: `${tenant}/extra-v1`, value: events.placed(tenant, 'extra-v1', { promo: 'SPRING' }) },
    ]);
    for (const order of ['extra-v2', 'extra-v1']) {
      await waitFor(`${order} shipped`, async () => (await s.row(tenant, order))?.status === 'shipped', 60_000);
    }
    await waitFor(
      'the unknown fields counted',
      async () => (await counter(app, 'fulfilment_unknown_fields_total')) - before >= 4,
    );
    expect(await counter(app, 'fulfilment_unknown_fields_total', { field: 'promo' })).toBe(2);
    expect(await counter(app, 'fulfilment_unknown_fields_total', { field: 'data.giftWrap' })).toBe(1);
    expect(await counter(app, 'fulfilment_unknown_fields_total', { field: 'data.lines' })).toBe(1);
    expect((await counter(app, 'fulfilment_unknown_fields_total')) - before).toBe(4);
    const shipped = (await s.shipments(tenant)).find((x) => x.orderId === 'extra-v2');
    expect(shipped?.lines).toEqual(v2.data.items); // the stray v1 `lines: []` was dropped, not taken for the lines
  });
});
