/** `fulfilment workflow replay|export`: an order's workflow history, registered on the program by main.ts. */
import { Option, type Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as workflowArg from './options.js';

export function registerWorkflowCommands(program: Command, run: Runner): void {
  const workflow = program
    .command('workflow')
    .description("debug an order's workflow: replay its history on the current code, export it for the replay gate");

  workflow
    .command('replay')
    .description(
      "replay a run's history on this checkout's workflow code (the worker's bundle and options): exit 0 if it decides as it did, 1 with the SDK's message and the event where it diverged if not",
    )
    .argument(
      '[workflowId]',
      'the workflow (e.g. order/acme-eu/o-1008); with --file, only the id it is replayed under (default: the file name)',
      workflowArg.workflowId,
    )
    .option('--run-id <id>', 'the run (default: the latest)', workflowArg.runId)
    .option(
      '--file <path>',
      'an exported history (`fulfilment workflow export`, `temporal workflow show --output json`) instead of fetching it',
      workflowArg.path,
    )
    .addOption(
      new Option(
        '--workflows <path>',
        'development: the workflows entry point to replay against instead of workflows/index.ts',
      )
        .argParser(workflowArg.path)
        .hideHelp(),
    )
    .option('--json', 'print the outcome as one JSON object')
    .action(
      async (
        workflowId: string | undefined,
        flags: { runId?: string; file?: string; workflows?: string; json?: boolean },
      ) => {
        const opts: workflowArg.ReplayOptions = {
          workflowId,
          runId: flags.runId,
          file: flags.file,
          workflowsPath: flags.workflows,
          json: flags.json,
        };
        workflowArg.checkReplayOptions(opts);
        await runCommand(run, opts, async () => (await import('./replay.js')).workflowReplay);
      },
    );

  workflow
    .command('export')
    .description(
      "write a run's history as JSON (the format `temporal workflow show --output json` writes) into test/histories/, where the replay gate replays it on every test run",
    )
    .argument('<workflowId>', 'the workflow (e.g. order/acme-eu/o-1008)', workflowArg.workflowId)
    .option('--run-id <id>', 'the run (default: the latest)', workflowArg.runId)
    .option(
      '--out <path>',
      'where to write (default: test/histories/<workflow id made a file name>.json)',
      workflowArg.path,
    )
    .option('--force', 'replace the file if it exists (default: keep it and refuse)')
    .action(async (workflowId: string, flags: { runId?: string; out?: string; force?: boolean }) => {
      const opts: workflowArg.ExportOptions = { workflowId, runId: flags.runId, out: flags.out, force: flags.force };
      workflowArg.checkExportOptions(opts);
      await runCommand(run, opts, async () => (await import('./export.js')).workflowExport);
    });
}
