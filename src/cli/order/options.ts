/**
 * What `order retry` and `order show` are asked to do, and the checks of it made before anything is loaded: main.ts
 * parses the arguments with these (bad input exits 2 without loading Temporal), and the commands check again for callers
 * that skip the CLI. The id and reason rules are the workflow's own (workflows/identity.ts, which imports nothing,
 * unlike workflows/api.ts), and the workflow's validator checks them again.
 */
import { InvalidArgumentError } from 'commander';
import { ID_PATTERN, retryReasonProblem } from '../../../workflows/identity.js';
import { UsageError } from '../errors.js';

/** How long the command waits for Temporal and the order's worker when --timeout is not given, seconds. */
export const DEFAULT_RETRY_TIMEOUT_SECONDS = 30;

export interface OrderRef {
  tenantId: string;
  orderId: string;
}

export interface RetryOptions extends OrderRef {
  /** Why the order is tried again; recorded in the store and in the order's notes. */
  reason: string;
  /** The update id; default derived from the retry number and the reason, so a repeated command applies once. */
  requestId?: string;
  /** Print the summary as one JSON object. */
  json?: boolean;
  /** How long to wait for Temporal and the order's worker, seconds. Default DEFAULT_RETRY_TIMEOUT_SECONDS. */
  timeoutSeconds?: number;
}

/** How long `order show` waits for each source (Temporal and the worker, PostgreSQL, the warehouse, Kafka) by default, seconds. */
export const DEFAULT_SHOW_TIMEOUT_SECONDS = 15;

export interface ShowOptions extends OrderRef {
  /** Show personal data (customer id, shipping address) instead of redacting it. */
  reveal?: boolean;
  /** How long to wait for each source, seconds. Default DEFAULT_SHOW_TIMEOUT_SECONDS. */
  timeoutSeconds?: number;
  json?: boolean;
}

const ORDER_EXPECTED = '<tenant>/<order>, each 1–64 of A–Z a–z 0–9 . _ : - starting with a letter or digit (e.g. acme-eu/o-1008)';

export function orderRefProblem(value: string): string | undefined {
  const parts = value.split('/');
  if (parts.length !== 2 || !ID_PATTERN.test(parts[0]!) || !ID_PATTERN.test(parts[1]!)) return `expected ${ORDER_EXPECTED}`;
  return undefined;
}

/** Why `reason` cannot be a retry reason (the workflow validator's rule), or undefined. */
export function reasonProblem(reason: string): string | undefined {
  if (reason.trim() === '') return 'expected a reason: what was fixed, who asked (e.g. "warehouse SKU mapping fixed, INC-2041")';
  const problem = retryReasonProblem(reason);
  return problem && `expected a reason the store can hold: ${problem}`;
}

export function requestIdProblem(id: string): string | undefined {
  if (!/^[\x21-\x7E]{1,200}$/.test(id)) return 'expected 1–200 visible ASCII characters (e.g. INC-2041-retry)';
  return undefined;
}

/** Commander parser of the `<tenant>/<order>` argument. */
export function orderRef(value: string): OrderRef {
  const problem = orderRefProblem(value);
  if (problem) throw new InvalidArgumentError(`${problem}.`);
  const [tenantId, orderId] = value.split('/') as [string, string];
  return { tenantId, orderId };
}

/** Commander parser of --reason. */
export function reason(value: string): string {
  const problem = reasonProblem(value);
  if (problem) throw new InvalidArgumentError(`${problem}.`);
  return value.trim();
}

/** Commander parser of --request-id. */
export function requestId(value: string): string {
  const problem = requestIdProblem(value);
  if (problem) throw new InvalidArgumentError(`${problem}.`);
  return value;
}

/** Throws UsageError for an order `order show` cannot look up; the parser's check, for in-process callers. */
export function checkShowOptions(opts: ShowOptions): void {
  const problem = orderRefProblem(`${opts.tenantId}/${opts.orderId}`);
  if (problem) throw new UsageError(`order show ${opts.tenantId}/${opts.orderId}: ${problem}`);
  checkTimeout(opts.timeoutSeconds);
}

function checkTimeout(seconds: number | undefined): void {
  if (seconds !== undefined && !(Number.isSafeInteger(seconds) && seconds >= 1)) {
    throw new UsageError(`--timeout: expected a whole number of seconds ≥ 1, got ${seconds}`);
  }
}

/** Throws UsageError for options no retry may run with; the same checks as the parsers, for in-process callers. */
export function checkRetryOptions(opts: RetryOptions): void {
  const problem =
    orderRefProblem(`${opts.tenantId}/${opts.orderId}`) ??
    (typeof opts.reason === 'string' ? reasonProblem(opts.reason) : 'expected a reason') ??
    (opts.requestId !== undefined ? requestIdProblem(opts.requestId) : undefined);
  if (problem) throw new UsageError(`order retry ${opts.tenantId}/${opts.orderId}: ${problem}`);
  checkTimeout(opts.timeoutSeconds);
}
