/** Progress output of the stack: always stderr, so stdout stays clean for `status --json`. */

let quiet = false;

export function setQuiet(q: boolean): void {
  quiet = q;
}

export function isQuiet(): boolean {
  return quiet;
}

/** One progress line, prefixed with `[stack]`. */
export function say(msg: string): void {
  if (!quiet) process.stderr.write(`[stack] ${msg}\n`);
}

/** Written even in quiet mode (problems the user has to see). */
export function warn(msg: string): void {
  process.stderr.write(`[stack] ${msg}\n`);
}

/** An error whose message is meant for the user as is (no stack trace needed). */
export class StackError extends Error {
  override name = 'StackError';
}

export function fmtSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}
