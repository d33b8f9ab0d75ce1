/** What every span of this service records about a failure. */
import { SpanStatusCode, type Span } from '@opentelemetry/api';
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';

/** Marks `span` failed by `err`: the exception as an event, `error.type` (the error's name), status ERROR with its message. */
export function recordFailure(span: Span, err: unknown): void {
  const e = err as Error | undefined;
  span.recordException(e instanceof Error ? e : String(err));
  span.setAttribute(ATTR_ERROR_TYPE, e?.name ?? 'Error');
  span.setStatus({ code: SpanStatusCode.ERROR, message: e?.message ?? String(err) });
}
