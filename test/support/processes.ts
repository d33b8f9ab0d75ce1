/** Process helpers for tests that run the service as a process of its own (no heavy imports: unit tests use it). */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Every process below `root` now (pid and command line), from one `ps` snapshot of the whole process table. */
export async function descendants(root: number): Promise<string[]> {
  const { stdout } = await run('ps', ['-e', '-o', 'pid=,ppid=,args=']);
  const rows = stdout
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m) => m !== null);
  const below = new Set([root]);
  const found: string[] = [];
  for (let grew = true; grew;) {
    grew = false;
    for (const [, pid, ppid, args] of rows) {
      if (below.has(Number(ppid)) && !below.has(Number(pid))) {
        below.add(Number(pid));
        found.push(`${pid} ${args}`);
        grew = true;
      }
    }
  }
  return found;
}

/** The ports Linux gives outgoing connections (ip_local_port_range); the usual default where it cannot be read. */
function ephemeralPorts(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low && high) return [low, high];
  } catch {
    // not Linux, or no /proc
  }
  return [32768, 60999];
}

/** True when `port` can be listened on at 127.0.0.1 now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port free on 127.0.0.1 right now, for a child process to listen on (a METRICS_PORT, a server's port). It is
 * taken from below the ephemeral range: a port the kernel chose for a listener of ours could be handed to another
 * process's outgoing connection before the child binds it (EADDRINUSE, seen on a loaded machine), one below that
 * range never is.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralPorts();
  const from = Math.max(10_000, low - 12_000);
  if (low - from >= 1_000) {
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const port = from + Math.floor(Math.random() * (low - from));
      if (await bindable(port)) return port;
    }
  }
  // An unusual range leaves no room below it: any port the kernel picks.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Probe {
  status: number;
  body: { ready?: boolean; live?: boolean; reason?: string; checks?: Record<string, { ok: boolean; reason?: string }> };
}

/** GET /readyz or /livez of a service on `port`; undefined while nothing answers there. */
export async function probe(port: number, path: '/readyz' | '/livez'): Promise<Probe | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(10_000) });
    return { status: res.status, body: (await res.json()) as Probe['body'] };
  } catch {
    return undefined;
  }
}

/** Sum of the samples of `name` on a service's /metrics (on `port`) whose labels include `labels`. */
export async function scrape(port: number, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const has = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => has[k] === v)) sum += Number(m[3]);
  }
  return sum;
}
