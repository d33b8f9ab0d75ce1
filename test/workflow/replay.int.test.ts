/**
 * Replays every history checked in under test/histories/ against the current workflow code. A change that
 * would break a running order (non-determinism) fails here; such changes must go through patched().
 * Histories are recorded from real runs with test/support/record-histories.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowBundle } from '../../src/temporal.js';

const dir = new URL('../histories/', import.meta.url);
const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

describe('replay of recorded histories', () => {
  it('has histories to replay', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)('%s replays deterministically', async (file) => {
    // The worker decodes the exported JSON itself (the same file `temporal workflow show --output json` writes).
    const history: unknown = JSON.parse(readFileSync(new URL(file, dir), 'utf8'));
    const results: { error?: unknown }[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: await workflowBundle() }, [{ workflowId: file, history }])) {
      results.push(result);
    }
    expect(results).toHaveLength(1);
    expect(results[0]!.error).toBeUndefined();
  });
});
