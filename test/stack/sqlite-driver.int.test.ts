/**
 * Every stack Temporal on SQLite — the dev server, the TLS Temporal, a test's own — keeps everything on one
 * connection. With the SQLite driver the temporal CLI v1.5.1's dev server pinned (modernc.org/sqlite v1.34.1), a
 * statement whose deadline passes while it runs can leave that connection interrupted for good: every later query
 * answers `interrupted (9)` and the server is useless until restarted — seen on a loaded machine during the suite.
 * The CLI release the stack's dev server now is, and the Temporal server release the TLS Temporal builds, link a
 * driver without that fault (TEMPORAL_SERVER_SQLITE_DRIVER, tools/stack/tools.ts). tools/stack/sqlite-interrupt is
 * the check, run here against that driver and, as the control, against the old one.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../tools/stack/paths.js';
import { temporalCliPath } from '../../tools/stack/temporal-cli.js';
import { requireGo, TEMPORAL_SERVER_SQLITE_DRIVER } from '../../tools/stack/tools.js';

const run = promisify(execFile);
const go = requireGo();
const env = { ...process.env, GOFLAGS: process.env.GOFLAGS ?? '' };
/** The driver the temporal CLI's release v1.5.1 pins. */
const PINNED = 'modernc.org/sqlite@v1.34.1';
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** `module version` of the SQLite driver a Go binary was linked with. */
async function linkedDriver(binary: string): Promise<string | undefined> {
  const { stdout } = await run(go, ['version', '-m', binary], { env, maxBuffer: 16 << 20 });
  const line = stdout.split('\n').find((l) => l.trim().startsWith('dep\tmodernc.org/sqlite\t'));
  return line?.trim().split('\t').slice(1, 3).join('@');
}

/** Builds tools/stack/sqlite-interrupt with `driver` and runs it for up to `rounds` rounds: its exit code and last line. */
async function interruptCheck(driver: string, rounds: number): Promise<{ code: number; said: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-interrupt-'));
  dirs.push(dir);
  copyFileSync(join(repoRoot, 'tools', 'stack', 'sqlite-interrupt', 'main.go'), join(dir, 'main.go'));
  writeFileSync(join(dir, 'go.mod'), 'module sqlite-interrupt\n\ngo 1.24\n');
  await run(go, ['get', driver], { cwd: dir, env, timeout: 300_000 });
  await run(go, ['build', '-o', 'check', '.'], { cwd: dir, env, timeout: 300_000 });
  const result = await run(join(dir, 'check'), [join(dir, 'db.sqlite'), String(rounds)], {
    cwd: dir,
    timeout: 150_000,
  }).then(
    (r) => ({ code: 0, out: r.stdout }),
    (e: { code?: number; stdout?: string }) => ({ code: e.code ?? -1, out: e.stdout ?? '' }),
  );
  return { code: result.code, said: result.out.trim().split('\n').at(-1) ?? '' };
}

describe("the stack's Temporal and its SQLite driver", () => {
  it(`links the dev server (the Temporal CLI) with ${TEMPORAL_SERVER_SQLITE_DRIVER}`, async () => {
    expect(await linkedDriver(await temporalCliPath())).toBe(TEMPORAL_SERVER_SQLITE_DRIVER);
  });

  // Two Go builds of the check, each bounded by its own timeout (on a busy machine one build can take minutes).
  it('with that driver one connection keeps answering after statements were interrupted by their deadlines; with the old one it is stuck for good', async () => {
    const fixed = await interruptCheck(TEMPORAL_SERVER_SQLITE_DRIVER, 10);
    expect(fixed.said).toMatch(/^OK/);
    expect(fixed.code).toBe(0);
    // The old driver gets stuck within a few rounds; it is given up to 60 before the check says it did not.
    const pinned = await interruptCheck(PINNED, 60);
    expect(pinned.said).toMatch(/^STUCK: .*interrupted \(9\)/);
    expect(pinned.code).toBe(1);
  }, 900_000);
});
