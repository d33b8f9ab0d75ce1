/**
 * What a failed delivery to Temporal means, told by its gRPC status code and the typed details Temporal attaches
 * (google.rpc.Status in the `grpc-status-details-bin` trailer), never by its message text:
 *
 * | status                                               | meaning                              | the bridge            |
 * |------------------------------------------------------|--------------------------------------|-----------------------|
 * | INVALID_ARGUMENT                                     | the event itself (too large, limits) | dead-letters it       |
 * | RESOURCE_EXHAUSTED, cause BUSY_WORKFLOW              | only this order's workflow           | retries the record alone, within its budget |
 * | UNAUTHENTICATED, PERMISSION_DENIED, its namespace not found or deleted | this client, for good | stops the role  |
 * | anything else (UNAVAILABLE, DEADLINE_EXCEEDED, other RESOURCE_EXHAUSTED causes…) | Temporal, for everyone | parks the partition |
 */
import { NamespaceNotFoundError } from '@temporalio/common';
import proto from '@temporalio/proto';
import {
  AccessRefusedError,
  DependencyUnavailableError,
  PermanentError,
  RecordTransientError,
} from '../../base/errors.js';

/** Thrown when Temporal refuses the event itself (e.g. too large); retrying cannot help. */
export class EventRejectedByTemporalError extends PermanentError {}

/** Temporal refuses more starts or signals for this order's workflow for now (its per-workflow rate or limits). */
export class WorkflowBusyError extends RecordTransientError {}

/** Temporal refuses this bridge's credentials or permissions, or its namespace is gone. */
export class TemporalAccessRefusedError extends AccessRefusedError {}

/** gRPC status codes (grpc/status.h). */
export const GRPC = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNAUTHENTICATED: 16,
} as const;

const { google, temporal } = proto;

const DETAILS_TRAILER = 'grpc-status-details-bin';
const ERROR_DETAILS = 'temporal.api.errordetails.v1.';

interface GrpcLike {
  code?: unknown;
  details?: unknown;
  metadata?: { get?(key: string): unknown[] } | Record<string, unknown>;
  cause?: unknown;
  message?: unknown;
}

/** The first error along the cause chain that carries a numeric gRPC code (the SDK wraps the transport's error). */
export function grpcError(err: unknown): (GrpcLike & { code: number }) | undefined {
  let e = err as GrpcLike | undefined;
  for (let i = 0; i < 5 && e; i += 1) {
    if (typeof e.code === 'number') return e as GrpcLike & { code: number };
    e = e.cause as GrpcLike | undefined;
  }
  return undefined;
}

/** The typed details of a gRPC error, by their short type name (`ResourceExhaustedFailure`), decoded when known. */
export function statusDetails(err: GrpcLike): { type: string; value: Uint8Array }[] {
  const md = err.metadata;
  const raw =
    md && typeof (md as { get?: unknown }).get === 'function'
      ? (md as { get(key: string): unknown[] }).get(DETAILS_TRAILER)?.[0]
      : (md as Record<string, unknown> | undefined)?.[DETAILS_TRAILER];
  const bytes =
    raw instanceof Uint8Array
      ? raw
      : Array.isArray(raw) && raw[0] instanceof Uint8Array
        ? (raw[0] as Uint8Array)
        : undefined;
  if (!bytes) return [];
  try {
    return (google.rpc.Status.decode(bytes).details ?? []).flatMap((d) => {
      const url = d.type_url ?? '';
      const name = url.slice(url.lastIndexOf('/') + 1);
      return name.startsWith(ERROR_DETAILS) && d.value
        ? [{ type: name.slice(ERROR_DETAILS.length), value: d.value }]
        : [];
    });
  } catch {
    return []; // details that do not decode say nothing more than the code
  }
}

/** The cause Temporal gave for a RESOURCE_EXHAUSTED, when it gave one. */
export function resourceExhaustedCause(err: GrpcLike): number | undefined {
  const detail = statusDetails(err).find((d) => d.type === 'ResourceExhaustedFailure');
  return detail ? temporal.api.errordetails.v1.ResourceExhaustedFailure.decode(detail.value).cause : undefined;
}

/**
 * The namespace was not found (the SDK's NamespaceNotFoundError, or NOT_FOUND with NamespaceNotFoundFailure) or is
 * being deleted (FAILED_PRECONDITION with NamespaceInvalidStateFailure, state Deleted) — what a deleted namespace
 * answers, in that order, while its deletion runs.
 */
function namespaceGone(err: unknown, g: (GrpcLike & { code: number }) | undefined): boolean {
  if (err instanceof NamespaceNotFoundError || (err as { cause?: unknown })?.cause instanceof NamespaceNotFoundError)
    return true;
  if (g?.code === GRPC.NOT_FOUND) return statusDetails(g).some((d) => d.type === 'NamespaceNotFoundFailure');
  if (g?.code !== GRPC.FAILED_PRECONDITION) return false;
  const invalid = statusDetails(g).find((d) => d.type === 'NamespaceInvalidStateFailure');
  return (
    invalid !== undefined &&
    temporal.api.errordetails.v1.NamespaceInvalidStateFailure.decode(invalid.value).state ===
      temporal.api.enums.v1.NamespaceState.NAMESPACE_STATE_DELETED
  );
}

const codeName = (code: number) => Object.entries(GRPC).find(([, c]) => c === code)?.[0] ?? `code ${code}`;

/** The error a failed delivery is thrown as (see the table above). */
export function classifyDeliveryFailure(err: unknown): Error {
  const g = grpcError(err);
  const said = `${String((err as GrpcLike)?.message ?? err)}${typeof g?.details === 'string' && g.details ? ` (${g.details})` : ''}`;
  if (g?.code === GRPC.INVALID_ARGUMENT)
    return new EventRejectedByTemporalError(`Temporal rejected the event: ${said}`, { cause: err });
  if (
    g?.code === GRPC.RESOURCE_EXHAUSTED &&
    resourceExhaustedCause(g) === temporal.api.enums.v1.ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_BUSY_WORKFLOW
  ) {
    return new WorkflowBusyError(
      `Temporal refuses more for this order's workflow now (RESOURCE_EXHAUSTED, BUSY_WORKFLOW): ${said}`,
      { cause: err },
    );
  }
  if (namespaceGone(err, g))
    return new TemporalAccessRefusedError(`Temporal refused this bridge (its namespace is gone): ${said}`, {
      cause: err,
    });
  if (g?.code === GRPC.UNAUTHENTICATED || g?.code === GRPC.PERMISSION_DENIED) {
    return new TemporalAccessRefusedError(`Temporal refused this bridge (${codeName(g.code)}): ${said}`, {
      cause: err,
    });
  }
  const cause = (err as { cause?: { message?: string } })?.cause?.message;
  return new DependencyUnavailableError(`Temporal unavailable: ${said}${cause ? ` (${cause})` : ''}`, { cause: err });
}
