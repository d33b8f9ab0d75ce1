/**
 * The CLI's error taxonomy and exit codes. Whether a failure is the operator's input or the command's own
 * trouble is a type, never a string match: main.ts maps the type to the exit code.
 */
/** Process exit codes of `fulfilment`. */
export const EXIT = {
  ok: 0,
  /** The command could not do its job (record not found, a dependency unreachable, delivery gave up). */
  failed: 1,
  /** Bad command-line input; nothing was read or changed. */
  usage: 2,
  /** Interrupted by SIGINT after finishing the record in hand; progress so far is kept. */
  interrupted: 130,
} as const;

/** Thrown for bad input before anything is read or changed; the message names the option and what was expected. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Thrown when what the operator asked for does not exist (a DLQ position, a topic). */
export class NotFoundError extends Error {
  override name = 'NotFoundError';
}

/** Thrown when a long-running command was interrupted (SIGINT); whatever was finished stays finished. */
export class InterruptedError extends Error {
  override name = 'InterruptedError';
}
