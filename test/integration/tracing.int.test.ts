/**
 * Tracing end to end on the real stack (Kafka, Temporal, PostgreSQL; the warehouse in process), exported over OTLP
 * to an in-process receiver exactly as the OTEL_* variables configure it: one event produced with a `traceparent`
 * header becomes one trace — the bridge's `kafka.record` span, the client's SignalWithStartWorkflow, the workflow's
 * RunWorkflow / HandleSignal / StartActivity spans (from the sandbox, through the worker's sink), every activity's
 * RunActivity span and the `warehouse.ship` span, whose context the warehouse received in its request headers.
 * The batch processor's delay is ten minutes, so every span arrives through the app's stop path: shutdown flushes.
 * Also: a dead letter of a record that had no trace context carries the bridge span's; and the interceptors add no
 * commands (every checked-in history replays with them, and the traced order's history replays without them).
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { loadConfig } from '../../src/base/config.js';
import { workflowCodeOptions } from '../../src/domain/temporal.js';
import { startTracing } from '../../src/adapters/tracing/index.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { events, logger, scenario, waitFor, type Scenario } from '../support/harness.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('one trace per event, bridge → workflow → activities → warehouse', () => {
  let s: Scenario;
  let app: App;
  let receiver: OtlpReceiver;
  const traceId = hex(16);
  const producerSpanId = hex(8);
  let tenant: string;
  let dlqTraceparent: string | undefined;
  let statusHeaders: Record<string, string> = {};
  let tracedHistory: unknown;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    s = await scenario('tracing', {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'fulfilment-it',
      // Nothing is exported before stop(): the spans below prove that shutdown flushes.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    });
    app = await s.startInstance();
    expect(app.tracing?.settings).toEqual({
      exporter: 'otlp',
      url: `${receiver.url}/v1/traces`,
      protocol: 'http/json',
      headers: {},
      timeoutMs: 10_000,
    });

    tenant = s.tenant();
    const dlq = await s.watchTopic(s.config.DLQ_TOPIC);
    const status = await s.watchTopic(s.config.STATUS_TOPIC);
    await s.produce([
      {
        key: `${tenant}/o-1`,
        value: events.placed(tenant, 'o-1'),
        headers: { traceparent: `00-${traceId}-${producerSpanId}-01` },
      },
      // Malformed, and without any trace context of its own.
      { key: 'poison', value: Buffer.from('{"not": "an order event"') },
    ]);
    await waitFor('the order to ship', async () => (await s.row(tenant, 'o-1'))?.status === 'shipped');
    const handle = app.client.workflow.getHandle(orderWorkflowId(tenant, 'o-1'));
    await waitFor('the order workflow to complete', async () => (await handle.describe()).status.name === 'COMPLETED');
    tracedHistory = await handle.fetchHistory();
    const dead = await waitFor('the poison record in the DLQ', () =>
      dlq.records.find((r) => r.key?.toString() === 'poison'),
    );
    dlqTraceparent = dead.headers['traceparent'];
    await dlq.close();
    // The order's Shipped status event, published by the relay from the outbox row its shipment committed.
    statusHeaders = (
      await waitFor('the Shipped status event', () => status.records.find((r) => r.key?.toString() === `${tenant}/o-1`))
    ).headers;
    await status.close();
    expect(receiver.requests.accepted).toBe(0); // nothing exported yet: the batch processor holds the spans
    await app.stop();
  });
  afterAll(async () => {
    await s?.close();
    await receiver?.close();
  });

  const trace = () => receiver.spans.filter((sp) => sp.traceId === traceId);
  const all = (name: string) => trace().filter((sp) => sp.name === name);
  const one = (name: string): ReceivedSpan => {
    const found = trace().filter((sp) => sp.name === name);
    expect(
      found.map((sp) => sp.name),
      `one ${name} span in trace ${traceId}; the trace has ${trace()
        .map((sp) => sp.name)
        .join(', ')}`,
    ).toEqual([name]);
    return found[0]!;
  };

  it('exports every span of the event over OTLP at shutdown, in one trace continued from the record header', () => {
    expect(receiver.requests.refused).toEqual([]);
    const spans = trace();
    const names = spans.map((sp) => sp.name).sort();
    // Printed for the record: span names and ids of one event's trace.
    console.log(
      `trace ${traceId}\n${spans.map((sp) => `  ${sp.spanId} parent ${sp.parentSpanId ?? '-'}  ${sp.name}`).join('\n')}`,
    );
    // One process with both roles: the bridge starts the run eagerly, with the event in its input (no signal).
    expect(names).toEqual(
      expect.arrayContaining([
        'kafka.record orders.OrderPlaced',
        'StartWorkflow:orderFulfilmentV2',
        'RunWorkflow:orderFulfilmentV2',
        'StartActivity:placeAndShip',
        'RunActivity:placeAndShip',
        'warehouse.ship',
      ]),
    );
    for (const sp of spans) expect(sp.serviceName, sp.name).toBe('fulfilment-it');
  });

  it('links each span to its parent: producer → bridge → client call → workflow → activity → warehouse', () => {
    const record = one('kafka.record orders.OrderPlaced');
    expect(record.parentSpanId).toBe(producerSpanId);
    expect(record.kind).toBe(5); // CONSUMER
    expect(record.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.destination.name': s.config.ORDERS_TOPIC,
      'fulfilment.tenant_id': tenant,
      'fulfilment.order_id': 'o-1',
      'fulfilment.outcome': 'accepted',
    });
    const start = one('StartWorkflow:orderFulfilmentV2');
    expect(start.parentSpanId).toBe(record.spanId);
    const run = one('RunWorkflow:orderFulfilmentV2');
    expect(run.parentSpanId).toBe(start.spanId);
    const ids = new Set(trace().map((sp) => sp.spanId));
    // The placement and its shipment are one local activity inside the first workflow task, traced as an activity is.
    for (const activity of ['placeAndShip']) {
      const scheduled = one(`StartActivity:${activity}`);
      expect(ids.has(scheduled.parentSpanId!), `${activity} scheduled within the trace`).toBe(true);
      // One RunActivity span per attempt (a loaded machine may retry one), each a child of the scheduling span.
      const attempts = all(`RunActivity:${activity}`);
      expect(attempts.length, activity).toBeGreaterThan(0);
      for (const attempt of attempts) expect(attempt.parentSpanId, activity).toBe(scheduled.spanId);
    }
    const attemptIds = all('RunActivity:placeAndShip').map((sp) => sp.spanId);
    const calls = all('warehouse.ship');
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      expect(attemptIds).toContain(call.parentSpanId);
      expect(call.kind).toBe(3); // CLIENT
      expect(call.attributes).toMatchObject({
        'http.request.method': 'POST',
        'url.full': `${s.warehouse.url}/shipments`,
      });
    }
    expect(calls.at(-1)!.attributes['http.response.status_code']).toBe(201);
  });

  it('the warehouse received the trace context of each warehouse.ship span (traceparent header)', () => {
    const requests = s.warehouse
      .requests()
      .filter((r) => r.path === '/shipments' && r.idempotencyKey?.includes(tenant));
    console.log(`warehouse received ${requests.map((r) => `POST ${r.path} traceparent ${r.traceparent}`).join('; ')}`);
    expect(requests.map((r) => r.traceparent).sort()).toEqual(
      all('warehouse.ship')
        .map((sp) => `00-${traceId}-${sp.spanId}-01`)
        .sort(),
    );
  });

  it("the trace continues into the status event: its traceparent is the activity that committed the change, and the relay's publish span is its child", () => {
    const attemptIds = all('RunActivity:placeAndShip').map((sp) => sp.spanId);
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(statusHeaders['traceparent'] ?? '');
    console.log(`status event headers ${JSON.stringify(statusHeaders)}`);
    expect(m?.[1]).toBe(traceId);
    expect(attemptIds).toContain(m?.[2]);
    expect(statusHeaders['correlation-id']).toBe('corr-o-1');
    const publish = all(`publish ${s.config.STATUS_TOPIC}`);
    expect(publish.length).toBeGreaterThan(0);
    for (const sp of publish) {
      expect(sp.parentSpanId).toBe(m?.[2]);
      expect(sp.kind).toBe(4); // PRODUCER
      expect(sp.attributes).toMatchObject({
        'messaging.system': 'kafka',
        'messaging.destination.name': s.config.STATUS_TOPIC,
        'fulfilment.event_type': 'fulfilment.Shipped',
      });
    }
  });

  it('a dead letter of a record without trace context carries the trace of the bridge span that dead-lettered it', () => {
    const poison = receiver.spans.filter((sp) => sp.name === 'kafka.record malformed');
    expect(poison).toHaveLength(1);
    expect(poison[0]!.parentSpanId).toBeUndefined(); // a new trace: the record had none
    expect(poison[0]!.attributes['fulfilment.outcome']).toBe('dead-lettered');
    console.log(
      `dead letter traceparent ${dlqTraceparent}; ${poison[0]!.name} span ${poison[0]!.spanId} in trace ${poison[0]!.traceId}`,
    );
    expect(dlqTraceparent).toBe(`00-${poison[0]!.traceId}-${poison[0]!.spanId}-01`);
  });

  it('the workflow interceptors add no commands: the traced history replays without them, and with them', async () => {
    const tracing = (await startTracing(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
      logger,
    ))!;
    try {
      for (const traced of [false, true]) {
        const results: { error?: unknown }[] = [];
        const options = await workflowCodeOptions(traced ? { tracing } : {});
        for await (const r of Worker.runReplayHistories(options, [{ workflowId: 'traced', history: tracedHistory }]))
          results.push(r);
        expect(
          results.map((r) => r.error),
          `replay ${traced ? 'with' : 'without'} the tracing interceptors`,
        ).toEqual([undefined]);
      }
    } finally {
      await tracing.shutdown();
    }
  });
});

describe('the checked-in histories replay with the tracing interceptors in the bundle', () => {
  const dir = new URL('../histories/', import.meta.url);
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(async () => receiver?.close());

  it.each(files)('%s', async (file) => {
    const tracing = (await startTracing(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
      logger,
    ))!;
    try {
      const history: unknown = JSON.parse(readFileSync(new URL(file, dir), 'utf8'));
      const results: { error?: unknown }[] = [];
      const options = await workflowCodeOptions({ tracing });
      for await (const r of Worker.runReplayHistories(options, [{ workflowId: file, history }])) results.push(r);
      expect(results.map((r) => r.error)).toEqual([undefined]);
    } finally {
      await tracing.shutdown();
    }
    // A replay re-runs the workflow code but never exports its spans again (sinks are not called on replay).
    expect(receiver.spans).toEqual([]);
  });
});
