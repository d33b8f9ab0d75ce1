/**
 * Process plumbing for the stack: detached daemons with pid files, identity checks that survive pid reuse,
 * stopping a process group, commands with periodic progress lines, polling with deadlines, port probes.
 * Linux only (reads /proc), which is what the stack targets.
 */
import { spawn, spawnSync, type SpawnOptions } from 'node:child_process';
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { connect } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { fmtSeconds, say, StackError } from './log.js';
import { pidFile, serviceLog, stateDir } from './paths.js';
import { sleep } from '../../src/base/sleep.js';
import { identityOf, isAlive, procStat, signalProcess, stillRuns, type ProcessIdentity } from './process-identity.js';

export { identityOf, isAlive, procStat, signalProcess, stillRuns, type ProcessIdentity };

/** Environment variable every stack daemon carries, naming the state dir that started it. */
export const STACK_MARKER_ENV = 'FULFILMENT_STACK_DIR';

// ---------------------------------------------------------------------------------------------------------------
// /proc helpers

export function procCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}

export function procEnv(pid: number, name: string): string | undefined {
  try {
    for (const kv of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      if (kv.startsWith(`${name}=`)) return kv.slice(name.length + 1);
    }
  } catch {
    /* not readable */
  }
  return undefined;
}

/** Live (non-zombie) processes whose process group is `pgid`. */
export function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const st = procStat(Number(e));
    if (st && st.pgrp === pgid && st.state !== 'Z' && st.state !== 'X') out.push(Number(e));
  }
  return out;
}

/** Pid of the process listening on a TCP port (any address), if it can be found. */
export function listeningPid(port: number): number | undefined {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const local = cols[1] ?? '';
      if (cols[3] === '0A' && local.endsWith(`:${hexPort}`)) inodes.add(cols[9] ?? '');
    }
  }
  if (inodes.size === 0) return undefined;
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${e}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${e}/fd/${fd}`));
        if (m && inodes.has(m[1] ?? '')) return Number(e);
      } catch {
        /* fd went away */
      }
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// pid files: first line the pid (handy for shell tools), second line JSON metadata.

export interface PidRecord {
  pid: number;
  pgid: number;
  /** /proc/<pid>/stat start time (clock ticks since boot): tells our process from a later one with the same pid. */
  startTime: string;
  startedAt: string;
  command: string;
  log: string;
}

export function readPidFile(service: string): PidRecord | undefined {
  try {
    const [first, second] = readFileSync(pidFile(service), 'utf8').split('\n');
    const pid = Number(first);
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    const meta = second ? (JSON.parse(second) as Partial<PidRecord>) : {};
    return {
      pid,
      pgid: meta.pgid ?? pid,
      startTime: meta.startTime ?? '',
      startedAt: meta.startedAt ?? '',
      command: meta.command ?? '',
      log: meta.log ?? serviceLog(service),
    };
  } catch {
    return undefined;
  }
}

function writePidFile(service: string, rec: PidRecord): void {
  mkdirSync(stateDir(), { recursive: true });
  writeFileSync(pidFile(service), `${rec.pid}\n${JSON.stringify(rec)}\n`);
}

export function removePidFile(service: string): void {
  rmSync(pidFile(service), { force: true });
}

/**
 * The running process this stack started for `service`, or undefined. A pid file whose process is gone, whose pid
 * now belongs to another process (start time differs), or that holds no start time to tell, is stale and removed.
 */
export function runningDaemon(service: string): PidRecord | undefined {
  const rec = readPidFile(service);
  if (!rec) {
    if (existsSync(pidFile(service))) removePidFile(service);
    return undefined;
  }
  if (!stillRuns(rec)) {
    removePidFile(service);
    return undefined;
  }
  return rec;
}

export interface DaemonSpec {
  service: string;
  command: string;
  args: string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
  uid?: number;
  gid?: number;
}

/**
 * Run by the daemon's shell before it execs the real command (same pid): closes every inherited fd but 0-2.
 * Node passes on fds it did not open itself (e.g. a CI harness's pipe without close-on-exec); a daemon keeping such
 * a pipe open would make whoever waits for that pipe's EOF wait forever.
 */
const CLOSE_INHERITED_FDS =
  'for f in /proc/$$/fd/*; do fd=${f##*/}; case $fd in 0|1|2) ;; *) eval "exec $fd>&-" 2>/dev/null ;; esac; done; exec "$@"';

/**
 * Starts a fully detached daemon: own session/process group, stdin ignored, stdout+stderr appended to the
 * service log, unref'd, so neither a harness reading our stdout nor our exit affects it.
 */
export function spawnDaemon(spec: DaemonSpec): PidRecord {
  const log = serviceLog(spec.service);
  mkdirSync(dirname(log), { recursive: true });
  const fd = openSync(log, 'a');
  const commandLine = [spec.command, ...spec.args].join(' ');
  writeSync(fd, `\n--- ${new Date().toISOString()} [stack] starting: ${commandLine}\n`);
  const opts: SpawnOptions = {
    cwd: spec.cwd,
    env: { ...(spec.env ?? process.env), [STACK_MARKER_ENV]: stateDir() },
    detached: true,
    stdio: ['ignore', fd, fd],
  };
  if (spec.uid !== undefined) opts.uid = spec.uid;
  if (spec.gid !== undefined) opts.gid = spec.gid;
  let child;
  try {
    const shell = existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
    child = spawn(shell, ['-c', CLOSE_INHERITED_FDS, spec.service, spec.command, ...spec.args], opts);
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new StackError(`could not start ${spec.service} (${commandLine}); see ${log}`);
  child.on('error', () => {
    /* reported through readiness + the log */
  });
  child.unref();
  const rec: PidRecord = {
    pid,
    pgid: pid,
    startTime: procStat(pid)?.startTime ?? '',
    startedAt: new Date().toISOString(),
    command: commandLine,
    log,
  };
  writePidFile(spec.service, rec);
  return rec;
}

/**
 * A daemon's processes, each followed by its identity: the leader by the start time its pid file holds; the other
 * members of its process group once seen while the leader ran (its group is then its own), or carrying this stack's
 * marker. `running()` lists those still running; a pid given again to another process is never among them.
 */
function daemonProcesses(rec: PidRecord): { leader: ProcessIdentity; running(): ProcessIdentity[] } {
  const leader = { pid: rec.pid, startTime: rec.startTime };
  const members = new Map<string, ProcessIdentity>();
  return {
    leader,
    running() {
      const leaderBefore = stillRuns(leader);
      const pids = groupMembers(rec.pgid);
      // The leader ran throughout the listing: its pid (the group's id) was not given again meanwhile.
      const groupIsOurs = leaderBefore && stillRuns(leader);
      for (const pid of pids) {
        const id = identityOf(pid);
        if (id && (groupIsOurs || procEnv(pid, STACK_MARKER_ENV) === stateDir()))
          members.set(`${id.pid}/${id.startTime}`, id);
      }
      return [leader, ...members.values()].filter(stillRuns);
    },
  };
}

/**
 * Stops a daemon this stack started: `signal` to the leader, wait up to `graceMs` for the leader and its process
 * group, then SIGKILL what is left. Removes the pid file. Signals only the processes it started (by pid and start
 * time, see daemonProcesses), never a later process that was given one of their pids.
 */
export async function stopDaemon(
  service: string,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 30_000,
): Promise<boolean> {
  const rec = runningDaemon(service);
  if (!rec) return false;
  const daemon = daemonProcesses(rec);
  daemon.running();
  signalProcess(daemon.leader, signal);
  const deadline = Date.now() + graceMs;
  let notified = false;
  while (Date.now() < deadline) {
    const left = daemon.running();
    if (left.length === 0) break;
    // Leader gone: tell the leftovers too.
    if (!stillRuns(daemon.leader)) for (const p of left) signalProcess(p, 'SIGTERM');
    if (!notified && Date.now() > deadline - graceMs + 5000) {
      say(`${service}: waiting for pid ${rec.pid} to exit...`);
      notified = true;
    }
    await sleep(100);
  }
  if (daemon.running().length > 0) {
    say(`${service}: did not exit within ${fmtSeconds(graceMs)}, sending SIGKILL to process group ${rec.pgid}`);
    const killDeadline = Date.now() + 10_000;
    for (;;) {
      const left = daemon.running();
      for (const p of left) signalProcess(p, 'SIGKILL');
      if (left.length === 0 || Date.now() >= killDeadline) break;
      await sleep(100);
    }
  }
  removePidFile(service);
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// polling, ports, commands

export { sleep };

/**
 * Polls `probe` until it returns a value (not undefined) or the deadline passes. `failFast` is checked each round
 * and may throw (e.g. the process died). Returns the probe's value; throws a StackError on timeout.
 */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
  failFast?: () => void,
): Promise<T> {
  const start = Date.now();
  let lastErr = '';
  let nextNote = start + 15_000;
  for (;;) {
    failFast?.();
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      lastErr = e instanceof Error ? e.message : String(e);
    }
    const now = Date.now();
    if (now - start > timeoutMs) {
      throw new StackError(
        `${what} did not become ready within ${fmtSeconds(timeoutMs)}${lastErr ? ` (last error: ${lastErr})` : ''}`,
      );
    }
    if (now > nextNote) {
      say(`waiting for ${what}... ${fmtSeconds(now - start)}`);
      nextNote = now + 15_000;
    }
    await sleep(Math.min(500, 100 + (now - start) / 20));
  }
}

/** True when something accepts TCP connections on host:port. */
export function portAnswers(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host, port });
    const done = (v: boolean) => {
      sock.removeAllListeners();
      sock.destroy();
      resolve(v);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

export function tailFile(path: string, lines = 30): string {
  try {
    const size = statSync(path).size;
    const fd = openSync(path, 'r');
    try {
      const len = Math.min(size, 64 * 1024);
      const buf = Buffer.alloc(len);
      readSync(fd, buf, 0, len, size - len);
      return buf
        .toString('utf8')
        .split('\n')
        .slice(-lines - 1)
        .join('\n')
        .trimEnd();
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
}

/** Absolute path of an executable on PATH, or undefined. */
export function which(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, cmd);
    try {
      accessSync(p, constants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

// eslint-disable-next-line no-control-regex -- ANSI colour codes are exactly what is being removed
const ANSI = /\x1b\[[0-9;]*m/g;
const stripAnsi = (s: string): string => s.replace(ANSI, '');

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Full output goes here (appended). */
  logFile: string;
  uid?: number;
  gid?: number;
  /** Seconds between "still running" lines. */
  everySec?: number;
}

/**
 * Runs a (possibly long) command, output to a log file, printing a progress line every few seconds with the
 * elapsed time and the command's latest output line. Throws a StackError with the output's tail on failure.
 */
export async function runWithProgress(label: string, command: string, args: string[], opts: RunOptions): Promise<void> {
  mkdirSync(dirname(opts.logFile), { recursive: true });
  const fd = openSync(opts.logFile, 'a');
  writeSync(fd, `\n--- ${new Date().toISOString()} ${[command, ...args].join(' ')}\n`);
  const start = Date.now();
  let last = '';
  const spawnOpts: SpawnOptions = { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] };
  if (opts.uid !== undefined) spawnOpts.uid = opts.uid;
  if (opts.gid !== undefined) spawnOpts.gid = opts.gid;
  const child = spawn(command, args, spawnOpts);
  const onData = (b: Buffer) => {
    writeSync(fd, b);
    const lines = b
      .toString('utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    if (lines.length) last = lines[lines.length - 1] ?? last;
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const timer = setInterval(
    () => {
      say(`  ${label}: ${fmtSeconds(Date.now() - start)} elapsed${last ? ` — ${stripAnsi(last).slice(0, 110)}` : ''}`);
    },
    (opts.everySec ?? 10) * 1000,
  );
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (c) => resolve(c));
    });
    if (code !== 0) {
      throw new StackError(
        `${label} failed (exit ${code}); last lines of ${opts.logFile}:\n${tailFile(opts.logFile, 30)}`,
      );
    }
  } catch (e) {
    if (e instanceof StackError) throw e;
    throw new StackError(`${label} could not run ${command}: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    clearInterval(timer);
    closeSync(fd);
  }
  say(`  ${label}: done in ${fmtSeconds(Date.now() - start)}`);
}

/** Runs a short command synchronously; returns stdout+stderr and the exit status. */
export function runQuick(
  command: string,
  args: string[],
  opts: { uid?: number; gid?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): {
  status: number | null;
  output: string;
} {
  const r = spawnSync(command, args, { ...opts, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return {
    status: r.error ? -1 : r.status,
    output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? r.error.message : ''}`,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// locks: a directory created atomically, with the owner's pid inside; a lock whose owner died is taken over.

export async function withLock<T>(
  lockDir: string,
  what: string,
  fn: () => Promise<T>,
  timeoutMs = 20 * 60_000,
): Promise<T> {
  mkdirSync(dirname(lockDir), { recursive: true });
  const start = Date.now();
  let nextNote = 0;
  for (;;) {
    try {
      mkdirSync(lockDir);
      writeFileSync(join(lockDir, 'owner'), `${process.pid} ${procStat(process.pid)?.startTime ?? ''}`);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let ownerPid = 0;
      let ownerStart = '';
      try {
        [ownerPid, ownerStart] = ((s) => [Number(s[0]), s[1] ?? ''] as [number, string])(
          readFileSync(join(lockDir, 'owner'), 'utf8').split(' '),
        );
      } catch {
        /* owner not yet written */
      }
      const ownerGone =
        ownerPid > 0
          ? !isAlive(ownerPid) || (ownerStart !== '' && procStat(ownerPid)?.startTime !== ownerStart)
          : Date.now() - safeMtime(lockDir) > 10_000;
      if (ownerGone) {
        rmSync(lockDir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() - start > timeoutMs)
        throw new StackError(`timed out waiting for ${what} held by pid ${ownerPid} (${lockDir})`);
      if (Date.now() > nextNote) {
        say(`waiting for ${what} (held by pid ${ownerPid})...`);
        nextNote = Date.now() + 15_000;
      }
      await sleep(300);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

function safeMtime(p: string): number {
  try {
    return statSync(p).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * A folder of the cache made once: when `bin` (a file inside `dir`) is missing, or `valid` (when given) finds it is not
 * what it should be, under the lock `lock`, `fill` writes the folder's content into a temporary folder beside `dir`,
 * which is then renamed into place, so a run killed half way leaves nothing half-done (and a failed fill leaves the
 * folder as it was). Resolves to `bin`.
 */
export async function cachedFolder(o: {
  dir: string;
  bin: string;
  lock: string;
  what: string;
  valid?(bin: string): boolean;
  fill(tmp: string): Promise<void>;
}): Promise<string> {
  const ready = () => existsSync(o.bin) && (o.valid?.(o.bin) ?? true);
  if (ready()) return o.bin;
  return withLock(o.lock, o.what, async () => {
    if (ready()) return o.bin;
    const tmp = `${o.dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    try {
      await o.fill(tmp);
      rmSync(o.dir, { recursive: true, force: true });
      renameSync(tmp, o.dir);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    return o.bin;
  });
}
