/**
 * The replay gate: every file under test/histories/ replays on the current workflow code, through the same replay
 * `fulfilment workflow replay --file` runs (src/cli/workflow/replay.ts: the worker's bundle and options). A change
 * that would break a running order (non-determinism) fails here; such changes must go through patched().
 * Histories come from real runs: `fulfilment workflow export <workflowId>` writes one here, as does
 * test/support/record-histories.ts. No stack: only the workflow code runs, so this is a unit test (`npm run
 * test:unit` runs it, and so does every `npm test`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replayHistory } from '../../src/cli/workflow/replay.js';

const dir = new URL('../histories/', import.meta.url);
// Every file: one that is not a history fails the gate rather than being passed over.
const files = readdirSync(dir, { withFileTypes: true })
  .filter((f) => f.isFile())
  .map((f) => f.name)
  .sort();
const history = (file: string): unknown => JSON.parse(readFileSync(new URL(file, dir), 'utf8'));

describe('replay of recorded histories', () => {
  it('has histories to replay, each a .json file', () => {
    expect(files.length).toBeGreaterThan(0);
    expect(files.filter((f) => !f.endsWith('.json'))).toEqual([]);
  });

  it.each(files)('%s replays deterministically', async (file) => {
    const outcome = await replayHistory(history(file), { workflowId: file, source: file });
    expect(outcome.message).toBeNull();
    expect(outcome.deterministic).toBe(true);
    expect(outcome.events).toBeGreaterThan(0);
  });

  // The control: the gate does catch a change that issues another command (a copy of the workflow that starts a
  // timer first), naming the event where the history diverged.
  it.each(files)('%s does not replay on a deliberately changed copy of the workflow', async (file) => {
    const workflowsPath = fileURLToPath(new URL('./replay-diverging-workflows.ts', import.meta.url));
    const outcome = await replayHistory(history(file), { workflowId: file, source: file, workflowsPath });
    expect(outcome.deterministic).toBe(false);
    expect(outcome.failure).toBe('nondeterminism');
    expect(outcome.message).toContain('Nondeterminism error');
    expect(outcome.divergence?.eventId).toBeGreaterThan(1);
    expect(outcome.divergence?.event).toMatch(/^\w+/);
  });
});
