/**
 * The CLI's command lists stay true: every command the families register (src/cli/main.ts COMMANDS) is listed in
 * `fulfilment --help`'s overview, and docs/cli.md quotes that help exactly as the program prints it.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram, runCli } from '../../../src/cli/main.js';
import { memoryOutput } from '../../../src/cli/output.js';

/** The full names of the visible commands that do something (`dlq list`, `lag`), as registered. */
function leafCommands(command: Command, prefix = ''): string[] {
  return command.commands
    .filter((c) => !(c as unknown as { _hidden?: boolean })._hidden)
    .flatMap((c) => {
      const name = `${prefix}${c.name()}`;
      return c.commands.length > 0 ? leafCommands(c, `${name} `) : [name];
    });
}

describe('the CLI’s command lists', () => {
  const registered = leafCommands(buildProgram(memoryOutput(), async () => undefined));

  it('has commands to check', () => {
    expect(registered.length).toBeGreaterThan(20);
  });

  it('lists every registered command in --help’s overview, each at the start of its own line', async () => {
    const out = memoryOutput();
    expect(await runCli(['--help'], { out, env: {} })).toBe(0);
    const overview = out.stdout.slice(out.stdout.indexOf('All commands:'));
    const lines = overview.split('\n');
    const unlisted = registered.filter((c) => !lines.some((l) => l === `  ${c}` || l.startsWith(`  ${c} `)));
    expect(unlisted).toEqual([]);
  });

  it('docs/cli.md quotes --help exactly as the program prints it', async () => {
    const out = memoryOutput();
    await runCli(['--help'], { out, env: {} });
    const doc = readFileSync(new URL('../../../docs/cli.md', import.meta.url), 'utf8');
    expect(doc).toContain(`$ npx fulfilment --help\n${out.stdout}`);
  });
});
