/**
 * `fulfilment workflow export <workflowId> [--run-id R] [--out path]`: writes one run's history as the JSON
 * `temporal workflow show --output json` writes (the SDK's historyToJSON; historyFromJSON and `workflow replay
 * --file` read it back). By default into this checkout's test/histories/, named after the workflow id, where the
 * replay gate (test/workflow/replay.unit.test.ts) replays every file on every test run: a history exported there
 * and checked in keeps the code from ever breaking that run again. A file that exists is kept unless --force.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { decryptPayloadsIn } from '../../adapters/codec/payload-codec.js';
import { packagePath } from '../../base/package-root.js';
import type { CliContext } from '../context.js';
import { NotFoundError } from '../cli-errors.js';
import { println } from '../output.js';
import { cliTemporalClient } from '../temporal-client.js';
import { checkExportOptions, historyFileName, shownPath, type ExportOptions } from './options.js';
import { notFound } from './replay.js';

export { checkExportOptions, type ExportOptions } from './options.js';

/** The replay gate's directory in this checkout. */
export const HISTORIES_DIR = packagePath('test', 'histories');

export interface ExportSummary {
  workflowId: string;
  runId: string;
  /** The file written, as given or resolved from the current directory. */
  file: string;
  events: number;
  /** Whether the run was still open: its history ends where the run is now. */
  running: boolean;
  /** Whether an existing file was replaced (--force). */
  replaced: boolean;
}

export async function workflowExport(ctx: CliContext, opts: ExportOptions): Promise<ExportSummary> {
  checkExportOptions(opts);
  const { config, out } = ctx;
  const file = resolve(opts.out ?? defaultPath(opts));
  const existed = existsSync(file);
  if (existed && !opts.force) {
    throw new Error(
      `${shownPath(file)} exists already and is kept (a checked-in history guards the runs recorded on the code of its day): choose another --out, or --force to replace it`,
    );
  }
  let client: Client | undefined;
  try {
    client = await cliTemporalClient(config);
    const handle = client.workflow.getHandle(opts.workflowId, opts.runId);
    const [description, history] = await Promise.all([handle.describe(), handle.fetchHistory()]).catch(
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError)
          throw notFound(opts.workflowId, opts.runId, config.TEMPORAL_NAMESPACE, err);
        throw err;
      },
    );
    // Encrypted payloads are written decrypted: the replay gate replays without keys (it is a unit test, anyone runs it).
    decryptPayloadsIn(history, config.payloadEncryption);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, `${historyToJSON(history)}\n`, { flag: opts.force ? 'w' : 'wx' }).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST')
        throw new Error(
          `${shownPath(file)} was created meanwhile and is kept: choose another --out, or --force to replace it`,
          { cause: err },
        );
      throw err;
    });
    const summary: ExportSummary = {
      workflowId: opts.workflowId,
      runId: description.runId,
      file,
      events: history.events?.length ?? 0,
      running: description.status.name === 'RUNNING',
      replaced: existed,
    };
    const open = summary.running ? ' (the run is still open: its history so far)' : '';
    println(
      out,
      `wrote ${shownPath(file)}: ${summary.events} events of ${summary.workflowId} run ${summary.runId}${open}${existed ? ', replacing the file that was there' : ''}`,
    );
    println(out, `replay it: fulfilment workflow replay ${quote(summary.workflowId)} --file ${quote(shownPath(file))}`);
    return summary;
  } finally {
    await client?.connection.close().catch(() => undefined);
  }
}

function defaultPath(opts: ExportOptions): string {
  if (!existsSync(HISTORIES_DIR)) {
    // An installation without the tests (the image leaves test/ out) has no replay gate to add to.
    throw new NotFoundError(`no ${HISTORIES_DIR} here (this installation has no tests): give --out <path>`);
  }
  return resolve(HISTORIES_DIR, historyFileName(opts.workflowId, opts.runId));
}

function quote(s: string): string {
  return /^[\w./:@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
