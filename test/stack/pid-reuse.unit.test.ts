/**
 * The stack never signals a process that merely has the pid of one it started: a real process is stopped, exits,
 * and a stranger is given its pid while the stop waits (test/stack/pid-reuse-child.ts, in a pid namespace of its own,
 * where the next pid can be chosen). The stranger must outlive the stop. Needs root and `unshare` (as CI has).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../tools/stack/paths.js';
import { groupMembers, spawnDaemon, stopDaemon } from '../../tools/stack/proc.js';
import { waitFor } from '../support/promises.js';

const canUnshare =
  process.getuid?.() === 0 && spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status === 0;
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Runs one case of test/stack/pid-reuse-child.ts in a pid namespace of its own; its JSON line. */
function reuse(how: 'daemon' | 'leftovers'): { pid: number; stranger: number; strangerOutlivedTheStop: boolean } {
  const dir = mkdtempSync(join(tmpdir(), 'pid-reuse-'));
  dirs.push(dir);
  const r = spawnSync(
    'unshare',
    [
      '--pid',
      '--fork',
      '--mount-proc',
      process.execPath,
      '--import',
      'tsx',
      join('test', 'stack', 'pid-reuse-child.ts'),
      how,
    ],
    { cwd: repoRoot, env: { ...process.env, STACK_DIR: dir }, encoding: 'utf8', timeout: 60_000 },
  );
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as ReturnType<typeof reuse>;
}

describe.skipIf(!canUnshare)('a pid given again while the stack stops its process (needs root and unshare)', () => {
  it("stopDaemon leaves the stranger that now has its daemon's pid alone", () => {
    const r = reuse('daemon');
    expect(r.stranger, 'the stranger was given the pid').toBe(r.pid);
    expect(r.strangerOutlivedTheStop).toBe(true);
  });

  it("stopLeftovers leaves the stranger that now has a leftover's pid alone", () => {
    const r = reuse('leftovers');
    expect(r.stranger, 'the stranger was given the pid').toBe(r.pid);
    expect(r.strangerOutlivedTheStop).toBe(true);
  });
});

describe('stopDaemon and the daemon it started', () => {
  it('stops the leader and every process of its group, SIGKILL when SIGTERM is ignored', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pid-own-'));
    dirs.push(dir);
    const saved = process.env.STACK_DIR;
    process.env.STACK_DIR = dir;
    try {
      const rec = spawnDaemon({
        service: 'probe',
        command: '/bin/bash',
        args: ['-c', 'trap "" TERM; sleep 100000 & exec sleep 100000'],
        cwd: dir,
      });
      await waitFor('the daemon and its child', () => groupMembers(rec.pgid).length === 2);
      expect(await stopDaemon('probe', 'SIGTERM', 500)).toBe(true);
      expect(groupMembers(rec.pgid)).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.STACK_DIR;
      else process.env.STACK_DIR = saved;
    }
  });
});
