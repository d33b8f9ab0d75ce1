import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { caughtUp, counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';

describe('poison and unknown records', () => {
  let s: Scenario;
  let app: App;
  beforeAll(async () => {
    s = await scenario('malformed');
    app = await s.startInstance();
  });
  afterAll(async () => s?.close());

  it('each malformed record goes to the DLQ with its original bytes and headers; the valid record behind it is processed', async () => {
    const tenant = s.tenant();
    const valid = { ...events.placed(tenant, 'x'), correlationId: undefined }; // the header's id is the one to carry
    const poison: [string, Buffer | null, string][] = [
      ['not JSON', Buffer.from('{"eventId": "abc", oops'), 'not JSON'],
      ['missing eventId', Buffer.from(JSON.stringify({ ...valid, eventId: undefined })), 'eventId'],
      [
        'quantity 0',
        Buffer.from(JSON.stringify({ ...valid, data: { customerId: 'c', lines: [{ sku: 's', quantity: 0 }] } })),
        'data.lines[0].quantity',
      ],
      [
        'wrong types',
        Buffer.from(JSON.stringify({ ...valid, orderVersion: 'two', schemaVersion: true })),
        'schemaVersion',
      ],
      ['200 kB junk', Buffer.from('\u0000junk'.repeat(40_000)), 'not JSON'],
      ['empty value', null, 'empty value'],
    ];
    const messages = poison.flatMap(([name, value], i) => [
      {
        partition: 0,
        key: `poison-${i}`,
        value,
        headers: {
          'correlation-id': `corr-poison-${i}`,
          traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
          note: name,
        },
      },
      { partition: 0, key: `${tenant}/after-${i}`, value: events.placed(tenant, `after-${i}`) },
    ]);
    await s.produce(messages);

    for (let i = 0; i < poison.length; i += 1) {
      await waitFor(
        `the valid record behind poison ${i}`,
        async () => (await s.row(tenant, `after-${i}`))?.status === 'shipped',
        30_000,
      );
    }
    const dlq = await s.readTopic(s.config.DLQ_TOPIC, poison.length);
    expect(dlq).toHaveLength(poison.length);
    const sourceOffsets = new Set<string>();
    for (const [i, [name, value, mentions]] of poison.entries()) {
      const record = dlq.find((r) => r.key?.toString() === `poison-${i}`);
      expect(record, name).toBeDefined();
      expect(record!.value === null || record!.value.length === 0 ? null : record!.value).toEqual(value);
      expect(record!.headers).toMatchObject({
        'dlq-error-class': 'MalformedEventError',
        'dlq-original-topic': s.config.ORDERS_TOPIC,
        'dlq-original-partition': '0',
        'dlq-consumer-group': s.config.CONSUMER_GROUP,
        'dlq-attempts': '1',
        'dlq-correlation-id': `corr-poison-${i}`,
        note: name,
        traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
      });
      expect(record!.headers['dlq-error-message']).toContain(mentions);
      expect(Date.parse(record!.headers['dlq-first-failure-at']!)).toBeGreaterThan(0);
      expect(record!.headers['dlq-original-timestamp']).toMatch(/^\d+$/);
      sourceOffsets.add(record!.headers['dlq-original-offset']!);
    }
    expect(sourceOffsets.size).toBe(poison.length);
    const readable = dlq.find((r) => r.key?.toString() === 'poison-2')!;
    expect(readable.headers).toMatchObject({ 'dlq-event-id': valid.eventId, 'dlq-tenant-id': tenant });
    await waitFor('offsets committed past every poison record', () =>
      caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
    );
    expect(await counter(app, 'fulfilment_bridge_records_total', { outcome: 'dead-lettered' })).toBe(poison.length);
    // Counted as malformed, by error class, and not as an unknown type.
    expect(await counter(app, 'fulfilment_malformed_records_total')).toBe(poison.length);
    expect(await counter(app, 'fulfilment_bridge_records_total', { type: 'malformed', outcome: 'dead-lettered' })).toBe(
      poison.length,
    );
    expect(await counter(app, 'fulfilment_unknown_event_types_total')).toBe(0);
  });

  it('an unknown event type has no effect, is counted, committed and not dead-lettered', async () => {
    const tenant = s.tenant();
    const dlqBefore = await counter(app, 'fulfilment_bridge_records_total', { outcome: 'dead-lettered' });
    const malformedBefore = await counter(app, 'fulfilment_malformed_records_total');
    await s.produce([
      { partition: 1, value: { ...events.placed(tenant, 'refund-1'), type: 'orders.OrderRefunded' } },
      { partition: 1, value: events.placed(tenant, 'after-unknown') },
    ]);
    await waitFor('the record behind it', async () => (await s.row(tenant, 'after-unknown'))?.status === 'shipped');
    await waitFor('offsets committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
    expect(await s.row(tenant, 'refund-1')).toBeUndefined();
    // Counted under its own name, not as malformed.
    expect(await counter(app, 'fulfilment_unknown_event_types_total', { type: 'orders.OrderRefunded' })).toBe(1);
    expect(await counter(app, 'fulfilment_unknown_event_types_total')).toBe(1);
    expect(await counter(app, 'fulfilment_malformed_records_total')).toBe(malformedBefore);
    expect(await counter(app, 'fulfilment_bridge_records_total', { outcome: 'ignored' })).toBe(1);
    expect(await counter(app, 'fulfilment_bridge_records_total', { outcome: 'dead-lettered' })).toBe(dlqBefore);
  });
});
