/**
 * The bridge's span per Kafka record: `kafka.record <type>`, a CONSUMER span that continues the trace of the
 * record's W3C `traceparent` header (and `tracestate`, `baggage`), or starts a new trace when it has none. Everything
 * the bridge does for the record runs inside it — the signal-with-start call (whose client interceptor passes the
 * context on to the workflow) and a dead letter (which records the trace it belongs to).
 */
import {
  SpanKind,
  SpanStatusCode,
  trace,
  type Link,
  type Span,
  type SpanOptions,
  type Tracer,
} from '@opentelemetry/api';
import { recordContext } from '../../adapters/tracing/propagation.js';
import { recordFailure } from '../../adapters/tracing/spans.js';
import { Abandoned } from './backoff-gate.js';
import type { RecordInPartition, RecordOutcome } from './record-pipeline.js';

// Messaging attributes of OpenTelemetry's semantic conventions, still "incubating" there (so copied, as that package
// recommends, rather than imported from its unstable entry point).
const MESSAGING_SYSTEM = 'messaging.system';
const MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
const MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
const MESSAGING_DESTINATION_PARTITION_ID = 'messaging.destination.partition.id';
const MESSAGING_CONSUMER_GROUP_NAME = 'messaging.consumer.group.name';
const MESSAGING_KAFKA_OFFSET = 'messaging.kafka.offset';
const MESSAGING_MESSAGE_ID = 'messaging.message.id';
const MESSAGING_BATCH_MESSAGE_COUNT = 'messaging.batch.message_count';

/** The span name's `<type>`: the event type for order events; `unknown` and `malformed` otherwise (bounded names). */
function spanType(r: RecordInPartition): string {
  switch (r.classified.kind) {
    case 'order-event':
      return r.classified.event.type;
    case 'unknown-type':
      return 'unknown';
    default:
      return 'malformed';
  }
}

/** The messaging attributes of the span of `r`, a record of partition `r.partition` processed by `group`. */
function messagingAttributes(group: string, r: RecordInPartition): Record<string, string | number> {
  return {
    [MESSAGING_SYSTEM]: 'kafka',
    [MESSAGING_OPERATION_TYPE]: 'process',
    [MESSAGING_DESTINATION_NAME]: r.topic,
    [MESSAGING_DESTINATION_PARTITION_ID]: String(r.partition),
    [MESSAGING_CONSUMER_GROUP_NAME]: group,
    [MESSAGING_KAFKA_OFFSET]: Number(r.record.offset),
  };
}

/**
 * Runs `work` in a CONSUMER span continuing `parent`'s trace; `ended` names its outcome on the span. A record left for
 * a later fetch (Abandoned: shutdown, revocation) is marked so, not as a failure of its own.
 */
function inSpan<T>(
  tracer: Tracer,
  name: string,
  options: SpanOptions,
  parent: RecordInPartition,
  work: () => Promise<T>,
  ended: (span: Span, result: T) => void,
): Promise<T> {
  return tracer.startActiveSpan(
    name,
    { kind: SpanKind.CONSUMER, ...options },
    recordContext(parent.record.headers),
    async (span) => {
      try {
        const result = await work();
        ended(span, result);
        return result;
      } catch (err) {
        if (err instanceof Abandoned) span.setAttribute('fulfilment.outcome', 'abandoned');
        else recordFailure(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * Runs `work` (several records of one order handed over together) inside one `kafka.records <type>` span, as
 * OpenTelemetry's messaging conventions have a batch processed: it continues the first record's trace and links every
 * record's own context. The signal carries this span's context to the workflow. Without a tracer, just runs it.
 */
export function traceRecords(
  tracer: Tracer | undefined,
  group: string,
  rs: readonly RecordInPartition[],
  work: () => Promise<RecordOutcome[]>,
): Promise<RecordOutcome[]> {
  if (!tracer) return work();
  const first = rs[0]!;
  const links: Link[] = rs.flatMap((r) => {
    const span = trace.getSpanContext(recordContext(r.record.headers));
    return span ? [{ context: span, attributes: { [MESSAGING_KAFKA_OFFSET]: Number(r.record.offset) } }] : [];
  });
  const attributes: Record<string, string | number> = {
    ...messagingAttributes(group, first),
    [MESSAGING_BATCH_MESSAGE_COUNT]: rs.length,
  };
  if (first.classified.kind === 'order-event') {
    attributes['fulfilment.tenant_id'] = first.classified.event.tenantId;
    attributes['fulfilment.order_id'] = first.classified.event.orderId;
  }
  return inSpan(tracer, `kafka.records ${spanType(first)}`, { attributes, links }, first, work, (span, outcomes) =>
    span.setAttribute('fulfilment.outcomes', [...new Set(outcomes)].join(',')),
  );
}

/** Runs `work` (the record's whole path) inside its `kafka.record <type>` span; without a tracer, just runs it. */
export function traceRecord(
  tracer: Tracer | undefined,
  group: string,
  r: RecordInPartition,
  work: () => Promise<RecordOutcome>,
): Promise<RecordOutcome> {
  if (!tracer) return work();
  const c = r.classified;
  const attributes = messagingAttributes(group, r);
  if (c.kind === 'order-event') {
    attributes[MESSAGING_MESSAGE_ID] = c.event.eventId;
    attributes['fulfilment.tenant_id'] = c.event.tenantId;
    attributes['fulfilment.order_id'] = c.event.orderId;
    attributes['fulfilment.order_version'] = c.event.orderVersion;
  } else if (c.kind === 'unknown-type') {
    attributes['fulfilment.event_type'] = c.type.slice(0, 200);
  }
  return inSpan(tracer, `kafka.record ${spanType(r)}`, { attributes }, r, work, (span, outcome) => {
    span.setAttribute('fulfilment.outcome', outcome);
    if (outcome === 'dead-lettered')
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: c.kind === 'malformed' ? c.error.message.slice(0, 500) : 'dead-lettered',
      });
  });
}
