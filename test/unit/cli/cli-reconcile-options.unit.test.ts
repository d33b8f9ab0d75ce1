/** `fulfilment reconcile`'s bad input: exit 2 naming the option and what was expected, before anything is read. */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../../src/cli/main.js';
import { memoryOutput } from '../../../src/cli/output.js';

async function refused(...argv: string[]): Promise<string> {
  const out = memoryOutput();
  expect(await runCli(['reconcile', ...argv], { out, env: {} })).toBe(2);
  return out.stderr;
}

describe('fulfilment reconcile: bad input', () => {
  it('names the option and what it expected', async () => {
    expect(await refused('--check', 'runs,nope')).toContain(
      "option '--check <names>' argument 'runs,nope' is invalid. expected a comma-separated list of skipped, runs, shipments, status.",
    );
    expect(await refused('--settle', 'soon')).toContain('expected a duration such as 0s, 30s, 2m.');
    expect(await refused('--since', 'yesterday')).toContain("option '--since <time>' argument 'yesterday' is invalid");
    expect(await refused('--tenant', 'a/b')).toContain("option '--tenant <tenant>' argument 'a/b' is invalid");
  });

  it('refuses a window that ends before it starts, --yes without --repair, and --yes without a reason', async () => {
    expect(await refused('--since', '1h', '--until', '2h')).toContain('is not before --until');
    expect(await refused('--yes')).toContain('--yes carries out repairs: expected it with --repair');
    expect(await refused('--repair', '--yes')).toContain('--reason <text> is required with --repair --yes');
  });
});
