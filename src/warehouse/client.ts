/**
 * HTTP client of the warehouse. Every shipment request carries an idempotency key derived from the order, so
 * a retried or redelivered shipment returns the first one instead of shipping twice.
 * Network errors, timeouts and 5xx are transient (retried by Temporal); 4xx are permanent.
 *
 * Rule a reader must not break: only a dependency failure (connection error, timeout, 5xx) counts towards the
 * breaker. A request that cannot be built from one order's data (e.g. a header value HTTP cannot carry) fails that
 * order alone with InvalidRequestError, before the breaker is consulted, so it can never open it for everyone.
 *
 * Calls go through a circuit breaker (cockatiel): after `failures` consecutive transient failures it opens and
 * calls fail at once without reaching the warehouse; after `halfOpenAfterMs` one probe is let through, and its
 * success closes the circuit. A dead warehouse is probed, not hammered, however many orders are retrying. A failure
 * met with the circuit open (or that left it open) is a WarehouseOutageError: the order waits instead of failing.
 *
 * Brownouts (src/warehouse/brownout.ts): a warehouse that fails a share of everyone's calls rarely fails `failures`
 * in a row, so the circuit stays closed. Beside the breaker the client keeps a window of its recent calls; a
 * dependency failure met while that window says the warehouse fails for everyone (by default, over the last 30 s,
 * ≥ 10 calls — the last 10 however old at low traffic —, ≥ 10 % of them failed, for ≥ 3 different shipments) is a
 * WarehouseOutageError too, and so is one met before the process has made 10 calls (too few to judge on). Otherwise
 * a failure is the order's own: a DependencyUnavailableError, one of its bounded attempts. A 4xx is always the order's.
 *
 * Tracing: each call is a CLIENT span `warehouse.<op>` (`warehouse.ship`, `warehouse.cancel`) when a tracer is given,
 * and every request carries the active trace context (`traceparent`, `tracestate`) through OpenTelemetry's
 * propagation API — with tracing off there is none, and no header is added.
 */
import { SpanKind, SpanStatusCode, context, propagation, type Tracer } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from '@opentelemetry/semantic-conventions';
import { createCallWindow, type BrownoutOptions, type RecentCalls } from './brownout.js';
import { CircuitState, ConsecutiveBreaker, circuitBreaker, handleWhen, isBrokenCircuitError } from 'cockatiel';
import {
  DependencyUnavailableError,
  InvalidRequestError,
  WarehouseOutageError,
  WarehouseRejectedError,
} from '../errors.js';
import type { OrderLine } from '../order.js';
import { isSafeToken } from '../events/envelope.js';
import { recordFailure } from '../tracing/spans.js';

export interface ShipmentRequest {
  tenantId: string;
  orderId: string;
  lines: OrderLine[];
  shippingAddress?: Record<string, unknown>;
  correlationId?: string;
}

export interface ShipmentReceipt {
  id: string;
  status: 'dispatched' | 'cancelled';
  replayed?: boolean;
}

export interface WarehouseClient {
  ship(key: string, request: ShipmentRequest, signal?: AbortSignal): Promise<ShipmentReceipt>;
  /** Recalls the shipment made under `key` and burns the key; resolves false when nothing had shipped. */
  cancel(key: string, signal?: AbortSignal): Promise<boolean>;
  /** What this process has seen of the warehouse lately (the shipment resumer's judgement of an outage). */
  health(): WarehouseHealth;
}

/** What one process's client has seen of the warehouse. */
export interface WarehouseHealth {
  /** The circuit: closed (calls go out), open (calls fail at once), half-open (one probe goes out). */
  circuit: 'closed' | 'open' | 'half-open';
  /** When the warehouse last answered a call (any answer but 5xx), ms since the epoch; 0 before any. */
  lastAnswerAt: number;
  /** When a call last failed as a dependency failure (unreachable, timeout, 5xx, circuit open), ms; 0 before any. */
  lastFailureAt: number;
  /** The calls of the brownout window and its verdict: whether the warehouse fails for everyone now. */
  recent: RecentCalls;
}

export interface BreakerOptions {
  /** Consecutive transient failures that open the circuit. Default 5. */
  failures: number;
  /** How long the circuit stays open before one probe is let through, milliseconds. Default 10000. */
  halfOpenAfterMs: number;
  /** Told of every state change (closed, open, half-open), e.g. to publish a metric. */
  onStateChange?: (state: 'closed' | 'open' | 'half-open') => void;
}

/**
 * Over 80 lines: a factory whose methods (ship, cancel) share one closure's state — the circuit breaker, the base
 * URL, the tracer — each inner function a named step.
 */
export function createWarehouseClient(
  baseUrl: string,
  opts: {
    /** How long one call may take before it fails as a timeout (WAREHOUSE_TIMEOUT_MS). Default 30 s. */
    timeoutMs?: number;
    breaker?: Partial<BreakerOptions>;
    brownout?: Partial<BrownoutOptions>;
    tracer?: Tracer;
  } = {},
): WarehouseClient {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const window = createCallWindow(opts.brownout);
  const breaker = circuitBreaker(
    handleWhen((err) => err instanceof DependencyUnavailableError),
    {
      halfOpenAfter: opts.breaker?.halfOpenAfterMs ?? 10_000,
      breaker: new ConsecutiveBreaker(opts.breaker?.failures ?? 5),
    },
  );
  const names: Partial<Record<CircuitState, 'closed' | 'open' | 'half-open'>> = {
    [CircuitState.Closed]: 'closed',
    [CircuitState.Open]: 'open',
    [CircuitState.HalfOpen]: 'half-open',
  };
  const seen: Omit<WarehouseHealth, 'recent'> = { circuit: 'closed', lastAnswerAt: 0, lastFailureAt: 0 };
  breaker.onStateChange((state) => {
    const name = names[state];
    if (!name) return;
    seen.circuit = name;
    opts.breaker?.onStateChange?.(name);
  });

  /** Builds the request from the order's data; one that cannot be built is that order's fault, not the warehouse's. */
  function build(path: string, init: RequestInit): Request {
    try {
      return new Request(new URL(path, baseUrl), init);
    } catch (err) {
      throw new InvalidRequestError(
        `warehouse request ${path} cannot be built from this order's data: ${(err as Error).message}`,
      );
    }
  }

  /**
   * One call for shipment `key` through the breaker. A dependency failure is an outage (WarehouseOutageError) when the
   * circuit was open, is open once this call failed, or the brownout window says the warehouse fails for everyone —
   * or cannot judge yet (too few calls): not for this order alone. Every call that went out (answered or failed) is recorded in the window.
   */
  async function call(key: string, path: string, init: RequestInit, signal?: AbortSignal): Promise<Response> {
    const request = build(path, init);
    try {
      const res = await breaker.execute(() => send(request, path, signal));
      seen.lastAnswerAt = Date.now();
      window.record(key, false, seen.lastAnswerAt);
      return res;
    } catch (err) {
      if (isBrokenCircuitError(err)) {
        seen.lastFailureAt = Date.now();
        throw new WarehouseOutageError(`warehouse circuit open: not calling ${path} until a probe succeeds`);
      }
      if (!(err instanceof DependencyUnavailableError)) throw err;
      seen.lastFailureAt = Date.now();
      window.record(key, true, seen.lastFailureAt);
      if (breaker.state !== CircuitState.Closed)
        throw new WarehouseOutageError(`${err.message} (the warehouse's circuit is open: it fails for every order)`, {
          cause: err,
        });
      const recent = window.recent(seen.lastFailureAt);
      if (recent.unhealthy)
        throw new WarehouseOutageError(
          `${err.message} (the warehouse failed ${recent.failures} of its last ${recent.calls} calls in ${Math.round(recent.windowMs / 1000)} s, for ${recent.failingKeys} shipments: it fails for every order)`,
          { cause: err },
        );
      if (!recent.judged)
        throw new WarehouseOutageError(
          `${err.message} (only ${recent.calls} call(s) to the warehouse so far, too few to tell whether it fails for every order: the order waits)`,
          { cause: err },
        );
      throw err;
    }
  }

  /** `call` in a `warehouse.<op>` span (with a tracer), the active trace context injected into the request's headers. */
  async function traced(
    op: string,
    key: string,
    path: string,
    init: Omit<RequestInit, 'headers'> & { headers?: Record<string, string> },
    signal?: AbortSignal,
  ): Promise<Response> {
    const withContext = () => {
      const headers: Record<string, string> = { ...init.headers };
      propagation.inject(context.active(), headers);
      return call(key, path, { ...init, headers }, signal);
    };
    const tracer = opts.tracer;
    if (!tracer) return withContext();
    const target = new URL(path, baseUrl);
    return tracer.startActiveSpan(
      `warehouse.${op}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: init.method ?? 'GET',
          [ATTR_URL_FULL]: target.href,
          [ATTR_SERVER_ADDRESS]: target.hostname,
          [ATTR_SERVER_PORT]: Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
        },
      },
      async (span) => {
        try {
          const res = await withContext();
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, res.status);
          if (res.status >= 400) {
            span.setAttribute(ATTR_ERROR_TYPE, String(res.status));
            span.setStatus({ code: SpanStatusCode.ERROR });
          }
          return res;
        } catch (err) {
          recordFailure(span, err);
          throw err;
        } finally {
          span.end();
        }
      },
    );
  }

  async function send(request: Request, path: string, signal?: AbortSignal): Promise<Response> {
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      const res = await fetch(request, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
      if (res.status >= 500)
        throw new DependencyUnavailableError(`warehouse answered ${res.status} to ${path}: ${await res.text()}`);
      return res;
    } catch (err) {
      if (err instanceof DependencyUnavailableError) throw err;
      if (signal?.aborted) throw err;
      throw new DependencyUnavailableError(`warehouse unreachable at ${baseUrl}: ${(err as Error).message}`);
    }
  }
  return {
    async ship(key, request, signal) {
      // The edge admits only safe tokens; an id that arrived some other way is still never sent as a header.
      if (request.correlationId !== undefined && !isSafeToken(request.correlationId)) {
        throw new InvalidRequestError(
          `warehouse request for shipment ${key} cannot be built from this order's data: correlation id ${JSON.stringify(request.correlationId).slice(0, 80)} is not 1–200 visible ASCII characters`,
        );
      }
      const res = await traced(
        'ship',
        key,
        '/shipments',
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'idempotency-key': key,
            ...(request.correlationId ? { 'correlation-id': request.correlationId } : {}),
          },
          body: JSON.stringify(request),
        },
        signal,
      );
      if (res.status >= 400)
        throw new WarehouseRejectedError(`warehouse refused shipment ${key}: ${res.status} ${await res.text()}`);
      return (await res.json()) as ShipmentReceipt;
    },
    async cancel(key, signal) {
      const res = await traced(
        'cancel',
        key,
        `/shipments/${encodeURIComponent(key)}/cancel`,
        { method: 'POST' },
        signal,
      );
      if (res.status >= 400) throw new WarehouseRejectedError(`warehouse refused to cancel ${key}: ${res.status}`);
      return ((await res.json()) as { existed: boolean }).existed;
    },
    health: () => ({ ...seen, recent: window.recent() }),
  };
}
