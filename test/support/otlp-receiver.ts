/**
 * An in-process OTLP/HTTP trace receiver for tests: what a collector is to the service. It takes the exporter's
 * POST /v1/traces in OTLP/JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json: ids in hex, attributes as typed values),
 * answers as a collector does, and keeps every span with its resource's `service.name`. A request that is not
 * OTLP/JSON is answered 415 and counted, so a test sees a wrong protocol instead of missing spans.
 */
import { createServer } from 'node:http';
import { readBody } from '../../tools/warehouse/server.js';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  serviceName?: string;
  attributes: Record<string, unknown>;
  status?: { code?: number; message?: string };
  /** When the span started and ended, ms since the epoch. */
  startMs: number;
  endMs: number;
}

export interface OtlpReceiver {
  /** The base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received, and those refused (not POST /v1/traces with a JSON body). */
  requests: { accepted: number; refused: { path: string; contentType?: string }[] };
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}

function value(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}

function attributes(list: { key: string; value?: AnyValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));
}

interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value?: AnyValue }[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: { key: string; value?: AnyValue }[];
        status?: { code?: number; message?: string };
        /** Nanoseconds since the epoch, as a decimal string. */
        startTimeUnixNano?: string;
        endTimeUnixNano?: string;
      }[];
    }[];
  }[];
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = { accepted: 0, refused: [] };
  const server = createServer((req, res) => {
    void (async () => {
      const text = await readBody(req);
      const contentType = req.headers['content-type'];
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !contentType?.startsWith('application/json')) {
        requests.refused.push({ path: req.url ?? '', contentType });
        res.writeHead(415).end();
        return;
      }
      const request = JSON.parse(text) as ExportRequest;
      for (const rs of request.resourceSpans ?? []) {
        const serviceName = attributes(rs.resource?.attributes)['service.name'] as string | undefined;
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId || undefined,
              name: s.name,
              kind: s.kind,
              serviceName,
              attributes: attributes(s.attributes),
              status: s.status,
              startMs: Number(BigInt(s.startTimeUnixNano ?? '0') / 1_000_000n),
              endMs: Number(BigInt(s.endTimeUnixNano ?? '0') / 1_000_000n),
            });
          }
        }
      }
      requests.accepted += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    })().catch(() => res.writeHead(400).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
