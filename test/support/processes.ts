/** Process helpers for tests that run the service as a process of its own (no heavy imports: unit tests use it). */
import { execFile } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Every process below `root` now (pid and command line), from one `ps` snapshot of the whole process table. */
export async function descendants(root: number): Promise<string[]> {
  const { stdout } = await run('ps', ['-e', '-o', 'pid=,ppid=,args=']);
  const rows = stdout.split('\n').map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l)).filter((m) => m !== null);
  const below = new Set([root]);
  const found: string[] = [];
  for (let grew = true; grew; ) {
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

/** A TCP port free on 127.0.0.1 right now (for a child's METRICS_PORT). */
export async function freePort(): Promise<number> {
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
