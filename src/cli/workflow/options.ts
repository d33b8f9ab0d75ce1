/**
 * What `workflow replay` and `workflow export` are asked to do, and the checks of it made before anything is
 * loaded: main.ts parses the arguments with these (bad input exits 2 without loading Temporal), and the commands
 * check again for callers that skip the CLI. Imports nothing heavy.
 */
import { relative } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { UsageError } from '../cli-errors.js';

export interface ReplayOptions {
  /** The workflow whose history is replayed; with `file`, only the id the replay runs under (default: the file's name). */
  workflowId?: string;
  /** A run of the workflow on the server; default its latest run. Not with `file`. */
  runId?: string;
  /** An exported history (the JSON `temporal workflow show --output json` and `workflow export` write) instead of the server's. */
  file?: string;
  /** Development: replay against the workflows entry point at this path instead of this checkout's workflows/index.ts. */
  workflowsPath?: string;
  /** Print the outcome as one JSON object. */
  json?: boolean;
}

export interface ExportOptions {
  workflowId: string;
  runId?: string;
  /** Where to write; default test/histories/<name derived from the workflow id>.json in this checkout. */
  out?: string;
  /** Replace a file that exists (without it, an existing file is kept and the export refused). */
  force?: boolean;
}

/** Longest workflow id accepted: Temporal's default limit on ids (limit.maxIDLength). */
const MAX_WORKFLOW_ID_LENGTH = 1000;
const RUN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function workflowIdProblem(id: string): string | undefined {
  if (id.length === 0 || id.length > MAX_WORKFLOW_ID_LENGTH || /\p{Cc}/u.test(id)) {
    return `expected a workflow id of 1–${MAX_WORKFLOW_ID_LENGTH} characters without control characters (e.g. order/acme-eu/o-1008)`;
  }
  return undefined;
}

export function runIdProblem(id: string): string | undefined {
  return RUN_ID.test(id) ? undefined : 'expected a run id, a UUID such as 0f8fad5b-d9cb-469f-a165-70867728950e';
}

function parser(problem: (v: string) => string | undefined): (value: string) => string {
  return (value) => {
    const p = problem(value);
    if (p) throw new InvalidArgumentError(`${p}.`);
    return value;
  };
}

/** Commander parser of the `<workflowId>` argument. */
export const workflowId = parser(workflowIdProblem);
/** Commander parser of --run-id. */
export const runId = parser(runIdProblem);
/** Commander parser of a path option (--file, --out, --workflows). */
export const path = parser((v) => (v.trim() === '' ? 'expected a path' : undefined));

/** Throws UsageError for options no replay may run with; the same checks as the parsers, for in-process callers. */
export function checkReplayOptions(opts: ReplayOptions): void {
  const problem =
    (opts.workflowId !== undefined ? workflowIdProblem(opts.workflowId) : undefined) ??
    (opts.runId !== undefined ? runIdProblem(opts.runId) : undefined);
  if (problem) throw new UsageError(`workflow replay: ${problem}`);
  if (opts.file === undefined && opts.workflowId === undefined) {
    throw new UsageError(
      'workflow replay: give the workflow id (its history is fetched from Temporal) or --file <history.json>',
    );
  }
  if (opts.file !== undefined && opts.runId !== undefined) {
    throw new UsageError(
      'workflow replay: --run-id picks a run on the server, and --file holds one run already: give one of them',
    );
  }
}

export function checkExportOptions(opts: ExportOptions): void {
  const problem =
    workflowIdProblem(opts.workflowId) ?? (opts.runId !== undefined ? runIdProblem(opts.runId) : undefined);
  if (problem) throw new UsageError(`workflow export: ${problem}`);
}

/**
 * The file name a workflow's history is exported under by default: the workflow id with every run of characters
 * other than A–Z a–z 0–9 . _ - made one `-` (order/acme-eu/o-1008 → order-acme-eu-o-1008), the first 8 characters
 * of the run id after it when a run was named, `.json` last. Never empty, never hidden, never a path.
 */
export function historyFileName(workflowId: string, runId?: string): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|-+$/g, '');
  const base = safe(workflowId).slice(0, 120) || 'workflow';
  return `${base}${runId ? `-${safe(runId).slice(0, 8)}` : ''}.json`;
}

/** A path as shown to the operator: relative to the current directory when it is inside it. */
export function shownPath(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel && !rel.startsWith('..') ? rel : file;
}
