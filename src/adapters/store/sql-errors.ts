/**
 * Which PostgreSQL errors no retry can fix. A data exception (SQLSTATE class 22: a value out of range, an
 * invalid text or JSON value) or an integrity violation (class 23, e.g. a trigger's check) is the event's
 * fault, the same on every attempt; everything else — a lost connection, a restart, a serialisation or
 * deadlock failure, a concurrent insert of the same row — may pass and is left to the retry policy.
 */
import { UnstorableEventError } from '../../base/errors.js';

/** Integrity errors that a concurrent writer causes and a retry resolves (it reads the row the other wrote). */
const RETRYABLE_INTEGRITY = new Set(['23505']);

/** The SQLSTATE of a PostgreSQL error (node-postgres sets `code`), or undefined for anything else. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** True when `err` is a PostgreSQL error that retrying the same statement with the same values cannot fix. */
export function isPermanentSqlError(err: unknown): boolean {
  const code = sqlState(err);
  if (code === undefined || RETRYABLE_INTEGRITY.has(code)) return false;
  return code.startsWith('22') || code.startsWith('23');
}

/** Re-throws a permanent PostgreSQL error as UnstorableEventError (naming `what` and the SQLSTATE); others unchanged. */
export function classifySqlError(err: unknown, what: string): unknown {
  if (!isPermanentSqlError(err)) return err;
  return new UnstorableEventError(`PostgreSQL refused ${what}: ${(err as Error).message} (SQLSTATE ${sqlState(err)})`, {
    cause: err,
  });
}
