/**
 * Stopping a background job stops what it started too (tools/process-group.ts; `npm test`'s builds run Go's
 * compilers, apt-get and pip as children): a real shell starts a grandchild, and once the job is stopped neither the
 * shell nor the grandchild runs.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { spawnInGroup, stopProcessGroup } from '../../../tools/process-group.js';
import { waitFor } from '../../support/promises.js';

/** Alive: /proc knows the pid and it is not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '');
  } catch {
    return false;
  }
}

describe('stopping a background job', () => {
  it('stops its children as well as itself', async () => {
    const child = spawnInGroup('/bin/bash', ['-c', 'sleep 100000 & echo $!; wait'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    const grandchild = await waitFor('the job to start its child', () => Number(out.trim()) || undefined);
    expect(alive(grandchild)).toBe(true);
    await stopProcessGroup(child);
    await waitFor('the job itself to exit', () => child.exitCode !== null || child.signalCode !== null);
    const left = alive(grandchild);
    if (left) process.kill(grandchild, 'SIGKILL');
    expect(left, "the job's child outlived the stop").toBe(false);
  });
});
