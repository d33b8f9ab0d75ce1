/**
 * `pip download` for the stack's fetches, with a failure that says what happened: offline (or with the package index
 * out of reach), pip ends with "No matching distribution found", as if the release did not exist; its log shows the
 * connection errors behind it, and the error then says the package index is unreachable.
 */
import { readFileSync } from 'node:fs';
import { StackError } from './log.js';
import { runWithProgress } from './proc.js';

/** What pip logs when it cannot connect to the index (a refused or timed-out connection, no name resolution, a proxy). */
const CONNECTION_FAILED =
  /NewConnectionError|Failed to establish a new connection|ConnectTimeoutError|Temporary failure in name resolution|Name or service not known|Network is unreachable|ProxyError|Max retries exceeded/;

/**
 * Why pip could not reach the index, from its output (e.g. "[Errno 111] Connection refused"), or undefined when its
 * output shows no connection error.
 */
export function unreachableIndex(output: string): string | undefined {
  const line = output.split('\n').find((l) => CONNECTION_FAILED.test(l));
  if (line === undefined) return undefined;
  return /\[Errno -?\d+\] [^'")\]]+/.exec(line)?.[0].trim() ?? (CONNECTION_FAILED.exec(line)?.[0] as string);
}

/** The output of the latest command in a log runWithProgress appended to. */
function lastRun(logFile: string): string {
  try {
    const text = readFileSync(logFile, 'utf8');
    return text.slice(text.lastIndexOf('\n--- '));
  } catch {
    return '';
  }
}

/**
 * Runs `python -m pip <args>` (a download) with progress lines into `logFile`. When it fails because the package index
 * cannot be reached, the error says so and what to do (`offline`); any other failure is pip's own.
 */
export async function pipDownload(o: {
  label: string;
  python: string;
  args: string[];
  logFile: string;
  offline: string;
}): Promise<void> {
  try {
    await runWithProgress(o.label, o.python, ['-m', 'pip', ...o.args], { logFile: o.logFile, everySec: 5 });
  } catch (e) {
    const why = e instanceof StackError ? unreachableIndex(lastRun(o.logFile)) : undefined;
    if (why === undefined) throw e;
    throw new StackError(
      `the package index is unreachable (pip could not connect: ${why}) for ${o.label}. ${o.offline} (log: ${o.logFile})`,
    );
  }
}
