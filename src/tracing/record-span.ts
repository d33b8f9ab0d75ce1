/**
 * The bridge's span per Kafka record: `kafka.record <type>`, a CONSUMER span that continues the trace of the
 * record's W3C `traceparent` header (and `tracestate`, `baggage`), or starts a new trace when it has none. Everything
 * the bridge does for the record runs inside it — the signal-with-start call (whose client interceptor passes the
 * context on to the workflow) and a dead letter (which records the trace it belongs to).
 */
import { SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import type { RecordInPartition, RecordOutcome } from '../bridge/record-pipeline.js';
import { Abandoned } from '../bridge/backoff-gate.js';
import { recordContext } from './propagation.js';
import { recordFailure } from './spans.js';

// Messaging attributes of OpenTelemetry's semantic conventions, still "incubating" there (so copied, as that package
// recommends, rather than imported from its unstable entry point).
const MESSAGING_SYSTEM = 'messaging.system';
const MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
const MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
const MESSAGING_DESTINATION_PARTITION_ID = 'messaging.destination.partition.id';
const MESSAGING_CONSUMER_GROUP_NAME = 'messaging.consumer.group.name';
const MESSAGING_KAFKA_OFFSET = 'messaging.kafka.offset';
const MESSAGING_MESSAGE_ID = 'messaging.message.id';

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

/** Runs `work` (the record's whole path) inside its `kafka.record <type>` span; without a tracer, just runs it. */
export function traceRecord(tracer: Tracer | undefined, group: string, r: RecordInPartition, work: () => Promise<RecordOutcome>): Promise<RecordOutcome> {
  if (!tracer) return work();
  const c = r.classified;
  const attributes: Record<string, string | number> = {
    [MESSAGING_SYSTEM]: 'kafka',
    [MESSAGING_OPERATION_TYPE]: 'process',
    [MESSAGING_DESTINATION_NAME]: r.topic,
    [MESSAGING_DESTINATION_PARTITION_ID]: String(r.partition),
    [MESSAGING_CONSUMER_GROUP_NAME]: group,
    [MESSAGING_KAFKA_OFFSET]: Number(r.record.offset),
  };
  if (c.kind === 'order-event') {
    attributes[MESSAGING_MESSAGE_ID] = c.event.eventId;
    attributes['fulfilment.tenant_id'] = c.event.tenantId;
    attributes['fulfilment.order_id'] = c.event.orderId;
    attributes['fulfilment.order_version'] = c.event.orderVersion;
  } else if (c.kind === 'unknown-type') {
    attributes['fulfilment.event_type'] = c.type.slice(0, 200);
  }
  return tracer.startActiveSpan(`kafka.record ${spanType(r)}`, { kind: SpanKind.CONSUMER, attributes }, recordContext(r.record.headers), async (span) => {
    try {
      const outcome = await work();
      span.setAttribute('fulfilment.outcome', outcome);
      if (outcome === 'dead-lettered') span.setStatus({ code: SpanStatusCode.ERROR, message: c.kind === 'malformed' ? c.error.message.slice(0, 500) : 'dead-lettered' });
      return outcome;
    } catch (err) {
      // Abandoned: the record is left for a later fetch (shutdown, revocation), not a failure of its own.
      if (err instanceof Abandoned) span.setAttribute('fulfilment.outcome', 'abandoned');
      else recordFailure(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}
