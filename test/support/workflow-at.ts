/**
 * The workflow code as it was at an earlier commit, bundled for a worker: to run orders on the old code and
 * show that the current code takes them over (and replays their histories) without non-determinism. The
 * sources come from git, so the test needs the repository's history (a clone has it).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { repoRoot } from '../../tools/stack/paths.js';

const quiet = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: console.error,
};

/**
 * Bundles workflows/ as of `commit` (its imports outside workflows/ must be type-only, as the workflow rule says,
 * except src/retry-policies.ts, which imports nothing so the workflow may read its policies; copied too).
 */
export async function workflowBundleAt(commit: string): Promise<WorkflowBundleWithSourceMap> {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8' });
  const sha = git('rev-parse', '--verify', `${commit}^{commit}`).trim();
  // Inside the checkout (not under node_modules, which the bundler does not transpile), so @temporalio/* resolves.
  const dir = join(repoRoot, '.cache', `workflows-at-${sha.slice(0, 12)}`);
  for (const file of git('ls-tree', '-r', '--name-only', sha, 'workflows/', 'src/retry-policies.ts')
    .split('\n')
    .filter(Boolean)) {
    const target = join(dir, file);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, git('show', `${sha}:${file}`));
  }
  return bundleWorkflowCode({ workflowsPath: join(dir, 'workflows', 'index.ts'), logger: quiet });
}
