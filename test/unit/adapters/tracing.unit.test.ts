import { ROOT_CONTEXT, context, createContextKey, propagation, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/base/config.js';
import { deadLetterMessage, reducedDeadLetterMessage, type DeadLetter } from '../../../src/adapters/dlq/dead-letter.js';
import { createLogger } from '../../../src/base/log.js';
import {
  DEFAULT_OTLP_TRACES_URL,
  exportSettings,
  startTracing,
  type Tracing,
} from '../../../src/adapters/tracing/index.js';
import { recordContext } from '../../../src/adapters/tracing/propagation.js';
import { createWarehouseClient } from '../../../src/adapters/warehouse/client.js';
import { startWarehouse } from '../../../tools/warehouse/server.js';
import { startOtlpReceiver } from '../../support/otlp-receiver.js';

const logger = createLogger('silent');
const TRACEPARENT = `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`;

/** True when no OpenTelemetry context manager or propagator is registered in this process (the API's no-ops). */
function globalsAreNoops(): boolean {
  const key = createContextKey('probe');
  const inside = context.with(ROOT_CONTEXT.setValue(key, 1), () => context.active().getValue(key));
  return inside === undefined && propagation.fields().length === 0;
}

describe('tracing is off unless configured', () => {
  it('with no OTEL_* variable: nothing is started and nothing is registered', async () => {
    const config = loadConfig({});
    expect(exportSettings(config)).toBeUndefined();
    expect(await startTracing(config, logger)).toBeUndefined();
    expect(globalsAreNoops()).toBe(true);
    // A record's traceparent is then not even read: the bridge gets no tracer and makes no span.
    expect(trace.getSpanContext(recordContext({ traceparent: TRACEPARENT }))).toBeUndefined();
  });

  it.each([
    [
      'OTEL_TRACES_EXPORTER=none',
      { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' },
    ],
    ['OTEL_SDK_DISABLED=true', { OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }],
    [
      'only settings that choose nothing',
      { OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_TRACES_SAMPLER: 'always_on' },
    ],
  ])('off with %s', async (_name, env) => {
    expect(await startTracing(loadConfig(env), logger)).toBeUndefined();
    expect(globalsAreNoops()).toBe(true);
  });

  it('a warehouse call sends no traceparent while tracing is off', async () => {
    const warehouse = await startWarehouse({ port: 0 });
    try {
      await createWarehouseClient(warehouse.url).ship('k-off', {
        tenantId: 't',
        orderId: 'o',
        lines: [{ sku: 's', quantity: 1 }],
      });
      expect(warehouse.requests().map((r) => r.traceparent)).toEqual([undefined]);
    } finally {
      await warehouse.close();
    }
  });
});

describe('tracing configuration (standard OTEL_* variables)', () => {
  it('an OTLP endpoint turns it on: traces go to <endpoint>/v1/traces as http/protobuf by default', () => {
    expect(exportSettings(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }))).toEqual({
      exporter: 'otlp',
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      timeoutMs: 10_000,
    });
  });

  it('the traces-only variables win over the general ones; headers are merged and percent-decoded', () => {
    const settings = exportSettings(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/ingest',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-team=orders,authorization=Bearer%20abc',
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-team=fulfilment',
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2500',
      }),
    );
    expect(settings).toEqual({
      exporter: 'otlp',
      url: 'https://traces.example/ingest',
      protocol: 'http/json',
      headers: { 'x-team': 'fulfilment', authorization: 'Bearer abc' },
      timeoutMs: 2500,
    });
  });

  it('OTEL_TRACES_EXPORTER=otlp without an endpoint uses the standard local collector address', () => {
    expect(exportSettings(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }))).toMatchObject({
      url: DEFAULT_OTLP_TRACES_URL,
    });
    expect(exportSettings(loadConfig({ OTEL_TRACES_EXPORTER: 'console' }))).toEqual({ exporter: 'console' });
  });

  it.each([
    [
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      /OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is invalid: expected http\/protobuf or http\/json \(this service exports over OTLP\/HTTP/,
    ],
    [
      { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'thrift' },
      /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="thrift" is invalid: expected http\/protobuf or http\/json/,
    ],
    [{ OTEL_TRACES_EXPORTER: 'jaeger' }, /OTEL_TRACES_EXPORTER="jaeger" is invalid: expected otlp, console or none/],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      /OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318" is invalid: expected a URL starting with http:\/\/ or https:\/\//,
    ],
    [
      { OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name' },
      /OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name" is invalid: expected a comma list of key=value pairs/,
    ],
    [
      { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' },
      /OTEL_TRACES_SAMPLER_ARG="1.5" is invalid: expected a ratio from 0 to 1/,
    ],
    [
      { OTEL_TRACES_SAMPLER_ARG: '0.5' },
      /OTEL_TRACES_SAMPLER_ARG is set, but OTEL_TRACES_SAMPLER=parentbased_always_on takes no ratio/,
    ],
    [
      { OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '200' },
      /OTEL_BSP_MAX_EXPORT_BATCH_SIZE=200 is larger than OTEL_BSP_MAX_QUEUE_SIZE=100/,
    ],
  ])('refuses %o at start-up, naming the variable and what was expected', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never repeats the export headers in an error (they carry collector credentials)', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: 'secret-token-no-equals' })).toThrow(
      'OTEL_EXPORTER_OTLP_HEADERS=(hidden) is invalid',
    );
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: 'secret-token-no-equals' })).not.toThrow(/secret-token/);
  });
});

describe('tracing on', () => {
  let tracing: Tracing | undefined;
  afterEach(async () => {
    await tracing?.shutdown();
    tracing = undefined;
    expect(globalsAreNoops()).toBe(true); // the last app to stop unregisters what the first registered
  });

  // Sampled out, so nothing is ever exported; the context still propagates (flags 00).
  const quiet = { OTEL_TRACES_EXPORTER: 'console', OTEL_TRACES_SAMPLER: 'always_off' } as const;

  it('the warehouse client sends the traceparent of its warehouse.ship span', async () => {
    tracing = (await startTracing(loadConfig(quiet), logger))!;
    const warehouse = await startWarehouse({ port: 0 });
    try {
      const client = createWarehouseClient(warehouse.url, { tracer: tracing.tracer });
      const parent = tracing.tracer.startSpan('activity');
      await context.with(trace.setSpan(ROOT_CONTEXT, parent), () =>
        client.ship('k-on', { tenantId: 't', orderId: 'o', lines: [{ sku: 's', quantity: 1 }] }),
      );
      const [received] = warehouse.requests();
      const traceId = parent.spanContext().traceId;
      expect(received?.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));
      // The span is the call's own (a child of the activity's), not the activity's.
      expect(received?.traceparent).not.toContain(parent.spanContext().spanId);
      parent.end();
    } finally {
      await warehouse.close();
    }
  });

  it.each([
    ['http/protobuf', 'application/x-protobuf'],
    ['http/json', 'application/json'],
  ])(
    'OTEL_EXPORTER_OTLP_PROTOCOL=%s posts %s to <endpoint>/v1/traces, and shutdown sends what is buffered',
    async (protocol, contentType) => {
      const receiver = await startOtlpReceiver();
      try {
        tracing = (await startTracing(
          loadConfig({
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
            OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
            OTEL_BSP_SCHEDULE_DELAY: '600000',
          }),
          logger,
        ))!;
        tracing.tracer.startSpan('kafka.record orders.OrderPlaced').end();
        expect(receiver.requests.accepted + receiver.requests.refused.length).toBe(0);
        await tracing.shutdown();
        // The receiver decodes OTLP/JSON only: a protobuf export is counted as refused, with what it was.
        if (protocol === 'http/json')
          expect(receiver.spans.map((sp) => [sp.name, sp.serviceName])).toEqual([
            ['kafka.record orders.OrderPlaced', 'fulfilment'],
          ]);
        else expect(receiver.requests.refused).toEqual([{ path: '/v1/traces', contentType }]);
      } finally {
        await receiver.close();
      }
    },
  );

  describe('dead letters keep the trace context', () => {
    const letter = (headers?: DeadLetter['headers']): DeadLetter => ({
      key: 'k',
      value: 'v',
      headers,
      origin: { topic: 'orders', partition: 0, offset: '7' },
      group: 'g',
      error: { name: 'MalformedEventError', message: 'bad' },
      attempts: 1,
      firstFailureAt: new Date(0),
      lastFailureAt: new Date(0),
      stage: 'edge',
    });

    it("the record's own traceparent and tracestate survive even where the other original headers are dropped", () => {
      const headers = { traceparent: Buffer.from(TRACEPARENT), tracestate: 'vendor=1', big: 'x'.repeat(20_000) };
      for (const m of [
        reducedDeadLetterMessage(letter(headers), true),
        reducedDeadLetterMessage(letter(headers), false),
      ]) {
        expect(m.headers!['big']).toBeUndefined();
        expect(m.headers!['traceparent']).toBe(TRACEPARENT);
        expect(m.headers!['tracestate']).toBe('vendor=1');
      }
      expect(deadLetterMessage(letter(headers)).headers!['traceparent']).toEqual(Buffer.from(TRACEPARENT)); // as it was
    });

    it('a record without one gets the active trace; without an active span (or with tracing off), none', async () => {
      tracing = (await startTracing(loadConfig(quiet), logger))!;
      expect(deadLetterMessage(letter()).headers!['traceparent']).toBeUndefined();
      const span = tracing.tracer.startSpan('kafka.record malformed');
      const m = context.with(trace.setSpan(ROOT_CONTEXT, span), () => deadLetterMessage(letter({ note: 'n' })));
      expect(m.headers!['traceparent']).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-00`);
      expect(m.headers!['note']).toBe('n');
      span.end();
    });

    it('an invalid traceparent of the record is kept as it was, never replaced', async () => {
      tracing = (await startTracing(loadConfig(quiet), logger))!;
      const span = tracing.tracer.startSpan('kafka.record malformed');
      const m = context.with(trace.setSpan(ROOT_CONTEXT, span), () =>
        deadLetterMessage(letter({ traceparent: 'not-a-traceparent' })),
      );
      expect(m.headers!['traceparent']).toBe('not-a-traceparent');
      span.end();
    });
  });
});
