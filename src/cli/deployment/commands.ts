/** `fulfilment deployment show|ramp|current|rollback|retire`: the worker deployment's versions, registered by main.ts. */
import { InvalidArgumentError, type Command } from 'commander';
import { runCommand, type Runner } from '../command.js';
import * as arg from '../options.js';
import type { DeploymentOptions, RoutingOptions } from './deployment.js';

/** A build id as WORKER_BUILD_ID takes it: letters, digits, - and _. */
function buildId(value: string): string {
  const v = value.trim();
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(v))
    throw new InvalidArgumentError('expected a build id: letters, digits, - and _ (as WORKER_BUILD_ID).');
  return v;
}

function percent(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 100)
    throw new InvalidArgumentError('expected a share of new orders in percent, 0–100 (e.g. 10 or 2.5).');
  return n;
}

const FORCE =
  'go ahead even if no worker of the version polls (refused otherwise: new orders would wait with nothing to run them)';

/** Over 80 lines: one declaration per subcommand (its arguments and help) — a list, not logic. */
export function registerDeploymentCommands(program: Command, run: Runner): void {
  const deployment = program
    .command('deployment')
    .description(
      "the worker deployment's versions (one per build): which takes new orders, how many orders each still runs; ramp, promote, roll back, retire",
    );
  const named = (cmd: Command) =>
    cmd.option(
      '--deployment <name>',
      'the worker deployment (default WORKER_DEPLOYMENT_NAME, else TEMPORAL_TASK_QUEUE)',
      arg.name,
    );

  named(deployment.command('show'))
    .description(
      'every version of the deployment: its status (current, ramping, draining, drained, inactive), when it was created, and its open runs (each pinned to the version it started on)',
    )
    .option('--json', 'print one JSON object')
    .action(async (flags: DeploymentOptions) => {
      await runCommand(run, flags, async () => (await import('./deployment.js')).deploymentShow);
    });

  named(deployment.command('current'))
    .description(
      'make a version current: every new order starts on it from now on (orders already running stay on theirs); a ramp of that version ends with it',
    )
    .argument('<build-id>', 'the version (a worker of it must be polling)', buildId)
    .option('--force', FORCE)
    .action(async (id: string, flags: RoutingOptions) => {
      await runCommand(run, { ...flags, buildId: id }, async () => (await import('./deployment.js')).deploymentCurrent);
    });

  named(deployment.command('ramp'))
    .description(
      'send a share of new orders to a version that is not current (the rest to the current one); 0 keeps it ramping at none (the only share a version without live workers takes unforced)',
    )
    .argument('<build-id>', 'the version (a worker of it must be polling)', buildId)
    .argument('<percent>', 'the share of new orders, 0–100', percent)
    .option('--force', FORCE)
    .action(async (id: string, share: number, flags: RoutingOptions) => {
      await runCommand(
        run,
        { ...flags, buildId: id, percent: share },
        async () => (await import('./deployment.js')).deploymentRamp,
      );
    });

  named(deployment.command('rollback'))
    .description(
      'make the version that was current before the current one current again (never a version that only ramped): new orders go back to it at once; orders started on the rolled-back version finish there',
    )
    .option('--force', FORCE)
    .action(async (flags: RoutingOptions) => {
      await runCommand(run, flags, async () => (await import('./deployment.js')).deploymentRollback);
    });

  named(deployment.command('retire'))
    .description(
      'remove a drained version (no open run pinned to it) once its workers have stopped; Temporal refuses one that is current, ramping, still running orders, or still polled',
    )
    .argument('<build-id>', 'the version', buildId)
    .action(async (id: string, flags: DeploymentOptions) => {
      await runCommand(run, { ...flags, buildId: id }, async () => (await import('./deployment.js')).deploymentRetire);
    });
}
