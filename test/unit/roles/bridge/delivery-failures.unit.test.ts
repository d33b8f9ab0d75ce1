/**
 * Temporal's refusals of a delivery are told apart by gRPC status code and typed details, never by message text:
 * errors are built as the transport builds them (a code, a `grpc-status-details-bin` trailer holding google.rpc.Status),
 * and given misleading messages to show the text is not read.
 */
import { Metadata } from '@grpc/grpc-js';
import { NamespaceNotFoundError } from '@temporalio/common';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import {
  EventRejectedByTemporalError,
  GRPC,
  TemporalAccessRefusedError,
  WorkflowBusyError,
  classifyDeliveryFailure,
} from '../../../../src/roles/bridge/delivery-failures.js';
import {
  AccessRefusedError,
  DependencyUnavailableError,
  PermanentError,
  RecordTransientError,
  TransientError,
} from '../../../../src/base/errors.js';

const { google, temporal } = proto;
const { ResourceExhaustedCause } = temporal.api.enums.v1;
const details = temporal.api.errordetails.v1;

function grpcError(code: number, message: string, detail?: { type: string; value: Uint8Array }): Error {
  const metadata = new Metadata();
  if (detail) {
    const status = google.rpc.Status.encode({
      code,
      message,
      details: [{ type_url: `type.googleapis.com/temporal.api.errordetails.v1.${detail.type}`, value: detail.value }],
    }).finish();
    metadata.set('grpc-status-details-bin', Buffer.from(status));
  }
  return Object.assign(new Error(`${code} ${message}`), { code, details: message, metadata });
}

const exhausted = (cause: number, message = 'Too many starts for workflow') =>
  grpcError(GRPC.RESOURCE_EXHAUSTED, message, {
    type: 'ResourceExhaustedFailure',
    value: details.ResourceExhaustedFailure.encode({ cause }).finish(),
  });

describe('delivery failures', () => {
  it("RESOURCE_EXHAUSTED with cause BUSY_WORKFLOW is the order's own: retried for the record alone", () => {
    const err = classifyDeliveryFailure(
      exhausted(ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_BUSY_WORKFLOW, 'namespace rate limit exceeded'),
    );
    expect(err).toBeInstanceOf(WorkflowBusyError);
    expect(err).toBeInstanceOf(RecordTransientError);
    expect(err).not.toBeInstanceOf(TransientError); // the partition's gate does not close on it
  });

  it("RESOURCE_EXHAUSTED for any other cause, or none, is Temporal's for everyone: the partition backs off", () => {
    for (const cause of [
      ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_RPS_LIMIT,
      ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_SYSTEM_OVERLOADED,
      ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_PERSISTENCE_LIMIT,
    ]) {
      expect(classifyDeliveryFailure(exhausted(cause, 'BUSY_WORKFLOW'))).toBeInstanceOf(DependencyUnavailableError);
    }
    expect(classifyDeliveryFailure(grpcError(GRPC.RESOURCE_EXHAUSTED, 'Too many starts for workflow'))).toBeInstanceOf(
      DependencyUnavailableError,
    );
  });

  it('UNAUTHENTICATED, PERMISSION_DENIED and a namespace not found or deleted refuse this client for good', () => {
    for (const err of [
      new NamespaceNotFoundError('orders'),
      grpcError(GRPC.FAILED_PRECONDITION, 'x', {
        type: 'NamespaceInvalidStateFailure',
        value: details.NamespaceInvalidStateFailure.encode({
          namespace: 'orders',
          state: temporal.api.enums.v1.NamespaceState.NAMESPACE_STATE_DELETED,
        }).finish(),
      }),
      grpcError(GRPC.UNAUTHENTICATED, 'temporarily unavailable'),
      grpcError(GRPC.PERMISSION_DENIED, 'retry later'),
      grpcError(GRPC.NOT_FOUND, 'try again', {
        type: 'NamespaceNotFoundFailure',
        value: details.NamespaceNotFoundFailure.encode({ namespace: 'orders' }).finish(),
      }),
    ]) {
      const c = classifyDeliveryFailure(err);
      expect(c).toBeInstanceOf(TemporalAccessRefusedError);
      expect(c).toBeInstanceOf(AccessRefusedError);
      expect(c).not.toBeInstanceOf(TransientError);
      expect(c).not.toBeInstanceOf(PermanentError); // no record is at fault: nothing is dead-lettered
    }
    expect(classifyDeliveryFailure(grpcError(GRPC.NOT_FOUND, 'Namespace orders is not found.'))).toBeInstanceOf(
      DependencyUnavailableError,
    );
    // A namespace failing over elsewhere is not gone.
    const notActive = grpcError(GRPC.FAILED_PRECONDITION, 'x', {
      type: 'NamespaceNotActiveFailure',
      value: details.NamespaceNotActiveFailure.encode({ namespace: 'orders' }).finish(),
    });
    expect(classifyDeliveryFailure(notActive)).toBeInstanceOf(DependencyUnavailableError);
  });

  it("INVALID_ARGUMENT is the event's fault; codes are found along the cause chain the SDK wraps them in", () => {
    expect(classifyDeliveryFailure(grpcError(GRPC.INVALID_ARGUMENT, 'unavailable'))).toBeInstanceOf(
      EventRejectedByTemporalError,
    );
    const wrapped = new Error('Failed to signalWithStart', { cause: grpcError(GRPC.UNAUTHENTICATED, 'x') });
    expect(classifyDeliveryFailure(wrapped)).toBeInstanceOf(TemporalAccessRefusedError);
    expect(classifyDeliveryFailure(new Error('PERMISSION_DENIED UNAUTHENTICATED INVALID_ARGUMENT'))).toBeInstanceOf(
      DependencyUnavailableError,
    );
  });
});
