/**
 * The replay gate. Every history under test/histories/ replays on the current workflow code, and every history in a
 * folder named at-<commit> there (test/histories/at-963981f/) on the workflow code of that commit, bundled from git
 * (test/support/workflow-at.ts) — each through the same replay `fulfilment workflow replay --file` runs
 * (src/cli/workflow/replay.ts: the worker's bundle and options). Orders are pinned to the worker version they started
 * on, so a version's histories need only replay on its own code: when a change makes the current histories diverge,
 * they move to the at-<commit> folder of the last commit they replay on, and the change's own runs are recorded anew
 * (docs/changing-the-workflow.md). Histories come from real runs: `fulfilment workflow export <workflowId>` writes
 * one, as does test/support/record-histories.ts. No stack: only the workflow code runs, so this is a unit test
 * (`npm run test:unit` runs it, and so does `npm test`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistory } from '../../src/cli/workflow/replay.js';
import { workflowsAt } from '../support/workflow-at.js';

const dir = new URL('../histories/', import.meta.url);
const entries = readdirSync(dir, { withFileTypes: true });
// Every file: one that is not a history fails the gate rather than being passed over.
const files = (at: URL) =>
  readdirSync(at, { withFileTypes: true })
    .filter((f) => f.isFile())
    .map((f) => f.name)
    .sort();
const current = files(dir);
const earlier = entries
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const history = (file: string, at = dir): unknown => JSON.parse(readFileSync(new URL(file, at), 'utf8'));

describe('replay of recorded histories', () => {
  it('has histories of the current code to replay, each a .json file; earlier versions in at-<commit>/', () => {
    expect(current.length).toBeGreaterThan(0);
    expect(current.filter((f) => !f.endsWith('.json'))).toEqual([]);
    expect(earlier.filter((d) => !/^at-[0-9a-f]{7,40}$/.test(d))).toEqual([]);
  });

  it.each(current)('%s replays deterministically', async (file) => {
    const outcome = await replayHistory(history(file), { workflowId: file, source: file });
    expect(outcome.message).toBeNull();
    expect(outcome.deterministic).toBe(true);
    expect(outcome.events).toBeGreaterThan(0);
  });

  // The control: the gate does catch a change that issues another command (a copy of the workflow that starts a
  // timer first), naming the event where the history diverged.
  it.each(current)('%s does not replay on a deliberately changed copy of the workflow', async (file) => {
    const workflowsPath = fileURLToPath(new URL('./replay-diverging-workflows.ts', import.meta.url));
    const outcome = await replayHistory(history(file), { workflowId: file, source: file, workflowsPath });
    expect(outcome.deterministic).toBe(false);
    expect(outcome.failure).toBe('nondeterminism');
    expect(outcome.message).toContain('Nondeterminism error');
    expect(outcome.divergence?.eventId).toBeGreaterThan(1);
    expect(outcome.divergence?.event).toMatch(/^\w+/);
  });

  describe.each(earlier)('%s: an earlier version, on its own code', (folder) => {
    const at = new URL(`${folder}/`, dir);
    const commit = folder.slice('at-'.length);
    it('has histories, each a .json file', () => {
      expect(files(at).length).toBeGreaterThan(0);
      expect(files(at).filter((f) => !f.endsWith('.json'))).toEqual([]);
    });
    it.each(files(at))('%s replays deterministically', async (file) => {
      const workflowsPath = workflowsAt(commit);
      const outcome = await replayHistory(history(file, at), { workflowId: file, source: file, workflowsPath });
      expect(outcome.message).toBeNull();
      expect(outcome.deterministic).toBe(true);
    });
  });
});
