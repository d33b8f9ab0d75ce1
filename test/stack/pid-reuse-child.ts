/**
 * A pid given again while the stack stops a process, for real: run as pid 1 of a pid namespace of its own
 * (`unshare --pid --fork --mount-proc`, root), where the next pid can be chosen (/proc/sys/kernel/ns_last_pid).
 *
 * A process of the stack (its own session and group, the stack's marker in its environment, SIGTERM ignored) is
 * started; the stack is asked to stop it (`daemon`: stopDaemon through a pid file; `leftovers`: stopLeftovers of its
 * group); while the stop waits, the process is SIGKILLed and a stranger (its own session and group, no marker) is
 * started with the same pid. The swap happens inside one spawnSync, so the stop's polling sees the process before it
 * and the stranger after it, never the gap. Prints one JSON line: whether the stranger got the pid and outlived the stop.
 *
 *   STACK_DIR=<tmp> unshare --pid --fork --mount-proc node --import tsx test/stack/pid-reuse-child.ts daemon|leftovers
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pidFile, stateDir } from '../../tools/stack/paths.js';
import { isAlive, procStat, STACK_MARKER_ENV, stopDaemon } from '../../tools/stack/proc.js';
import { stopLeftovers } from '../../tools/stack/service.js';

const GRACE_MS = 1500;

/** The stack's process: `setsid` in place (a background job is no group leader), then the sleep itself. */
const PARENT = `
setsid bash -c 'trap "" TERM; exec sleep 100000' &
L=$!
echo "$L"
trap 'kill -9 $L; wait $L; echo $((L - 1)) > /proc/sys/kernel/ns_last_pid; env -u ${STACK_MARKER_ENV} setsid sleep 100000 & echo $! > "$SWAPPED"' USR1
while :; do sleep 0.05; done
`;

async function main(how: string): Promise<void> {
  mkdirSync(stateDir(), { recursive: true });
  const swapped = join(stateDir(), 'swapped');
  const parent = spawn('/bin/bash', ['-c', PARENT], {
    env: { ...process.env, [STACK_MARKER_ENV]: stateDir(), SWAPPED: swapped },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const pid = await new Promise<number>((resolve) => parent.stdout.once('data', (b: Buffer) => resolve(Number(b))));
  const startTime = procStat(pid)?.startTime ?? '';
  const stopping =
    how === 'daemon'
      ? (writeFileSync(
          pidFile('probe'),
          `${pid}\n${JSON.stringify({ pid, pgid: pid, startTime, command: 'sleep' })}\n`,
        ),
        stopDaemon('probe', 'SIGTERM', GRACE_MS))
      : stopLeftovers(pid, GRACE_MS);
  // The stop has sent SIGTERM (ignored) and waits: the process goes, and a stranger takes its pid.
  spawnSync('/bin/bash', ['-c', `kill -USR1 ${parent.pid}; until [ -s ${swapped} ]; do sleep 0.01; done`]);
  await stopping;
  const stranger = Number(readFileSync(swapped, 'utf8'));
  process.stdout.write(
    `${JSON.stringify({ pid, stranger, strangerOutlivedTheStop: isAlive(stranger), pidFileLeft: existsSync(pidFile('probe')) })}\n`,
  );
  process.exit(0);
}

void main(process.argv[2] ?? 'daemon');
