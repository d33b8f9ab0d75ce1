/**
 * What a command family's registration gets besides the program: the runner its actions hand their work to, once their
 * options passed their checks. The runner makes the context (configuration, output, logger, signal) and turns errors
 * into exit codes (main.ts); the work imports the command's module — with it kafkajs, Temporal or pg — only then.
 */
import type { CliContext } from './context.js';

export type Runner = (work: (ctx: CliContext) => Promise<unknown>) => Promise<void>;

/** Hands `run` the command `load` imports (only then), called with `opts` once they passed their checks. */
export function runCommand<O>(
  run: Runner,
  opts: O,
  load: () => Promise<(ctx: CliContext, opts: O) => Promise<unknown>>,
): Promise<void> {
  return run(async (ctx) => (await load())(ctx, opts));
}
