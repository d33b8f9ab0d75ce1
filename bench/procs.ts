/**
 * What the bench reads from /proc: CPU seconds of a process and its descendants (utime + stime of each live
 * process, plus cutime + cstime: what its reaped children used — a PostgreSQL backend that ended between two
 * samples), peak RSS of one process, and the 1-minute load.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let ticks: number | undefined;
/** Clock ticks per second (USER_HZ), what /proc/<pid>/stat counts in. */
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

interface Stat {
  ppid: number;
  /** utime + stime, in ticks. */
  own: number;
  /** utime + stime + cutime + cstime, in ticks. */
  cpu: number;
}

function stat(pid: number): Stat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // Fields from 3 (state) on: ppid is field 4, utime..cstime are fields 14..17.
    const own = Number(f[11]) + Number(f[12]);
    return { ppid: Number(f[1]), own, cpu: own + Number(f[13]) + Number(f[14]) };
  } catch {
    return undefined;
  }
}

/** Every live process's parent, read once per sample. */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(Number(name));
    if (s) out.set(Number(name), s.ppid);
  }
  return out;
}

/**
 * CPU seconds used so far by each root and its descendants (undefined root pids are skipped); the roots in `alone`
 * count only their own threads (the bench itself: its children are measured apart).
 */
export function cpuSeconds(
  roots: Record<string, number | undefined>,
  alone: ReadonlySet<string> = new Set(),
): Record<string, number> {
  const byParent = new Map<number, number[]>();
  for (const [pid, ppid] of parents()) byParent.set(ppid, [...(byParent.get(ppid) ?? []), pid]);
  const out: Record<string, number> = {};
  for (const [name, root] of Object.entries(roots)) {
    if (root === undefined) continue;
    if (alone.has(name)) {
      const own = stat(root)?.own;
      if (own !== undefined) out[name] = own / clockTicks();
      continue;
    }
    let total = 0;
    const todo = [root];
    const seen = new Set<number>();
    while (todo.length > 0) {
      const pid = todo.pop()!;
      if (seen.has(pid)) continue;
      seen.add(pid);
      total += stat(pid)?.cpu ?? 0;
      todo.push(...(byParent.get(pid) ?? []));
    }
    out[name] = total / clockTicks();
  }
  return out;
}

/** CPU seconds each process used between two samples. */
export function cpuDelta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((k) => [k, Math.max(0, (after[k] ?? 0) - (before[k] ?? 0))]));
}

/** VmRSS and VmHWM (the kernel's peak) of one process, in bytes. */
export function procMemory(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

/** The 1-minute load average. */
export function load1(): number {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  } catch {
    return Number.NaN;
  }
}
