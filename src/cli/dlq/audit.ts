/**
 * Who changed the DLQ, when, and what came of it. Every `dlq redrive` and `dlq purge` (dry runs included) ends with
 * one audit line on stderr: a JSON object whose `audit` field names the command, with the operator, the time, what
 * was selected and the outcome counts. A redrive also writes who sent each record into its redrive log
 * (redrive-log.ts). Light on purpose: main.ts parses `--operator` with this module before any command module is loaded.
 */
import { userInfo } from 'node:os';
import { InvalidArgumentError } from 'commander';
import { eprintln, type Output } from '../output.js';

/** What `--operator` accepts, for messages. */
export const OPERATOR_EXPECTED = 'a name of 1–128 characters without control characters, such as jane.doe';

/** `--operator`: the name recorded as having run the command. */
export function operatorName(value: string): string {
  const v = value.trim();
  // eslint-disable-next-line no-control-regex
  if (v === '' || v.length > 128 || /[\u0000-\u001f\u007f-\u009f]/.test(v))
    throw new InvalidArgumentError(`expected ${OPERATOR_EXPECTED}.`);
  return v;
}

/** The operator when `--operator` is not given: the OS user running the CLI (USER/LOGNAME when it has no passwd entry). */
export function defaultOperator(): string {
  try {
    const name = userInfo().username;
    if (name) return name;
  } catch {
    // no passwd entry for this uid (containers): fall back to the environment
  }
  return process.env.USER || process.env.LOGNAME || 'unknown';
}

/** One audit record. `audit` names the command (`dlq redrive`, `dlq purge`). */
export interface AuditEntry {
  audit: string;
  /** When the command ran, RFC 3339. */
  at: string;
  operator: string;
  dlqTopic: string;
  dryRun: boolean;
  [detail: string]: unknown;
}

/** Writes the audit line to stderr (results stay alone on stdout). */
export function audit(out: Output, entry: AuditEntry): void {
  eprintln(out, JSON.stringify(entry));
}
