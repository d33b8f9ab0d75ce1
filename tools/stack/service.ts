/** What every service of the stack implements, and the shared start/ready/stop flow around it. */
import type { ServiceName, StackPlan } from './addresses.js';
import { PORT_ENV, SERVICE_NAMES } from './addresses.js';
import { StackError, say } from './log.js';
import { stateDir } from './paths.js';
import {
  groupMembers,
  identityOf,
  listeningPid,
  procStat,
  sleep,
  portAnswers,
  procCmdline,
  procEnv,
  runningDaemon,
  signalProcess,
  spawnDaemon,
  stillRuns,
  stopDaemon,
  STACK_MARKER_ENV,
  tailFile,
  waitFor,
  type DaemonSpec,
  type PidRecord,
} from './proc.js';

export type ServiceState = 'running' | 'external' | 'stopped';

export interface ServiceInfo {
  state: ServiceState;
  pid?: number;
  address: string;
  log?: string;
  /** Whether the address accepted a connection when status was taken. */
  answering?: boolean;
  note?: string;
}

export interface PortUse {
  host: string;
  port: number;
  /** e.g. "Kafka broker" */
  label: string;
  /** The variable to change if the port is taken. */
  env: string;
}

export interface Service {
  name: ServiceName;
  /** Display address of the service. */
  address(plan: StackPlan): string;
  external(plan: StackPlan): boolean;
  ports(plan: StackPlan): PortUse[];
  /** Log files to show when it fails (first = main log). */
  logs(): string[];
  /** Whether the service can be started here at all (e.g. its source exists); a string says why not. */
  unavailable?(plan: StackPlan): string | undefined;
  /** Fetch/build/initialise what the process needs (first run only); returns the daemon to spawn. */
  prepare(plan: StackPlan): Promise<DaemonSpec>;
  /** Fully answers (not only listens). Resolves true/false; never hangs long. `shared`: not run by this stack. */
  ready(plan: StackPlan, shared?: boolean): Promise<boolean>;
  readyTimeoutMs: number;
  /** After ready: topics, roles, migrations... Idempotent. `shared` = run by another checkout's stack. */
  afterReady?(plan: StackPlan, shared: boolean): Promise<void>;
  /**
   * False for a service another checkout's stack must not lend: one whose clients need files of this checkout's
   * state dir (certificates, keys) that another checkout's daemon does not trust. Default: shared.
   */
  shareable?: boolean;
  /** Brings a daemon that runs back to what `up` promises (e.g. a Kafka node held down starts again). */
  reconcile?(plan: StackPlan): void;
  /** Reason to restart a running daemon (e.g. its code changed), or undefined. */
  restartReason?(rec: PidRecord, plan: StackPlan): string | undefined;
  stopSignal: NodeJS.Signals;
  stopGraceMs: number;
  /** After `down` stopped it: what it made outside its process and state dir (network namespaces). */
  afterStop?(plan: StackPlan): void;
}

export function logTails(svc: Service, lines = 30): string {
  return svc
    .logs()
    .map((f) => {
      const t = tailFile(f, lines);
      return t ? `--- last lines of ${f}:\n${t}` : '';
    })
    .filter(Boolean)
    .join('\n');
}

/**
 * What is on a port we want: nothing, another checkout's stack daemon (its state dir), what is left of a daemon of
 * this stack that no pid file names any more (`leftover`: its process group), or a foreign process.
 */
export async function portOwner(
  p: PortUse,
): Promise<
  | { kind: 'free' }
  | { kind: 'stack'; dir: string; pid: number }
  | { kind: 'leftover'; pid: number; pgid: number; cmd: string }
  | { kind: 'foreign'; pid?: number; cmd?: string }
> {
  if (!(await portAnswers(p.host, p.port, 800))) return { kind: 'free' };
  const pid = listeningPid(p.port);
  if (pid !== undefined) {
    const dir = procEnv(pid, STACK_MARKER_ENV);
    if (dir && dir !== stateDir()) return { kind: 'stack', dir, pid };
    const pgid = procStat(pid)?.pgrp;
    if (dir && pgid !== undefined && !SERVICE_NAMES.some((s) => runningDaemon(s)?.pgid === pgid))
      return { kind: 'leftover', pid, pgid, cmd: procCmdline(pid).slice(0, 160) };
    return { kind: 'foreign', pid, cmd: procCmdline(pid).slice(0, 160) };
  }
  return { kind: 'foreign' };
}

/**
 * The port's owner once a leftover was stopped: a socket of a process that has just exited can still answer for a
 * moment with no process holding it, so an owner without a pid is asked again, for up to 10 s, until the port is free
 * or names who holds it.
 */
async function portOwnerAfterStop(p: PortUse): Promise<Awaited<ReturnType<typeof portOwner>>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const owner = await portOwner(p);
    if (owner.kind !== 'foreign' || owner.pid !== undefined || Date.now() >= deadline) return owner;
    await sleep(100);
  }
}

/**
 * Stops the processes of group `pgid` that this stack started (they carry its state dir): SIGTERM, then SIGKILL
 * after `graceMs`. Whatever else is in the group is left alone, and so is a process later given one of their pids.
 */
export async function stopLeftovers(pgid: number, graceMs = 5_000): Promise<void> {
  // Chosen once and then followed by pid and start time: a process that is exiting no longer shows its environment
  // while it still holds its sockets, so judging it by its environment would call the port free too soon.
  const targets = groupMembers(pgid)
    .filter((pid) => procEnv(pid, STACK_MARKER_ENV) === stateDir())
    .map(identityOf)
    .filter((p) => p !== undefined);
  const ours = () => targets.filter(stillRuns);
  const signal = (sig: NodeJS.Signals) => ours().forEach((p) => signalProcess(p, sig));
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (ours().length > 0 && Date.now() < deadline) await sleep(100);
  signal('SIGKILL');
  const killDeadline = Date.now() + 10_000;
  while (ours().length > 0 && Date.now() < killDeadline) await sleep(100);
}

export function portTakenError(svc: Service, p: PortUse, owner: { pid?: number; cmd?: string }): StackError {
  const who = owner.pid ? `pid ${owner.pid}${owner.cmd ? ` (${owner.cmd})` : ''}` : 'another process';
  const useIt =
    p.env === PORT_ENV[svc.name]
      ? ` If that is a ${svc.name} you want to use, set ${p.env} explicitly and the stack will use it instead of starting one.`
      : '';
  return new StackError(
    `port ${p.host}:${p.port} (${p.label}) is already in use by ${who}, not started by this stack. Stop it, or set ${p.env} to use another port.${useIt}`,
  );
}

export interface UpResult {
  info: 'started' | 'already-running' | 'shared';
  pid?: number;
  note?: string;
}

/** Idempotent: make `svc` run (started by this stack) and answer. */
export async function ensureUp(svc: Service, plan: StackPlan): Promise<UpResult> {
  let rec = runningDaemon(svc.name);
  if (rec) {
    const why = svc.restartReason?.(rec, plan);
    if (why) {
      say(`${svc.name}: restarting (${why})`);
      await stopDaemon(svc.name, svc.stopSignal, svc.stopGraceMs);
      rec = undefined;
    }
  }
  if (rec) {
    const running = rec;
    svc.reconcile?.(plan);
    if (!(await svc.ready(plan))) {
      say(`${svc.name}: process ${running.pid} is running, waiting for it to answer...`);
      await waitReady(svc, plan, running);
    }
    await svc.afterReady?.(plan, false);
    return { info: 'already-running', pid: running.pid };
  }
  // Not ours: make sure its ports are free (or held by another checkout's stack, which we then share).
  let sharedFrom: string | undefined;
  for (const p of svc.ports(plan)) {
    let owner = await portOwner(p);
    if (owner.kind === 'leftover') {
      say(
        `${svc.name}: port ${p.host}:${p.port} (${p.label}) is held by pid ${owner.pid} (${owner.cmd}), left by an earlier run of this stack: stopping it`,
      );
      await stopLeftovers(owner.pgid);
      owner = await portOwnerAfterStop(p);
    }
    if (owner.kind === 'free') continue;
    if (owner.kind === 'stack' && svc.shareable !== false) {
      sharedFrom = owner.dir;
      continue;
    }
    if (owner.kind === 'stack') {
      throw new StackError(
        `port ${p.host}:${p.port} (${p.label}) is used by the stack in ${owner.dir}, whose certificates and keys are not this checkout's: stop it there (npm run stack -- down --only ${svc.name}), or set ${p.env} to use another port.`,
      );
    }
    throw portTakenError(svc, p, owner);
  }
  if (sharedFrom) {
    say(`${svc.name}: already run by the stack of another checkout (${sharedFrom}); using it`);
    await waitFor(`${svc.name} (shared)`, svc.readyTimeoutMs, async () =>
      (await svc.ready(plan, true)) ? true : undefined,
    );
    await svc.afterReady?.(plan, true);
    return { info: 'shared', note: `run by the stack in ${sharedFrom}` };
  }
  const spec = await svc.prepare(plan);
  for (let attempt = 1; ; attempt += 1) {
    say(`${svc.name}: starting`);
    const started = spawnDaemon(spec);
    try {
      await waitReady(svc, plan, started);
    } catch (e) {
      // Nothing listens on the port, yet the daemon could not bind it: an outgoing connection of another process
      // (the other services starting beside it) was given that port as its ephemeral local port, which the check
      // above cannot see. Such a connection is short-lived: start the daemon again, a few times.
      if (attempt >= START_ATTEMPTS || stillRuns(started) || !boundElsewhere(svc)) throw e;
      say(`${svc.name}: its port was held for a moment by another process's outgoing connection; starting it again`);
      await sleep(1000 * attempt);
      continue;
    }
    await svc.afterReady?.(plan, false);
    return { info: 'started', pid: started.pid };
  }
}

/** Starts of a daemon that exited because its port was taken for a moment (see ensureUp). */
const START_ATTEMPTS = 4;

/** True when the daemon's last start, as its log tells it, failed to bind its address (the daemon's own words). */
function boundElsewhere(svc: Service): boolean {
  const tail = logTails(svc, 60);
  return /address already in use|eaddrinuse|bindexception/i.test(tail.slice(tail.lastIndexOf('[stack] starting:')));
}

async function waitReady(svc: Service, plan: StackPlan, rec: PidRecord): Promise<void> {
  const t0 = Date.now();
  try {
    await waitFor(
      svc.name,
      svc.readyTimeoutMs,
      async () => ((await svc.ready(plan)) ? true : undefined),
      () => {
        if (!stillRuns(rec)) throw new StackError(`${svc.name} (pid ${rec.pid}) exited during start-up`);
      },
    );
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new StackError(`${msg}\n${logTails(svc)}`);
  }
  say(`${svc.name}: ready (${((Date.now() - t0) / 1000).toFixed(1)}s, pid ${rec.pid})`);
}
