/**
 * Identity and operator-input rules shared by the workflow and by tools that must not load Temporal (the CLI
 * checks its arguments before any heavy import). Imports nothing, so it is safe in the workflow bundle and in a
 * command's option check alike.
 */

/** Tenant and order ids are restricted to this shape so the workflow id is unambiguous. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** Longest reason an operator may give for a retry (the same bound as a cancellation's reason). */
export const RETRY_REASON_MAX_LENGTH = 1000;

/** Why `reason` cannot be a retry reason, or undefined when it can (checked by the CLI and by the validator). */
export function retryReasonProblem(reason: unknown): string | undefined {
  if (typeof reason !== 'string' || reason.trim() === '') return 'a reason is required (what was fixed, who asked)';
  if (reason.length > RETRY_REASON_MAX_LENGTH) return `the reason is ${reason.length} characters: at most ${RETRY_REASON_MAX_LENGTH}`;
  // PostgreSQL text holds no NUL, and a lone surrogate would be stored as U+FFFD.
  if (reason.includes('\u0000') || /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(reason)) {
    return 'the reason holds a NUL or an unpaired surrogate, which the store cannot hold';
  }
  return undefined;
}
