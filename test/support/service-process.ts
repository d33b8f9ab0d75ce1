/**
 * The service (src/service.ts) in a process of its own, as a container runs it: its JSON log lines are
 * collected so tests can wait for what it said ("waiting for …", "service ready") and for how it exited.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from './harness.js';

const SERVICE = fileURLToPath(new URL('../../src/service.ts', import.meta.url));
/** What `npm run build` emitted for it (npm test builds before it runs the suites). */
export const BUILT_SERVICE = fileURLToPath(new URL('../../dist/src/service.js', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  /** Parsed JSON log lines so far. */
  lines: Record<string, unknown>[];
  /** Resolves with the exit code (or the signal's name) once the process ended. */
  exited: Promise<number | string>;
  /** Waits until a log line's msg contains `text`. */
  said(text: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** True while the process runs. */
  alive(): boolean;
  /** The last 4000 characters it wrote to stderr (where a refused start-up's message goes). */
  stderr(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | string>;
}

/** The service from its sources (tsx), or with `built` as production runs it: dist/src/service.js, after `nodeArgs`. */
export function startServiceProcess(
  env: Record<string, string>,
  opts: { built?: boolean; nodeArgs?: string[] } = {},
): ServiceProcess {
  const args = opts.built
    ? [...(opts.nodeArgs ?? []), BUILT_SERVICE]
    : [...(opts.nodeArgs ?? []), '--import', 'tsx', SERVICE];
  const child = spawn(process.execPath, args, {
    env: { ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ msg: line });
      }
    }
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let code: number | string | undefined;
  // 'close', not 'exit': it comes once the process's stdout and stderr ended too, so every line it wrote is in `lines`.
  const exited = new Promise<number | string>((resolve) =>
    child.on('close', (c, sig) => resolve((code = c ?? sig ?? 'unknown'))),
  );
  const alive = () => code === undefined;
  return {
    child,
    lines,
    exited,
    alive,
    stderr: () => stderr,
    said: (text, timeoutMs = 120_000) =>
      waitFor(
        `the service to log "${text}"`,
        () => {
          if (!alive()) throw new Error(`service exited ${String(code)}: ${stderr}`);
          return lines.find((l) => String(l.msg ?? '').includes(text));
        },
        timeoutMs,
        100,
      ),
    async stop() {
      if (alive()) child.kill('SIGTERM');
      return exited;
    },
  };
}
