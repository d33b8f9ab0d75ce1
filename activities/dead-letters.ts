/**
 * Dead letters: an event the workflow refused for good joins the bridge's DLQ topic, so every unprocessable event is in
 * one place and `dlq redrive` works for it.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FailureType, type OrderEvent } from '../src/vocabulary/order.js';
import type { DeadLetterForm } from '../src/adapters/dlq/dead-letter.js';
import { attemptFields } from './attempt.js';
import type { ActivityDeps } from './deps.js';

/** An event the workflow could not apply for good, with the failure that said so. */
export interface RefusedEvent {
  event: OrderEvent;
  error: { name: string; message: string };
  /** Workflow time of the refusal, ISO 8601. */
  refusedAt: string;
}

export function createDeadLetterActivities(deps: ActivityDeps) {
  const { logger, metrics } = deps;
  return {
    /**
     * Dead-letters an event the workflow refused for good (the store cannot hold it, a business refusal): the
     * same DLQ topic as the bridge's, with the origin the event carried, so every unprocessable event is in one
     * place and `dlq redrive` works for it. The value is the event as validated (flagged `dlq-value-form`).
     */
    async deadLetterEvent(refused: RefusedEvent): Promise<DeadLetterForm> {
      const { event, error } = refused;
      logger.warn(
        { ...attemptFields(event), errorClass: error.name, err: error.message },
        'dead-lettering an event the workflow refused',
      );
      if (!deps.deadLetters)
        throw ApplicationFailure.nonRetryable(
          'this worker has no dead-letter topic configured',
          FailureType.deadLetterUnavailable,
        );
      const { origin, ...validated } = event;
      const at = new Date(refused.refusedAt);
      const form = await deps.deadLetters.publish({
        key: event.orderId,
        value: JSON.stringify(validated),
        origin: origin ?? { topic: 'unknown', partition: -1, offset: '-1' },
        group: deps.deadLetters.group,
        error,
        attempts: 1,
        firstFailureAt: at,
        lastFailureAt: new Date(),
        stage: 'workflow',
        ids: { eventId: event.eventId, tenantId: event.tenantId, correlationId: event.correlationId },
        valueForm: 'validated-event',
      });
      metrics?.eventsProcessed.inc({ type: event.type, outcome: 'dead-lettered' });
      return form;
    },
  };
}
