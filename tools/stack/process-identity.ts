/**
 * A process told apart from a later one given the same pid: its pid with its start time (/proc/<pid>/stat field 22,
 * clock ticks since boot). The stack records both when it starts or picks a process, and signals it only while both
 * still match, so a process that has exited and whose pid went to another is never signalled. Linux only.
 */
import { readFileSync } from 'node:fs';

interface ProcStat {
  state: string;
  pgrp: number;
  startTime: string;
}

export function procStat(pid: number): ProcStat | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm (field 2) may contain spaces and parentheses; fields after the last ')' are well-formed.
    const rest = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
    // rest[0] = field 3 (state), rest[2] = field 5 (pgrp), rest[19] = field 22 (starttime)
    return { state: rest[0] ?? '?', pgrp: Number(rest[2]), startTime: rest[19] ?? '' };
  } catch {
    return undefined;
  }
}

/** Alive = exists and is not a zombie (a container without an init may keep unreaped zombies around). */
export function isAlive(pid: number): boolean {
  const st = procStat(pid);
  return st !== undefined && st.state !== 'Z' && st.state !== 'X';
}

export interface ProcessIdentity {
  pid: number;
  /** /proc/<pid>/stat start time; '' when it could not be read (then the process is never taken for running). */
  startTime: string;
}

/** The live process that has `pid` now, or undefined. */
export function identityOf(pid: number): ProcessIdentity | undefined {
  const st = procStat(pid);
  return st && st.state !== 'Z' && st.state !== 'X' && st.startTime ? { pid, startTime: st.startTime } : undefined;
}

/** True while that very process runs: its pid is alive and started when it did. */
export function stillRuns(p: ProcessIdentity): boolean {
  return p.startTime !== '' && identityOf(p.pid)?.startTime === p.startTime;
}

/**
 * Sends `sig` to the process if it still runs; true when sent. (The check and the signal are two calls: a pid given
 * again between them would need the process to exit and the pid to come round within microseconds.)
 */
export function signalProcess(p: ProcessIdentity, sig: NodeJS.Signals): boolean {
  if (!stillRuns(p)) return false;
  try {
    process.kill(p.pid, sig);
    return true;
  } catch {
    return false;
  }
}
