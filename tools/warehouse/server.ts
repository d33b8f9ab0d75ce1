/**
 * A small warehouse service for development and tests: it "ships" orders, keeps its own idempotency store
 * (an append-only JSON-lines file, so a restart remembers every shipment), and can be told to misbehave
 * (error rate, added latency, down) at run time through /admin/faults.
 *
 *   POST /shipments              Idempotency-Key header required; same key → same shipment, never a second one
 *   POST /shipments/:key/cancel  recall a shipment (compensation); an unknown key is burned so it never ships
 *   GET  /shipments?tenantId=…   list shipments (narrowed by &key=… or &createdFrom=<ISO time>)
 *   GET  /admin/stats            request counts, and the shipment requests in flight now and at most, in all and
 *                                by tenant; POST /admin/faults {errorRate, latencyMs, down, rejectOrders,
 *                                refuseRecalls, tenants: {<tenantId>: {errorRate, latencyMs, down}}}
 *   GET  /admin/requests         the last 1000 shipment and cancel requests: method, path, idempotency key, the
 *                                W3C trace context headers they carried (`traceparent`, `tracestate`), when each
 *                                arrived and whether the warehouse was down then (`whileDown`)
 *   GET  /health
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomUUID } from 'node:crypto';

export interface Shipment {
  id: string;
  key: string;
  tenantId: string;
  orderId: string;
  lines: unknown;
  status: 'dispatched' | 'cancelled';
  createdAt: string;
  cancelledAt?: string;
}

export interface Faults {
  /** Share of shipment requests answered 503, 0–1. */
  errorRate: number;
  /** Added delay before answering a shipment request, milliseconds. */
  latencyMs: number;
  /** When true every shipment request is answered 503. */
  down: boolean;
  /** Order ids whose new shipments are refused for good (422, a business refusal the client does not retry). */
  rejectOrders: string[];
  /**
   * Order ids whose recall is refused for good (409: the shipment left the building), whether or not it shipped —
   * the last segment of the key (`ship/<tenant>/<order>`). Nothing is recorded for a refused recall.
   */
  refuseRecalls: string[];
  /**
   * Faults of one tenant's shipment requests (the body's `tenantId`), each field in place of the one above for that
   * tenant: e.g. `{ "acme": { "latencyMs": 5000 } }` slows acme's shipments alone. Replaced whole by each POST.
   */
  tenants: Record<string, TenantFaults>;
}

/** The faults that can be aimed at one tenant. */
export type TenantFaults = Partial<Pick<Faults, 'errorRate' | 'latencyMs' | 'down'>>;

/** Shipment requests being answered (from arrival to the response's end or the client's hang-up): now and at most. */
export interface InFlight {
  now: number;
  max: number;
  byTenant: Record<string, { now: number; max: number }>;
}

/** One shipment or cancel request as received, with the trace context it carried (tests assert propagation). */
export interface ReceivedRequest {
  method: string;
  path: string;
  idempotencyKey?: string;
  traceparent?: string;
  tracestate?: string;
  receivedAt: string;
  /** Whether the warehouse was down (/admin/faults) when the request arrived. */
  whileDown: boolean;
}

/** How many received requests are remembered. */
export const REQUEST_LOG_SIZE = 1000;

export interface WarehouseServer {
  server: Server;
  url: string;
  /** The last requests received (oldest first), as GET /admin/requests lists them. */
  requests(): ReceivedRequest[];
  close(): Promise<void>;
}

export async function startWarehouse(opts: {
  port: number;
  host?: string;
  dataFile?: string;
}): Promise<WarehouseServer> {
  const shipments = new Map<string, Shipment>();
  if (opts.dataFile) {
    mkdirSync(dirname(opts.dataFile), { recursive: true });
    if (existsSync(opts.dataFile)) {
      for (const line of readFileSync(opts.dataFile, 'utf8').split('\n')) {
        if (!line.trim()) continue;
        const s = JSON.parse(line) as Shipment;
        shipments.set(s.key, s);
      }
    }
  }
  const persist = (s: Shipment) => {
    shipments.set(s.key, s);
    if (opts.dataFile) appendFileSync(opts.dataFile, `${JSON.stringify(s)}\n`);
  };
  const faults: Faults = {
    errorRate: 0,
    latencyMs: 0,
    down: false,
    rejectOrders: [],
    refuseRecalls: [],
    tenants: {},
  };
  const stats = { shipmentRequests: 0, failedRequests: 0, requestTimes: [] as number[] };
  const inFlight: InFlight = { now: 0, max: 0, byTenant: {} };
  /** Counts a shipment request of `tenant` in flight until its response ends or its client hangs up. */
  const track = (tenant: string, res: ServerResponse) => {
    const t = (inFlight.byTenant[tenant] ??= { now: 0, max: 0 });
    inFlight.now += 1;
    t.now += 1;
    inFlight.max = Math.max(inFlight.max, inFlight.now);
    t.max = Math.max(t.max, t.now);
    res.once('close', () => {
      inFlight.now -= 1;
      t.now -= 1;
    });
  };
  const received: ReceivedRequest[] = [];
  const header = (req: IncomingMessage, name: string) => {
    const v = req.headers[name];
    return typeof v === 'string' ? v : undefined;
  };
  const remember = (req: IncomingMessage, path: string) => {
    received.push({
      method: req.method ?? '',
      path,
      idempotencyKey: header(req, 'idempotency-key'),
      traceparent: header(req, 'traceparent'),
      tracestate: header(req, 'tracestate'),
      receivedAt: new Date().toISOString(),
      whileDown: faults.down,
    });
    if (received.length > REQUEST_LOG_SIZE) received.shift();
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => send(res, 500, { error: String(err) }));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://warehouse');
    const path = url.pathname;
    if (req.method === 'GET' && path === '/health') return send(res, 200, { ok: true });
    if (req.method === 'GET' && path === '/admin/stats') {
      return send(res, 200, {
        shipmentRequests: stats.shipmentRequests,
        failedRequests: stats.failedRequests,
        requestTimes: stats.requestTimes,
        inFlight,
      });
    }
    if (req.method === 'POST' && path === '/admin/faults') {
      Object.assign(faults, pickFaults(JSON.parse((await readBody(req)) || '{}')));
      return send(res, 200, faults);
    }
    if (req.method === 'GET' && path === '/admin/requests') return send(res, 200, received);
    if (req.method === 'POST' && (path === '/shipments' || /^\/shipments\/.+\/cancel$/.test(path))) remember(req, path);
    if (req.method === 'GET' && path === '/shipments') {
      const tenantId = url.searchParams.get('tenantId');
      const key = url.searchParams.get('key');
      const from = url.searchParams.get('createdFrom');
      const fromMs = from ? Date.parse(from) : NaN;
      const list = [...shipments.values()].filter(
        (s) =>
          (!tenantId || s.tenantId === tenantId) &&
          (!key || s.key === key) &&
          (Number.isNaN(fromMs) || Date.parse(s.createdAt) >= fromMs),
      );
      return send(res, 200, list);
    }
    if (req.method === 'POST' && path === '/shipments') {
      stats.shipmentRequests += 1;
      stats.requestTimes.push(Date.now());
      if (stats.requestTimes.length > 10_000) stats.requestTimes.shift();
      // The request is read whole before any delay: one the client gives up on while the warehouse is slow is still
      // processed, as a real warehouse that already has the order would.
      const text = await readBody(req);
      const tenantId = tenantOf(text);
      track(tenantId ?? '', res);
      const f = { ...faults, ...(tenantId !== undefined ? faults.tenants[tenantId] : undefined) };
      if (f.latencyMs > 0) await new Promise((r) => setTimeout(r, f.latencyMs));
      if (f.down || Math.random() < f.errorRate) {
        stats.failedRequests += 1;
        return send(res, 503, { error: 'warehouse unavailable (injected fault)' });
      }
      const key = req.headers['idempotency-key'];
      if (typeof key !== 'string' || key.length === 0)
        return send(res, 400, { error: 'Idempotency-Key header is required' });
      const body = JSON.parse(text || '{}') as Partial<Shipment>;
      if (typeof body.tenantId !== 'string' || typeof body.orderId !== 'string') {
        return send(res, 400, { error: 'body needs tenantId and orderId strings' });
      }
      const existing = shipments.get(key);
      if (existing) return send(res, 200, { ...existing, replayed: true });
      if (faults.rejectOrders.includes(body.orderId)) {
        stats.failedRequests += 1;
        return send(res, 422, { error: `order ${body.orderId} refused (injected fault)` });
      }
      const shipment: Shipment = {
        id: `shp_${randomUUID()}`,
        key,
        tenantId: body.tenantId,
        orderId: body.orderId,
        lines: body.lines ?? [],
        status: 'dispatched',
        createdAt: new Date().toISOString(),
      };
      persist(shipment);
      return send(res, 201, shipment);
    }
    const cancel = /^\/shipments\/(.+)\/cancel$/.exec(path);
    if (req.method === 'POST' && cancel) {
      const key = decodeURIComponent(cancel[1]!);
      const existing = shipments.get(key);
      if (faults.refuseRecalls.includes(key.split('/').at(-1)!)) {
        return send(res, 409, {
          error: `recall of ${key} refused: the shipment has left the warehouse (injected fault)`,
        });
      }
      if (!existing) {
        // Burn the key: a shipment request still in flight for it must not dispatch after the recall.
        persist({
          id: '',
          key,
          tenantId: '',
          orderId: '',
          lines: [],
          status: 'cancelled',
          createdAt: new Date().toISOString(),
          cancelledAt: new Date().toISOString(),
        });
        return send(res, 200, { ...shipments.get(key), existed: false });
      }
      if (existing.status !== 'cancelled')
        persist({ ...existing, status: 'cancelled', cancelledAt: new Date().toISOString() });
      return send(res, 200, { ...shipments.get(key), existed: existing.id !== '' });
    }
    return send(res, 404, { error: `no route ${req.method} ${path}` });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  const host = !opts.host || opts.host === '0.0.0.0' ? '127.0.0.1' : opts.host;
  return {
    server,
    url: `http://${host}:${port}`,
    requests: () => [...received],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The `tenantId` of a shipment request's body, if it has one. */
function tenantOf(text: string): string | undefined {
  try {
    const body = JSON.parse(text || '{}') as { tenantId?: unknown };
    return typeof body.tenantId === 'string' ? body.tenantId : undefined;
  } catch {
    return undefined;
  }
}

/** The faults that apply to every request (or, under `tenants`, to one tenant's): the ones given and well-typed. */
function pickTenantFaults(input: Record<string, unknown>): TenantFaults {
  const out: TenantFaults = {};
  if (typeof input.errorRate === 'number') out.errorRate = Math.min(1, Math.max(0, input.errorRate));
  if (typeof input.latencyMs === 'number') out.latencyMs = Math.max(0, input.latencyMs);
  if (typeof input.down === 'boolean') out.down = input.down;
  return out;
}

function pickFaults(input: Record<string, unknown>): Partial<Faults> {
  const out: Partial<Faults> = pickTenantFaults(input);
  if (input.tenants && typeof input.tenants === 'object' && !Array.isArray(input.tenants))
    out.tenants = Object.fromEntries(
      Object.entries(input.tenants as Record<string, unknown>).flatMap(([tenant, f]) =>
        f && typeof f === 'object' ? [[tenant, pickTenantFaults(f as Record<string, unknown>)]] : [],
      ),
    );
  if (Array.isArray(input.rejectOrders))
    out.rejectOrders = input.rejectOrders.filter((o): o is string => typeof o === 'string');
  if (Array.isArray(input.refuseRecalls))
    out.refuseRecalls = input.refuseRecalls.filter((o): o is string => typeof o === 'string');
  return out;
}

/** A request's body as UTF-8 text (also read by the tests' OTLP receiver). */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
