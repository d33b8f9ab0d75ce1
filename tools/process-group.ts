/**
 * A command run in the background in a process group of its own, so that stopping it stops everything it started:
 * `npm test`'s builds (tools/test-builds.ts) run Go's compilers, apt-get and pip as their children, which a signal to
 * the build process alone would leave running.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { groupMembers } from './stack/index.js';

/** Spawn options that make the process the leader of a process group of its own (its children join it). */
export const OWN_GROUP = { detached: true } as const;

/** Starts `command` in a process group of its own. */
export function spawnInGroup(command: string, args: string[], opts: SpawnOptions): ChildProcess {
  return spawn(command, args, { ...opts, ...OWN_GROUP });
}

/**
 * Stops the group `child` leads: SIGTERM, then SIGKILL to what is left after `graceMs`; resolves once no process of
 * the group runs (or 10 s after the SIGKILL). The group is signalled only while it has members, so its id, once free,
 * is never signalled.
 */
export async function stopProcessGroup(child: ChildProcess, graceMs = 5_000): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  const signal = (sig: NodeJS.Signals): boolean => {
    if (groupMembers(pgid).length === 0) return false;
    try {
      process.kill(-pgid, sig);
    } catch {
      /* the group emptied meanwhile */
    }
    return true;
  };
  if (!signal('SIGTERM')) return;
  const deadline = Date.now() + graceMs;
  while (groupMembers(pgid).length > 0 && Date.now() < deadline) await sleep(100);
  const killDeadline = Date.now() + 10_000;
  while (signal('SIGKILL') && Date.now() < killDeadline) await sleep(100);
}
