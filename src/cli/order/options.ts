/**
 * What `order show`, `order retry` and `order resolve` are asked to do, and the checks of it made before anything is
 * loaded: main.ts parses the arguments with these (bad input exits 2 without loading Temporal), and the commands check
 * again for callers that skip the CLI. The id and reason rules are the order's vocabulary (src/vocabulary/order.ts,
 * which imports nothing, unlike workflows/api.ts), and the workflow's validator checks them again.
 */
import { InvalidArgumentError } from 'commander';
import { hostname, userInfo } from 'node:os';
import {
  ID_PATTERN,
  OPERATOR_MAX_LENGTH,
  RECALL_RESOLUTIONS,
  operatorProblem,
  retryReasonProblem,
  type RecallResolution,
} from '../../vocabulary/order.js';
import { UsageError } from '../cli-errors.js';

/** How long the command waits for Temporal and the order's worker when --timeout is not given, seconds. */
export const DEFAULT_RETRY_TIMEOUT_SECONDS = 30;

export interface OrderRef {
  tenantId: string;
  orderId: string;
}

/** What every operator's action on an order records: why, and who asked. */
export interface OperatorRequestOptions {
  /** Why; recorded in the store and in the order's notes. */
  reason: string;
  /** Who asked; recorded in the store. Default: defaultOperator(). */
  by?: string;
}

export interface RetryOptions extends OrderRef, OperatorRequestOptions {
  /** The update id; default derived from the retry number and the reason, so a repeated command applies once. */
  requestId?: string;
  /** Print the summary as one JSON object. */
  json?: boolean;
  /** How long to wait for Temporal and the order's worker, seconds. Default DEFAULT_RETRY_TIMEOUT_SECONDS. */
  timeoutSeconds?: number;
}

/** The bulk retry (`order retry --tenant …`): a tenant's orders held as failed, selected from the store. */
export interface BulkRetryOptions extends OperatorRequestOptions {
  tenantId: string;
  /** Only `failed`: recall-failed orders are resolved, not retried. */
  status: 'failed';
  /** Held at or after this time. */
  since?: Date;
  /** Most orders selected, oldest first. Default DEFAULT_BULK_LIMIT. */
  limit: number;
  /** Orders retried per second at most. Default DEFAULT_BULK_RATE. */
  rate: number;
  /** List the selection, change nothing. */
  dryRun?: boolean;
  json?: boolean;
  timeoutSeconds?: number;
}

/** Most orders one bulk retry selects when --limit is not given. */
export const DEFAULT_BULK_LIMIT = 100;
/** Orders a bulk retry retries per second when --rate is not given. */
export const DEFAULT_BULK_RATE = 5;

/** Throws UsageError for a bulk retry no run may make. */
export function checkBulkRetryOptions(opts: BulkRetryOptions): void {
  const problem =
    (ID_PATTERN.test(opts.tenantId) ? undefined : `--tenant: expected ${TENANT_EXPECTED}`) ??
    statusProblem(opts.status) ??
    (typeof opts.reason === 'string' ? reasonProblem(opts.reason) : 'expected a reason') ??
    (opts.by !== undefined ? byProblem(opts.by) : undefined) ??
    (Number.isSafeInteger(opts.limit) && opts.limit >= 1 && opts.limit <= 10_000
      ? undefined
      : `--limit: expected a whole number 1–10000, got ${opts.limit}`) ??
    (opts.rate > 0 && opts.rate <= 1000
      ? undefined
      : `--rate: expected orders per second, > 0 and ≤ 1000, got ${opts.rate}`);
  if (problem) throw new UsageError(`order retry --tenant ${opts.tenantId}: ${problem}`);
  checkTimeout(opts.timeoutSeconds);
}

/** Why `status` cannot be bulk-retried, or undefined. */
export function statusProblem(status: string): string | undefined {
  if (status === 'failed') return undefined;
  if (status === 'recall-failed')
    return '--status: recall-failed orders are resolved, not retried (`fulfilment order resolve`)';
  return `--status: expected failed, got ${status}`;
}

/** Commander parser of --status. */
export function heldStatus(value: string): 'failed' {
  const problem = statusProblem(value);
  if (problem) throw new InvalidArgumentError(`${problem.replace(/^--status: /, '')}.`);
  return 'failed';
}

/** Commander parser of --tenant. */
export function tenant(value: string): string {
  if (!ID_PATTERN.test(value)) throw new InvalidArgumentError(`expected ${TENANT_EXPECTED}.`);
  return value;
}

/** How an order held as recall-failed is resolved (`order resolve`). */
export interface ResolveOptions extends OrderRef, OperatorRequestOptions {
  action: RecallResolution;
  requestId?: string;
  json?: boolean;
  timeoutSeconds?: number;
}

/** Who asked, when --by is not given: the operating-system user and host the command runs as (user@host). */
export function defaultOperator(): string {
  let user = 'unknown';
  try {
    user = userInfo().username || user;
  } catch {
    // no passwd entry for this uid (a container): keep 'unknown'
  }
  return `${user}@${hostname()}`.slice(0, OPERATOR_MAX_LENGTH);
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

/** What a tenant argument or option accepts, for error messages. */
export const TENANT_EXPECTED =
  'a tenant id: 1–64 of A–Z a–z 0–9 . _ : - starting with a letter or digit (e.g. acme-eu)';
const ORDER_EXPECTED =
  '<tenant>/<order>, each 1–64 of A–Z a–z 0–9 . _ : - starting with a letter or digit (e.g. acme-eu/o-1008)';

export function orderRefProblem(value: string): string | undefined {
  const parts = value.split('/');
  if (parts.length !== 2 || !ID_PATTERN.test(parts[0]!) || !ID_PATTERN.test(parts[1]!))
    return `expected ${ORDER_EXPECTED}`;
  return undefined;
}

/** Why `reason` cannot be a retry reason (the workflow validator's rule), or undefined. */
export function reasonProblem(reason: string): string | undefined {
  if (reason.trim() === '')
    return 'expected a reason: what was fixed, who asked (e.g. "warehouse SKU mapping fixed, INC-2041")';
  const problem = retryReasonProblem(reason);
  return problem && `expected a reason the store can hold: ${problem}`;
}

/** Why `by` cannot name who asked (the workflow validator's rule), or undefined. */
export function byProblem(by: string): string | undefined {
  const problem = operatorProblem(by);
  return problem && `expected a name the store can hold (e.g. jane.doe or INC-2041 on-call): ${problem}`;
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

/** Commander parser of --by. */
export function by(value: string): string {
  const problem = byProblem(value);
  if (problem) throw new InvalidArgumentError(`${problem}.`);
  return value.trim();
}

/** Commander parser of --action. */
export function resolution(value: string): RecallResolution {
  if (!RECALL_RESOLUTIONS.includes(value as RecallResolution))
    throw new InvalidArgumentError(`expected one of ${RECALL_RESOLUTIONS.join(', ')}.`);
  return value as RecallResolution;
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

/** The problem with an operator's request on one order (ref, reason, who, request id), or undefined. */
function requestProblem(opts: OrderRef & OperatorRequestOptions & { requestId?: string }): string | undefined {
  return (
    orderRefProblem(`${opts.tenantId}/${opts.orderId}`) ??
    (typeof opts.reason === 'string' ? reasonProblem(opts.reason) : 'expected a reason') ??
    (opts.by !== undefined ? byProblem(opts.by) : undefined) ??
    (opts.requestId !== undefined ? requestIdProblem(opts.requestId) : undefined)
  );
}

/** Throws UsageError for options no retry may run with; the same checks as the parsers, for in-process callers. */
export function checkRetryOptions(opts: RetryOptions): void {
  const problem = requestProblem(opts);
  if (problem) throw new UsageError(`order retry ${opts.tenantId}/${opts.orderId}: ${problem}`);
  checkTimeout(opts.timeoutSeconds);
}

/** Throws UsageError for options no resolution may run with. */
export function checkResolveOptions(opts: ResolveOptions): void {
  const problem =
    requestProblem(opts) ??
    (RECALL_RESOLUTIONS.includes(opts.action)
      ? undefined
      : `--action: expected one of ${RECALL_RESOLUTIONS.join(', ')}`);
  if (problem) throw new UsageError(`order resolve ${opts.tenantId}/${opts.orderId}: ${problem}`);
  checkTimeout(opts.timeoutSeconds);
}
