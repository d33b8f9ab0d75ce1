/**
 * Error taxonomy. Whether an error is permanent or transient is its type, never a string match:
 * permanent errors are dead-lettered at once, transient ones are retried with backoff and never dead-lettered.
 */

/** Base of every error that retrying cannot fix (bad input, business refusal). */
export class PermanentError extends Error {
  override name = this.constructor.name;
}

/** Base of every error that may pass by itself (a dependency unreachable or overloaded). */
export class TransientError extends Error {
  override name = this.constructor.name;
}

/** Thrown by the envelope parser when a record is not a valid event; names the field and what was expected. */
export class MalformedEventError extends PermanentError {
  constructor(
    message: string,
    /** Dotted path of the offending field, or '' for the whole value. */
    readonly field: string,
  ) {
    super(message);
  }
}

/** Thrown when a dependency (Temporal, Kafka, PostgreSQL, warehouse) cannot be reached or answered 5xx. */
export class DependencyUnavailableError extends TransientError {}

/**
 * The warehouse is down for everyone, not for this order: its circuit is open (recent calls of every order failed), or
 * this call's failure left it open. An order that meets it waits instead of spending its attempts.
 */
export class WarehouseOutageError extends DependencyUnavailableError {}

/** Thrown when the warehouse refuses a request for a reason retrying cannot change (4xx). */
export class WarehouseRejectedError extends PermanentError {}

/** Thrown when PostgreSQL refuses an event's values for good (a data or integrity error): dead-lettered, never retried. */
export class UnstorableEventError extends PermanentError {}

/** Thrown when a request cannot even be built from one order's data (e.g. a value no HTTP header can carry). */
export class InvalidRequestError extends PermanentError {}

/**
 * A failure only this record meets (its order's workflow busy or at one of its limits) while the dependency serves
 * everyone else: retried for this record alone, with its own backoff and budget, never closing the partition's gate;
 * past the budget the record is dead-lettered with the reason, and its partition moves on.
 */
export class RecordTransientError extends Error {
  override name = this.constructor.name;
}

/**
 * A dependency refuses this client for good (its credentials, its permissions, its namespace gone): no wait cures it
 * and no record is at fault, so the role stops — readiness false, the process exits 1 — instead of looking healthy.
 */
export class AccessRefusedError extends Error {
  override name = this.constructor.name;
}
