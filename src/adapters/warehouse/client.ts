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
 * Brownouts (src/adapters/warehouse/brownout.ts): a warehouse that fails a share of everyone's calls rarely fails
 * `failures` in a row, so the circuit stays closed. Beside the breaker the client keeps a window of its recent calls; a
 * dependency failure met while that window says the warehouse fails for everyone (by default, over the last 30 s, ≥ 10
 * calls — the last 10 however old at low traffic —, ≥ 10 % of them failed, for ≥ 3 different shipments) is a
 * WarehouseOutageError too, and so is one met before the process has made 10 calls (too few to judge on). Otherwise a
 * failure is the order's own: a DependencyUnavailableError, one of its bounded attempts. A 4xx is always the order's.
 *
 * One tenant: a dependency failure met while the warehouse answers the other tenants (their calls of the window are
 * ≥ 10 and < 10 % failed) is judged on its tenant's calls alone, by the same rule: a WarehouseOutageError naming the
 * tenant when they fail by it (or are too few to judge), else the order's own. Such a failure is not counted by the
 * breaker — a warehouse that answers everyone else is not down — so one tenant's failures never open the circuit for
 * all. The breaker counts every other dependency failure, and only those.
 *
 * Slots (`slots`, src/base/tenants/weighted-slots.ts): each call first waits for one of the worker's slots, shared
 * between tenants by weight, and holds it until its answer (or failure) is in. The wait honours the caller's signal
 * (the activity's cancellation: Temporal's timeouts reach an activity that way) and is not part of the call's timeout.
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
import { createCallWindow, type BrownoutOptions, type Judgement, type RecentCalls } from './brownout.js';
import { CircuitState, ConsecutiveBreaker, circuitBreaker, handleWhen, isBrokenCircuitError } from 'cockatiel';
import {
  DependencyUnavailableError,
  InvalidRequestError,
  WarehouseOutageError,
  WarehouseRejectedError,
} from '../../base/errors.js';
import { shipmentKeyTenant, type OrderLine } from '../../vocabulary/order.js';
import type { WeightedSlots } from '../../base/tenants/weighted-slots.js';
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
    /** The worker's slots for warehouse calls, shared between tenants (WAREHOUSE_MAX_CONCURRENT_CALLS); absent, no limit. */
    slots?: WeightedSlots;
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
   * One call for shipment `key` of `tenant`: it waits for one of the worker's slots, then goes through the breaker
   * (attempt). The slot is held until the call is answered or failed; a caller whose signal aborts while it waits
   * gives up its place with the signal's reason, and no call goes out.
   */
  async function call(
    tenant: string,
    key: string,
    path: string,
    init: RequestInit,
    signal?: AbortSignal,
  ): Promise<Response> {
    const request = build(path, init);
    const release = await opts.slots?.acquire(tenant, signal);
    try {
      return await attempt(tenant, key, request, path, signal);
    } finally {
      release?.();
    }
  }

  /**
   * The call through the breaker. A dependency failure is an outage (WarehouseOutageError) when the circuit was open,
   * is open once this call failed, or the brownout rule judges it the warehouse's — for everyone, or for this tenant
   * while it answers the others — or cannot judge yet (too few calls): not this order's alone. A failure judged on the
   * tenant's calls alone is kept from the breaker's count (NotTheWarehouses). Every call that went out (answered or
   * failed) is recorded in the window.
   */
  async function attempt(
    tenant: string,
    key: string,
    request: Request,
    path: string,
    signal?: AbortSignal,
  ): Promise<Response> {
    let judgement: Judgement | undefined;
    try {
      const res = await breaker.execute(() =>
        send(request, path, signal).catch((err: unknown) => {
          if (!(err instanceof DependencyUnavailableError)) throw err;
          seen.lastFailureAt = Date.now();
          window.record(key, true, seen.lastFailureAt, tenant);
          judgement = window.judge(tenant, seen.lastFailureAt);
          if (judgement.scope === 'tenant' && breaker.state === CircuitState.Closed) throw new NotTheWarehouses(err);
          throw err;
        }),
      );
      seen.lastAnswerAt = Date.now();
      window.record(key, false, seen.lastAnswerAt, tenant);
      return res;
    } catch (caught) {
      if (isBrokenCircuitError(caught)) {
        seen.lastFailureAt = Date.now();
        throw new WarehouseOutageError(`warehouse circuit open: not calling ${path} until a probe succeeds`);
      }
      const err = caught instanceof NotTheWarehouses ? caught.failure : caught;
      if (!(err instanceof DependencyUnavailableError) || !judgement) throw err;
      if (breaker.state !== CircuitState.Closed)
        throw new WarehouseOutageError(`${err.message} (the warehouse's circuit is open: it fails for every order)`, {
          cause: err,
        });
      throw judged(err, tenant, judgement);
    }
  }

  /** `call` in a `warehouse.<op>` span (with a tracer), the active trace context injected into the request's headers. */
  async function traced(
    op: string,
    tenant: string,
    key: string,
    path: string,
    init: Omit<RequestInit, 'headers'> & { headers?: Record<string, string> },
    signal?: AbortSignal,
  ): Promise<Response> {
    const withContext = () => {
      const headers: Record<string, string> = { ...init.headers };
      propagation.inject(context.active(), headers);
      return call(tenant, key, path, { ...init, headers }, signal);
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
        request.tenantId,
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
        shipmentKeyTenant(key) ?? '',
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

/** A dependency failure the breaker must not count: judged on its tenant's calls while the warehouse answers the others. */
class NotTheWarehouses extends Error {
  constructor(readonly failure: DependencyUnavailableError) {
    super(failure.message);
  }
}

/**
 * What a dependency failure becomes by the brownout rule's judgement: the warehouse's (WarehouseOutageError: the order
 * waits) when the judged calls fail by the rule or are too few to tell; otherwise the order's own (`err` itself).
 */
function judged(err: DependencyUnavailableError, tenant: string, j: Judgement): DependencyUnavailableError {
  const c = j.calls;
  const whose = j.scope === 'tenant' ? `tenant ${tenant}'s` : 'its';
  const answered = j.others
    ? `, while it answered ${j.others.calls - j.others.failures} of the other tenants' last ${j.others.calls}`
    : '';
  const forWhom = j.scope === 'tenant' ? `tenant ${tenant}'s orders` : 'every order';
  if (c.unhealthy)
    return new WarehouseOutageError(
      `${err.message} (the warehouse failed ${c.failures} of ${whose} last ${c.calls} calls in ${Math.round(c.windowMs / 1000)} s, for ${c.failingKeys} shipments${answered}: it fails for ${forWhom})`,
      { cause: err },
    );
  if (!c.judged)
    return new WarehouseOutageError(
      `${err.message} (only ${c.calls} call(s) ${j.scope === 'tenant' ? `of tenant ${tenant} ` : ''}to the warehouse so far${answered}, too few to tell whether it fails for ${forWhom}: the order waits)`,
      { cause: err },
    );
  return err;
}
