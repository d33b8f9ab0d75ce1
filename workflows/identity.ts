/**
 * Identity and operator-input rules shared by the workflow and by tools that must not load Temporal (the CLI
 * checks its arguments before any heavy import). Imports nothing, so it is safe in the workflow bundle and in a
 * command's option check alike.
 */

/** Tenant and order ids are restricted to this shape so the workflow id is unambiguous. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** Longest reason an operator may give for a retry (the same bound as a cancellation's reason). */
export const RETRY_REASON_MAX_LENGTH = 1000;

/**
 * How an operator resolves an order whose shipment the warehouse refused to recall:
 * - `retry-recall`: ask the warehouse to recall it again (after the refusal's cause was fixed there);
 * - `recalled-by-hand`: the shipment was stopped or taken back outside this service; record the order cancelled.
 */
export type RecallResolution = 'retry-recall' | 'recalled-by-hand';
export const RECALL_RESOLUTIONS: readonly RecallResolution[] = ['retry-recall', 'recalled-by-hand'];

/** Longest name an operator may give as who asked (`--by`). */
export const OPERATOR_MAX_LENGTH = 200;

/** Why `reason` cannot be an operator's reason (a retry, a resolution), or undefined when it can (CLI and validators). */
export function retryReasonProblem(reason: unknown): string | undefined {
  if (typeof reason !== 'string' || reason.trim() === '') return 'a reason is required (what was fixed, who asked)';
  if (reason.length > RETRY_REASON_MAX_LENGTH)
    return `the reason is ${reason.length} characters: at most ${RETRY_REASON_MAX_LENGTH}`;
  return unstorableText(reason, 'the reason');
}

/** Why `by` cannot name who asked for an operator's action, or undefined when it can (absent is allowed). */
export function operatorProblem(by: unknown): string | undefined {
  if (by === undefined) return undefined;
  if (typeof by !== 'string' || by.trim() === '') return 'who asked (--by) must be a non-empty name';
  if (by.length > OPERATOR_MAX_LENGTH)
    return `who asked (--by) is ${by.length} characters: at most ${OPERATOR_MAX_LENGTH}`;
  return unstorableText(by, 'who asked (--by)');
}

/** PostgreSQL text holds no NUL, and a lone surrogate would be stored as U+FFFD. */
function unstorableText(text: string, what: string): string | undefined {
  if (text.includes('\u0000') || /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text)) {
    return `${what} holds a NUL or an unpaired surrogate, which the store cannot hold`;
  }
  return undefined;
}
