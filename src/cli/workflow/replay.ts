/**
 * `fulfilment workflow replay <workflowId> [--run-id R] [--file F]`: replays one run's history against the workflow
 * code of this checkout, with the options the worker runs it with (src/domain/temporal.ts workflowCodeOptions: the same
 * bundle, interceptors, data converter), to find out whether the code decides today what it decided then.
 *
 *   history   from Temporal (the handle's fetchHistory: the latest run, or --run-id), or from a file in the JSON
 *             `temporal workflow show --output json` and `workflow export` write (the SDK's historyFromJSON)
 *   replay    Worker.runReplayHistories, no server involved: only the workflow code runs, no activity
 *   outcome   deterministic: what was replayed (workflow id, run id, events) and exit 0; a nondeterminism error:
 *             the SDK's message, the event where replay diverged and what that event is, exit 1
 *
 * The replay gate over test/histories/ (test/workflow/replay.unit.test.ts) runs every file through replayHistory.
 */
import { readFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import {
  DefaultLogger,
  IllegalStateError,
  Runtime,
  Worker,
  makeTelemetryFilterString,
  type History,
} from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import type { Logger } from '../../base/log.js';
import type { Config } from '../../base/config.js';
import { WORKFLOWS_PATH, workflowCodeOptions } from '../../domain/temporal.js';
import type { CliContext } from '../context.js';
import { NotFoundError } from '../cli-errors.js';
import { println } from '../output.js';
import { cliTemporalClient } from '../temporal-client.js';
import { checkReplayOptions, shownPath, type ReplayOptions } from './options.js';

export { checkReplayOptions, type ReplayOptions } from './options.js';

/** Where the replayed history diverged from what the code does now, as far as the SDK's message says. */
export interface Divergence {
  /** The history event the SDK names (its `HistoryEvent(id: N, …)`), or null when its message names none. */
  eventId: number | null;
  /** That event's type and what it is about (activity type, timer id, marker, signal), from the history. */
  event: string | null;
}

export interface ReplayOutcome {
  workflowId: string;
  runId: string | null;
  /** `server` (fetched from Temporal) or the file's path. */
  source: string;
  /** The workflow code replayed against: its entry point. */
  workflowsPath: string;
  /** Events in the history replayed. */
  events: number;
  /** Whether the run was still open when its history was fetched (null for a file). */
  running: boolean | null;
  deterministic: boolean;
  /** `nondeterminism` (the code decides otherwise now) or `failed` (the workflow task failed; another replay error). */
  failure: 'nondeterminism' | 'failed' | null;
  /** The SDK's message, verbatim. */
  message: string | null;
  divergence: Divergence | null;
}

/** The history does not replay on the workflow code; the message has the SDK's and the event. Exit 1. */
export class ReplayDivergedError extends Error {
  override name = 'ReplayDivergedError';
  constructor(readonly outcome: ReplayOutcome) {
    super(describeFailure(outcome).join('\n'));
  }
}

export async function workflowReplay(ctx: CliContext, opts: ReplayOptions): Promise<ReplayOutcome> {
  checkReplayOptions(opts);
  const { history, workflowId, runId, running, source } =
    opts.file !== undefined
      ? await historyFromFile(opts.file, opts.workflowId)
      : await historyFromServer(ctx, opts.workflowId!, opts.runId);
  const outcome = await replayHistory(history, {
    workflowId,
    runId,
    running,
    source,
    workflowsPath: opts.workflowsPath,
    logger: ctx.logger,
    config: ctx.config,
  });
  if (opts.json) println(ctx.out, JSON.stringify(outcome));
  if (!outcome.deterministic) throw new ReplayDivergedError(outcome);
  if (!opts.json) println(ctx.out, describeSuccess(outcome));
  return outcome;
}

/**
 * Replays `history` (a History, or its JSON as exported) on the workflow code — this checkout's, or the entry
 * point `workflowsPath` — with the worker's own options. Resolves with the outcome, deterministic or not; rejects
 * only when no replay could run (a history the SDK cannot read, a bundle that does not build).
 */
export async function replayHistory(
  history: History | unknown,
  opts: {
    workflowId: string;
    runId?: string | null;
    running?: boolean | null;
    source?: string;
    workflowsPath?: string;
    logger?: Logger;
    config?: Pick<Config, 'payloadEncryption'>;
  },
): Promise<ReplayOutcome> {
  const decoded = decodeHistory(history);
  quietRuntime(opts.logger);
  const workflowsPath = opts.workflowsPath === undefined ? WORKFLOWS_PATH : resolve(opts.workflowsPath);
  const code = await workflowCodeOptions({ workflowsPath, ...(opts.config ? { config: opts.config } : {}) });
  let result: { runId: string; error?: unknown } | undefined;
  for await (const r of Worker.runReplayHistories({ ...code, replayName: 'fulfilment-replay' }, [
    { workflowId: opts.workflowId, history: decoded },
  ]))
    result = r;
  if (!result) throw new Error(`nothing was replayed for ${opts.workflowId}: the SDK returned no result`);
  const error = result.error;
  const message = error === undefined ? null : error instanceof Error ? error.message : String(error);
  const failure = error === undefined ? null : error instanceof DeterminismViolationError ? 'nondeterminism' : 'failed';
  return {
    workflowId: opts.workflowId,
    runId: opts.runId ?? (result.runId || startedRunId(decoded)),
    source: opts.source ?? 'history',
    workflowsPath,
    events: decoded.events?.length ?? 0,
    running: opts.running ?? null,
    deterministic: error === undefined,
    failure,
    message,
    divergence: message === null ? null : divergence(decoded, message),
  };
}

async function historyFromServer(ctx: CliContext, workflowId: string, runId: string | undefined) {
  const { config } = ctx;
  let client: Client | undefined;
  try {
    client = await cliTemporalClient(config);
    const handle = client.workflow.getHandle(workflowId, runId);
    try {
      const description = await handle.describe();
      const history = await handle.fetchHistory();
      return {
        history,
        workflowId,
        runId: description.runId,
        running: description.status.name === 'RUNNING',
        source: 'server',
      };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw notFound(workflowId, runId, config.TEMPORAL_NAMESPACE, err);
      throw err;
    }
  } finally {
    await client?.connection.close().catch(() => undefined);
  }
}

/** The history of a workflow (or a run of it) Temporal does not have, as the operator can act on it. */
export function notFound(
  workflowId: string,
  runId: string | undefined,
  namespace: string,
  cause?: unknown,
): NotFoundError {
  return new NotFoundError(
    `no workflow ${workflowId}${runId ? ` run ${runId}` : ''} in namespace ${namespace} (TEMPORAL_NAMESPACE): never started there, or closed longer ago than the namespace's retention`,
    { cause },
  );
}

async function historyFromFile(file: string, workflowId: string | undefined) {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new NotFoundError(`--file ${file}: no such file`, { cause: err });
    throw new Error(`--file ${file}: ${(err as Error).message}`, { cause: err });
  }
  let history: History;
  try {
    history = historyFromJSON(JSON.parse(text));
    if (!history.events?.length) throw new TypeError('it has no events');
  } catch (err) {
    throw new Error(
      `--file ${file} is not a workflow history (expected the JSON \`temporal workflow show --output json\` or \`fulfilment workflow export\` writes): ${(err as Error).message}`,
      { cause: err },
    );
  }
  return {
    history,
    workflowId: workflowId ?? basename(file).replace(/\.json$/i, ''),
    runId: startedRunId(history),
    running: null,
    source: file,
  };
}

/** A History as the SDK holds it: fetched ones are already; exported JSON (ids as strings) is read with historyFromJSON. */
function decodeHistory(history: History | unknown): History {
  const h = history as History | null;
  if (typeof h !== 'object' || h === null || !Array.isArray(h.events))
    throw new TypeError('expected a workflow history: an object with an array of events');
  return typeof h.events[0]?.eventId === 'string' ? historyFromJSON(h) : h;
}

/** The run id a history's first event records (what the SDK replays the run under). */
function startedRunId(history: History): string | null {
  return history.events?.[0]?.workflowExecutionStartedEventAttributes?.originalExecutionRunId || null;
}

// The SDK names the event as core's state machines saw it: "… does not handle this event: HistoryEvent(id: 6, ActivityTaskScheduled)".
const EVENT_IN_MESSAGE = [/HistoryEvent\(id: (\d+)/, /\bevent(?: id)?[ :#]+(\d+)\b/i];

/** The event the SDK's message names, and what that event is in the history. */
export function divergence(history: History, message: string): Divergence {
  const id = EVENT_IN_MESSAGE.map((re) => re.exec(message)?.[1]).find((m) => m !== undefined);
  const eventId =
    id === undefined
      ? (patchMarkerEventId(history, message) ?? localActivityMarkerEventId(history, message))
      : Number(id);
  const event = eventId === null ? undefined : history.events?.find((e) => Number(e.eventId) === eventId);
  return { eventId, event: event ? describeEvent(event) : null };
}

type HistoryEvent = NonNullable<History['events']>[number];

// A patch the code no longer calls: "Non-deprecated patch marker encountered for change cheaper-orders, but …" names
// the change, not the event; the event is the patch's marker (core_patch, its details naming the change id).
const PATCH_IN_MESSAGE = /patch marker encountered for change (\S+?),/;

/** The id of the marker event of the patch the SDK's message names, or null. */
function patchMarkerEventId(history: History, message: string): number | null {
  const change = PATCH_IN_MESSAGE.exec(message)?.[1];
  if (change === undefined) return null;
  const marker = history.events?.find((e) => {
    const m = e.markerRecordedEventAttributes;
    if (!m || m.markerName !== 'core_patch') return false;
    return Object.values(m.details ?? {}).some((p) =>
      (p.payloads ?? []).some(
        (x) => x.data != null && Buffer.from(x.data).toString('utf8').includes(JSON.stringify(change)),
      ),
    );
  });
  return marker ? Number(marker.eventId) : null;
}

// A local activity the code no longer runs there: "Missing associated machine for LocalActivity(1)" names the run's n-th
// local activity (counted from 1), whose result the history keeps as its n-th core_local_activity marker.
const LOCAL_ACTIVITY_IN_MESSAGE = /machine for LocalActivity\((\d+)\)/;

/** The id of the marker event of the local activity the SDK's message names, or null. */
function localActivityMarkerEventId(history: History, message: string): number | null {
  const seq = Number(LOCAL_ACTIVITY_IN_MESSAGE.exec(message)?.[1] ?? NaN);
  if (!Number.isInteger(seq) || seq < 1) return null;
  const markers = (history.events ?? []).filter(
    (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
  );
  const marker = markers[seq - 1];
  return marker ? Number(marker.eventId) : null;
}

/** `ActivityTaskScheduled (activity applyEvent)`: the event's type as the SDK names it, and what it is about. */
function describeEvent(e: HistoryEvent): string {
  // Whichever `…EventAttributes` field is set says the type, for a fetched history (numeric enum) and a file alike.
  const field = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k] != null);
  const type = field
    ? field.charAt(0).toUpperCase() + field.slice(1, -'EventAttributes'.length)
    : String(e.eventType ?? 'unknown');
  const about =
    (e.activityTaskScheduledEventAttributes &&
      `activity ${e.activityTaskScheduledEventAttributes.activityType?.name ?? '?'}`) ||
    (e.timerStartedEventAttributes && `timer ${e.timerStartedEventAttributes.timerId ?? '?'}`) ||
    (e.markerRecordedEventAttributes && `marker ${e.markerRecordedEventAttributes.markerName ?? '?'}`) ||
    (e.workflowExecutionSignaledEventAttributes &&
      `signal ${e.workflowExecutionSignaledEventAttributes.signalName ?? '?'}`) ||
    (e.upsertWorkflowSearchAttributesEventAttributes &&
      `search attributes ${Object.keys(e.upsertWorkflowSearchAttributesEventAttributes.searchAttributes?.indexedFields ?? {}).join(', ')}`) ||
    undefined;
  return about ? `${type}: ${about}` : type;
}

function describeSuccess(o: ReplayOutcome): string {
  const run = o.runId ?? 'unknown';
  const state = o.running === true ? ' (the run is still open: its history so far)' : '';
  return `replayed ${o.workflowId} run ${run}: ${o.events} events from ${o.source}${state}, deterministic on ${shownPath(o.workflowsPath)}`;
}

function describeFailure(o: ReplayOutcome): string[] {
  const at =
    o.divergence?.eventId != null
      ? `event ${o.divergence.eventId}${o.divergence.event ? ` (${o.divergence.event})` : ''}`
      : 'an event the SDK does not name';
  const what = o.failure === 'nondeterminism' ? `nondeterminism at ${at}` : `the workflow task failed at ${at}`;
  return [
    `${o.workflowId} run ${o.runId ?? 'unknown'} (${o.events} events from ${o.source}) does not replay on ${shownPath(o.workflowsPath)}: ${what}`,
    `  SDK: ${o.message}`,
    o.failure === 'nondeterminism'
      ? "  the code now issues other commands than the history recorded: ship it as a new worker version, and keep this run's version running until it closes (docs/changing-the-workflow.md)"
      : '  see the SDK message for the failure the workflow code raised while replaying',
  ];
}

/**
 * The Temporal runtime of a CLI process, installed before the replay worker starts: the SDK's and core's logs go to
 * the CLI's logger (silent unless --log-level), not to the terminal. A runtime installed already (by a test, or
 * the service in the same process) is left as it is.
 */
function quietRuntime(logger: Logger | undefined): void {
  const log = logger?.child({ component: 'temporal-sdk' });
  try {
    Runtime.install({
      logger: new DefaultLogger('WARN', ({ level, message, meta }) => {
        if (!log) return;
        log[level === 'ERROR' ? 'error' : level === 'WARN' ? 'warn' : 'debug'](meta ?? {}, message);
      }),
      telemetryOptions: {
        logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) },
      },
    });
  } catch (err) {
    if (!(err instanceof IllegalStateError)) throw err;
  }
}
