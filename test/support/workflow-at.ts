/**
 * The workflow code as it was at an earlier commit: the replay gate replays an earlier version's histories on it, and
 * a test runs orders on it as an earlier worker version. The sources come from git, so it needs the repository's
 * history (a clone has it).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { repoRoot } from '../../tools/stack/index.js';

const quiet = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: console.error,
};

/** What the workflow code reads, in any commit's layout (a path a commit does not have is left out). */
const READ_BY_WORKFLOWS = [
  'workflows/',
  'src/vocabulary/',
  'src/order.ts',
  'src/order-rules.ts',
  'src/policy/',
  'src/retry-policies.ts',
];

/**
 * Writes workflows/ as of `commit` into the checkout's cache, with the files outside it that the workflows of that
 * commit read (READ_BY_WORKFLOWS): the order's vocabulary — src/vocabulary/ since the folders became the layers,
 * files at the root of src/ before that — and, in commits before the activity options moved beside the workflows,
 * the retry policies at the root of src/. Every other import outside workflows/ is type-only, as the workflow rule
 * says.
 * Returns the entry point (workflows/index.ts of that commit), to bundle or replay with.
 */
export function workflowsAt(commit: string): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8' });
  const sha = git('rev-parse', '--verify', `${commit}^{commit}`).trim();
  // Inside the checkout (not under node_modules, which the bundler does not transpile), so @temporalio/* resolves.
  const dir = join(repoRoot, '.cache', `workflows-at-${sha.slice(0, 12)}`);
  for (const file of git('ls-tree', '-r', '--name-only', sha, ...READ_BY_WORKFLOWS)
    .split('\n')
    .filter(Boolean)) {
    const target = join(dir, file);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, git('show', `${sha}:${file}`));
  }
  return join(dir, 'workflows', 'index.ts');
}

/** The workflow code as it was at `commit`, bundled for a worker. */
export async function workflowBundleAt(commit: string): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath: workflowsAt(commit), logger: quiet });
}
