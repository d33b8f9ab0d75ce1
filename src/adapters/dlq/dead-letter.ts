/**
 * Dead letters: the DLQ contract (its headers: docs/cli.md "One dead letter in full") and how one is written. A dead letter keeps the
 * original key and value bytes and the original headers, plus `dlq-*` headers saying what failed, where the
 * record came from and who it belonged to (when that could be read). At-least-once like everything else: the
 * source offset is committed only after the DLQ write is acknowledged.
 *
 * Rule a reader must not break: a dead letter that the broker can never accept (too large, invalid) is not a
 * transient failure. It is written again without the value (its size and SHA-256 kept, flagged by
 * `dlq-value-form: too-large`), and if need be without the original headers too, so a record never blocks its partition.
 *
 * Trace context: a dead letter keeps the record's W3C `traceparent` (and `tracestate`) header, also in the reduced
 * forms, which drop the other original headers; a record that had none gets the trace it was being processed in
 * (the bridge's `kafka.record` span, the worker's activity span) when tracing is on, so the dead letter can be
 * found from its trace and the other way round.
 *
 * With payload encryption keys configured (PAYLOAD_ENCRYPTION_KEYS), the value is written encrypted with the current
 * key (AES-256-GCM, src/adapters/codec/cipher.ts), flagged by `dlq-value-encryption: aes-256-gcm` and
 * `dlq-value-key-id`; the CLI decrypts it with any configured key (decryptDeadLetterValue). The headers stay in clear:
 * they carry ids, not customer data. The size and SHA-256 of a reduced dead letter are those of the original value.
 */
import { createHash } from 'node:crypto';
import { CIPHER_NAME, open, seal } from '../codec/cipher.js';
import type { PayloadKeys } from '../../base/config/payload-keys.js';
import { DependencyUnavailableError } from '../../base/errors.js';
import {
  headerString,
  kafkaErrorType,
  type OutgoingRecord,
  type RecordHeaders,
  type RecordSender,
} from '../kafka/records.js';
import { TRACEPARENT, TRACESTATE, currentTraceHeaders, isTraceparent } from '../tracing/propagation.js';

/** Header names of the DLQ contract. */
export const DLQ_HEADERS = {
  errorClass: 'dlq-error-class',
  errorMessage: 'dlq-error-message',
  topic: 'dlq-original-topic',
  partition: 'dlq-original-partition',
  offset: 'dlq-original-offset',
  timestamp: 'dlq-original-timestamp',
  group: 'dlq-consumer-group',
  attempts: 'dlq-attempts',
  firstFailure: 'dlq-first-failure-at',
  lastFailure: 'dlq-last-failure-at',
  eventId: 'dlq-event-id',
  tenantId: 'dlq-tenant-id',
  correlationId: 'dlq-correlation-id',
  /** `edge` (the bridge refused the record) or `workflow` (the order's workflow refused the validated event). */
  stage: 'dlq-stage',
  /** Present when the value is not the original bytes: `too-large` (omitted) or `validated-event` (re-encoded). */
  valueForm: 'dlq-value-form',
  valueSize: 'dlq-value-size',
  valueSha256: 'dlq-value-sha256',
  /** Present (`true`) when the original headers were dropped to make the dead letter fit. */
  headersOmitted: 'dlq-original-headers-omitted',
  /** Present (`aes-256-gcm`) when the value is encrypted; `dlq-value-key-id` names the key. */
  valueEncryption: 'dlq-value-encryption',
  valueKeyId: 'dlq-value-key-id',
} as const;

/** Where the failed record came from. */
export interface DeadLetterOrigin {
  topic: string;
  partition: number;
  offset: string;
  /** Kafka timestamp of the original record, epoch milliseconds as a string, when known. */
  timestamp?: string;
}

export interface DeadLetter {
  key: Buffer | string | null;
  value: Buffer | string | null;
  /** The original record's headers, kept as they were. */
  headers?: RecordHeaders;
  origin: DeadLetterOrigin;
  group: string;
  error: { name: string; message: string };
  attempts: number;
  firstFailureAt: Date;
  lastFailureAt: Date;
  stage: 'edge' | 'workflow';
  /** Identity of the event when known; otherwise read, best effort, from the value. */
  ids?: { eventId?: string; tenantId?: string; correlationId?: string };
  /** Set when `value` is not the original bytes (e.g. the event as validated, re-encoded by the workflow). */
  valueForm?: 'validated-event';
}

/** Largest value whose identity fields are read back for the headers, bytes. */
const IDENTIFY_LIMIT = 1024 * 1024;
/** Largest original-header total kept on a dead letter whose value had to be omitted, bytes. */
const KEPT_HEADER_BYTES = 16 * 1024;

/** Best-effort read of identifying fields from a value that failed validation; never throws. */
function identify(value: Buffer | string | null): { eventId?: string; tenantId?: string; correlationId?: string } {
  if (value === null || value.length === 0 || value.length > IDENTIFY_LIMIT) return {};
  try {
    const obj = JSON.parse(value.toString()) as Record<string, unknown>;
    const pick = (k: string) => (typeof obj?.[k] === 'string' ? (obj[k] as string).slice(0, 200) : undefined);
    return { eventId: pick('eventId'), tenantId: pick('tenantId'), correlationId: pick('correlationId') };
  } catch {
    return {};
  }
}

function contractHeaders(d: DeadLetter, errorMessageLimit: number): RecordHeaders {
  const ids = d.ids ?? identify(d.value);
  // Identity fields are capped whatever their source, so the contract headers always fit a reduced dead letter.
  const correlationId = (ids.correlationId ?? headerString(d.headers, 'correlation-id'))?.slice(0, 200);
  const headers: RecordHeaders = {
    [DLQ_HEADERS.errorClass]: d.error.name,
    // Messages only, no stack: the DLQ is read by people and tools, not debuggers.
    [DLQ_HEADERS.errorMessage]: d.error.message.slice(0, errorMessageLimit),
    [DLQ_HEADERS.topic]: d.origin.topic,
    [DLQ_HEADERS.partition]: String(d.origin.partition),
    [DLQ_HEADERS.offset]: d.origin.offset,
    [DLQ_HEADERS.group]: d.group,
    [DLQ_HEADERS.attempts]: String(d.attempts),
    [DLQ_HEADERS.firstFailure]: d.firstFailureAt.toISOString(),
    [DLQ_HEADERS.lastFailure]: d.lastFailureAt.toISOString(),
    [DLQ_HEADERS.stage]: d.stage,
  };
  if (d.origin.timestamp !== undefined) headers[DLQ_HEADERS.timestamp] = d.origin.timestamp;
  if (d.valueForm) headers[DLQ_HEADERS.valueForm] = d.valueForm;
  if (ids.eventId) headers[DLQ_HEADERS.eventId] = ids.eventId;
  if (ids.tenantId) headers[DLQ_HEADERS.tenantId] = ids.tenantId;
  if (correlationId) headers[DLQ_HEADERS.correlationId] = correlationId;
  return headers;
}

/** Longest `tracestate` carried over on its own (the W3C limit is 512 characters). */
const TRACESTATE_LIMIT = 512;

/**
 * The trace context a dead letter carries on its own: the record's `traceparent` (and a `tracestate` within the W3C
 * limit) when it had a valid one; else, when it had no `traceparent` at all, the active trace (none with tracing off).
 */
function traceContext(headers: RecordHeaders | undefined): RecordHeaders {
  const traceparent = headerString(headers, TRACEPARENT);
  if (isTraceparent(traceparent)) {
    const tracestate = headerString(headers, TRACESTATE);
    return {
      [TRACEPARENT]: traceparent,
      ...(tracestate !== undefined && tracestate.length <= TRACESTATE_LIMIT ? { [TRACESTATE]: tracestate } : {}),
    };
  }
  if (headers?.[TRACEPARENT] !== undefined) return {};
  const current = currentTraceHeaders();
  return current[TRACEPARENT] === undefined
    ? {}
    : { [TRACEPARENT]: current[TRACEPARENT], ...(current[TRACESTATE] ? { [TRACESTATE]: current[TRACESTATE] } : {}) };
}

/**
 * The dead letter as written first: original key, value (encrypted when `encryption` is given) and headers (a
 * record's own `traceparent` among them, as it was), the current trace when the record had no `traceparent`, plus
 * the contract headers.
 */
export function deadLetterMessage(d: DeadLetter, encryption?: PayloadKeys): OutgoingRecord {
  const added = d.headers?.[TRACEPARENT] === undefined ? traceContext(d.headers) : {};
  const headers = { ...(d.headers ?? {}), ...added, ...contractHeaders(d, 2000) };
  if (!encryption || d.value === null) return { key: d.key, value: d.value, headers };
  const { keyId, data } = seal(encryption, Buffer.isBuffer(d.value) ? d.value : Buffer.from(d.value), 'dlq-value');
  return {
    key: d.key,
    value: data,
    headers: { ...headers, [DLQ_HEADERS.valueEncryption]: CIPHER_NAME, [DLQ_HEADERS.valueKeyId]: keyId },
  };
}

/**
 * A dead letter's value in clear: decrypted with the key its `dlq-value-key-id` names when it is encrypted, as it is
 * otherwise. `what` names the dead letter in errors (UnknownKeyError, DecryptionError: which key id, which keys).
 */
export function decryptDeadLetterValue(
  value: Buffer | null,
  headers: RecordHeaders | undefined,
  keys: PayloadKeys | undefined,
  what: string,
): Buffer | null {
  const cipher = headerString(headers, DLQ_HEADERS.valueEncryption);
  if (cipher === undefined || value === null) return value;
  if (cipher !== CIPHER_NAME)
    throw new Error(
      `${what} is encrypted with ${JSON.stringify(cipher)}, which this version cannot decrypt (it knows ${CIPHER_NAME})`,
    );
  const keyId = headerString(headers, DLQ_HEADERS.valueKeyId);
  if (!keyId)
    throw new Error(
      `${what} is encrypted (${DLQ_HEADERS.valueEncryption}: ${cipher}) but has no ${DLQ_HEADERS.valueKeyId} header: cannot tell which key decrypts it`,
    );
  return open(keys, keyId, value, 'dlq-value', what);
}

function headerBytes(headers: RecordHeaders | undefined): number {
  let n = 0;
  for (const [k, v] of Object.entries(headers ?? {})) {
    for (const part of Array.isArray(v) ? v : [v]) n += k.length + (part === undefined ? 0 : Buffer.byteLength(part));
  }
  return n;
}

/**
 * The dead letter reduced to fit: no value (its size and SHA-256 say what it was), the original headers kept only
 * when small and `keepHeaders` (the trace context is kept in any case), the error message capped.
 */
export function reducedDeadLetterMessage(d: DeadLetter, keepHeaders: boolean): OutgoingRecord {
  const value = d.value === null ? Buffer.alloc(0) : Buffer.isBuffer(d.value) ? d.value : Buffer.from(d.value);
  const keep = keepHeaders && headerBytes(d.headers) <= KEPT_HEADER_BYTES;
  const headers: RecordHeaders = {
    ...(keep ? (d.headers ?? {}) : {}),
    ...(keep && d.headers?.[TRACEPARENT] !== undefined ? {} : traceContext(d.headers)),
    ...contractHeaders(d, 500),
    [DLQ_HEADERS.valueForm]: 'too-large',
    [DLQ_HEADERS.valueSize]: String(value.length),
    [DLQ_HEADERS.valueSha256]: createHash('sha256').update(value).digest('hex'),
  };
  if (!keep && headerBytes(d.headers) > 0) headers[DLQ_HEADERS.headersOmitted] = 'true';
  return { key: d.key === null || Buffer.byteLength(d.key) <= 1024 ? d.key : null, value: null, headers };
}

/** Broker answers that no retry of the same record can change. */
const UNFIT = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'POLICY_VIOLATION']);

export { kafkaErrorType } from '../kafka/records.js';

/** How a dead letter was written: whole, or reduced to fit. */
export type DeadLetterForm = 'whole' | 'value-omitted' | 'value-and-headers-omitted';

/**
 * Writes one dead letter, acknowledged by all in-sync replicas. A broker refusal of the record itself is met by
 * writing it again reduced; any other failure is a DependencyUnavailableError (retry with backoff).
 */
export async function publishDeadLetter(
  sender: RecordSender,
  dlqTopic: string,
  d: DeadLetter,
  encryption?: PayloadKeys,
): Promise<DeadLetterForm> {
  const attempts: [DeadLetterForm, () => OutgoingRecord][] = [
    ['whole', () => deadLetterMessage(d, encryption)],
    ['value-omitted', () => reducedDeadLetterMessage(d, true)],
    ['value-and-headers-omitted', () => reducedDeadLetterMessage(d, false)],
  ];
  let lastType: string | undefined;
  for (const [form, build] of attempts) {
    try {
      await sender.send(dlqTopic, [build()]);
      return form;
    } catch (err) {
      lastType = kafkaErrorType(err);
      if (lastType === undefined || !UNFIT.has(lastType)) {
        throw new DependencyUnavailableError(`dead-letter write failed: ${(err as Error).message}`, { cause: err });
      }
    }
  }
  throw new DependencyUnavailableError(
    `dead-letter topic ${dlqTopic} refuses even a reduced dead letter (${lastType}); check its max.message.bytes`,
  );
}

/**
 * The redrive history a redriven record carries back to the orders topic (written by `fulfilment dlq redrive`,
 * read by the bridge's dead-letter step), so that a record that fails again is dead-lettered as the same failure
 * continued — its attempts added up and its first failure kept — not as a new one. The `dlq-` prefix keeps them out
 * of the original headers a later redrive copies.
 */
export const REDRIVE_HEADERS = {
  /** `dlq-attempts` of the dead letter the record was redriven from. */
  attempts: 'dlq-redrive-attempts',
  /** `dlq-first-failure-at` of the dead letter the record was redriven from (the same header name). */
  firstFailure: DLQ_HEADERS.firstFailure,
  /** DLQ position (`partition:offset`) of the dead letter the record was redriven from; kept on a new dead letter. */
  from: 'dlq-redriven-from',
} as const;

/** What a redriven record says about the dead letter it came from. */
export interface RedriveHistory {
  /** Attempts recorded before this redrive. */
  attempts: number;
  firstFailureAt: Date;
  /** DLQ position of the dead letter it came from, when given. */
  from?: string;
}

/** Most attempts a history may claim; anything larger is not a count this service wrote. */
const MAX_CARRIED_ATTEMPTS = 1_000_000;

/**
 * The redrive history in a record's headers, or undefined when it carries none. The headers come from the orders
 * topic, so they are checked: a count that is not a whole number in 1–1,000,000 or a time that is not an ISO 8601
 * instant makes the history absent (the failure is then recorded as new), never an error.
 */
export function redriveHistory(headers: RecordHeaders | undefined): RedriveHistory | undefined {
  const attemptsText = headerString(headers, REDRIVE_HEADERS.attempts);
  const firstText = headerString(headers, REDRIVE_HEADERS.firstFailure);
  if (attemptsText === undefined || firstText === undefined) return undefined;
  if (!/^\d{1,7}$/.test(attemptsText)) return undefined;
  const attempts = Number(attemptsText);
  if (attempts < 1 || attempts > MAX_CARRIED_ATTEMPTS) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(firstText)) return undefined;
  const first = Date.parse(firstText);
  if (Number.isNaN(first)) return undefined;
  const from = headerString(headers, REDRIVE_HEADERS.from);
  return {
    attempts,
    firstFailureAt: new Date(first),
    from: from !== undefined && /^\d{1,9}:\d{1,19}$/.test(from) ? from : undefined,
  };
}

/** The headers that tell the bridge a record's history: what `dlq redrive` adds to a redriven record. */
export function redriveHistoryHeaders(h: RedriveHistory): RecordHeaders {
  return {
    [REDRIVE_HEADERS.attempts]: String(h.attempts),
    [REDRIVE_HEADERS.firstFailure]: h.firstFailureAt.toISOString(),
    ...(h.from !== undefined ? { [REDRIVE_HEADERS.from]: h.from } : {}),
  };
}

/**
 * A failure of a redriven record as the continuation of its history: attempts added (previous + this failure's),
 * the earlier first failure kept. Without a history the failure is returned as it is.
 */
export function carryForward<F extends { attempts: number; firstFailureAt: Date }>(
  failure: F,
  history: RedriveHistory | undefined,
): F {
  if (!history) return failure;
  const first =
    history.firstFailureAt.getTime() < failure.firstFailureAt.getTime()
      ? history.firstFailureAt
      : failure.firstFailureAt;
  return {
    ...failure,
    attempts: Math.min(history.attempts, MAX_CARRIED_ATTEMPTS) + failure.attempts,
    firstFailureAt: first,
  };
}

/**
 * A redriven record's headers without the history count (it lives on in `dlq-attempts`); `dlq-redriven-from` is
 * kept, so the new dead letter names the one it came back from, and `dlq-first-failure-at` is replaced by the
 * contract's own.
 */
export function withoutRedriveCount(headers: RecordHeaders | undefined): RecordHeaders | undefined {
  if (!headers || !(REDRIVE_HEADERS.attempts in headers)) return headers;
  const { [REDRIVE_HEADERS.attempts]: _count, ...rest } = headers;
  return rest;
}
