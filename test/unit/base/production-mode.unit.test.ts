/**
 * The service in production mode, as a container runs it (`node --import tsx src/service.ts`), with no stack at all:
 * without its address variables it exits at once naming each; with addresses where nothing answers it waits for
 * them — serving /readyz as not ready, saying what it waits for — and never starts a process of its own (checked
 * with `ps`, by walking the process tree below it for as long as it runs).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PRODUCTION_REQUIRED } from '../../../src/base/config.js';
import { descendants, freePort } from '../../support/processes.js';
import { waitFor } from '../../support/promises.js';

const SERVICE = fileURLToPath(new URL('../../../src/service.ts', import.meta.url));
interface Run {
  code: number | string;
  stdout: string;
  stderr: string;
  elapsedMs: number;
  /** Every process ever seen below the service while it ran, but tsx's own compiler (see `isTsxCompiler`). */
  children: Set<string>;
  /** `ps` snapshots taken while it ran. */
  snapshots: number;
}

/** Environment without any address variable, as an operator's empty deployment would be. */
function bareEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
  };
  return { ...env, ...extra };
}

/**
 * tsx compiles TypeScript it has not cached yet through esbuild's service process, a child of whatever it runs
 * (so a fresh checkout, or an edited file, shows one): part of the runtime, not a dependency the service started.
 */
function isTsxCompiler(process: string): boolean {
  return /^\d+ (\S*\/@esbuild\/[^/ ]+\/bin\/esbuild --service=|\[esbuild\] <defunct>$)/.test(process);
}

/** Runs the service, walking its process tree until it exits; `during` may act on it meanwhile (e.g. SIGTERM it). */
async function runService(
  env: Record<string, string>,
  during?: (child: ReturnType<typeof spawn>, r: Run) => Promise<void>,
): Promise<Run> {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', SERVICE], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const r: Run = { code: -1, stdout: '', stderr: '', elapsedMs: 0, children: new Set(), snapshots: 0 };
  child.stdout.on('data', (c: Buffer) => (r.stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (r.stderr += c.toString()));
  let exited = false;
  const exit = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => ((exited = true), resolve(code ?? signal ?? 'unknown'))),
  );
  const walk = (async () => {
    while (!exited) {
      for (const p of await descendants(child.pid!)) if (!isTsxCompiler(p)) r.children.add(p);
      r.snapshots += 1;
    }
  })();
  await during?.(child, r);
  r.code = await exit;
  r.elapsedMs = Date.now() - started;
  await walk;
  return r;
}

describe('production mode (NODE_ENV=production), the service alone', () => {
  it('with no address variables exits 1 at once naming all four, having started no process', async () => {
    const r = await runService(bareEnv({}));
    expect(r.code).toBe(1);
    for (const name of PRODUCTION_REQUIRED)
      expect(r.stderr).toContain(`${name} is not set: required when NODE_ENV=production`);
    // Its own message, no stack trace, nothing logged as started.
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stdout).toBe('');
    expect(r.snapshots).toBeGreaterThan(0);
    expect([...r.children]).toEqual([]);
    // "At once": node and tsx start-up only (generous for a loaded machine), no waiting for anything.
    expect(r.elapsedMs).toBeLessThan(30_000);
  });

  it('with addresses where nothing answers it waits — not ready on /readyz, saying for what — and starts nothing', async () => {
    const port = await freePort();
    const env = bareEnv({
      KAFKA_BROKERS: '127.0.0.1:1',
      TEMPORAL_ADDRESS: '127.0.0.1:1',
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      WAREHOUSE_URL: 'http://127.0.0.1:1',
      METRICS_PORT: String(port),
    });
    let readyz:
      | { status: number; body: { ready: boolean; checks: Record<string, { ok: boolean; reason?: string }> } }
      | undefined;
    let livez = 0;
    const r = await runService(env, async (child, run) => {
      // Served during start-up: not ready while the first dependency (Temporal, which every role needs) is down.
      readyz = await waitFor(
        '/readyz to say what start-up waits for',
        async () => {
          const res = await fetch(`http://127.0.0.1:${port}/readyz`);
          const body = (await res.json()) as NonNullable<typeof readyz>['body'];
          return body.checks.startup?.reason?.startsWith('waiting for Temporal at 127.0.0.1:1')
            ? { status: res.status, body }
            : undefined;
        },
        60_000,
      );
      livez = (await fetch(`http://127.0.0.1:${port}/livez`)).status;
      // Several attempts, each one a chance to start something: the walk keeps looking meanwhile.
      await waitFor(
        'three failed attempts',
        async () =>
          (run.stdout.match(/"msg":"waiting for Temporal at 127.0.0.1:1"/g) ?? []).length >= 3 ? true : undefined,
        90_000,
      );
      child.kill('SIGTERM');
    });
    expect(readyz!.status).toBe(503);
    expect(readyz!.body.ready).toBe(false);
    expect(readyz!.body.checks.startup!.reason).toContain('127.0.0.1:1');
    expect(livez).toBe(200);
    // A start-up given up by a signal exits 0.
    expect(r.code).toBe(0);
    expect(r.snapshots).toBeGreaterThan(3);
    expect([...r.children]).toEqual([]);
  });
});
