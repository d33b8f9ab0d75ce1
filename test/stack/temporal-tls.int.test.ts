/**
 * The TLS Temporal belongs to the checkout whose stack started it: its server trusts only the CA and the signing key
 * of that state dir, so another checkout's stack (another STACK_DIR) must not take it for its own, as it does the
 * plaintext services. Its `up` fails naming the stack that holds the port; its `status` does not call it running.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, stateDir } from '../../tools/stack/paths.js';
import type { TemporalTlsInfo } from '../../tools/stack/index.js';
import { tlsTemporal } from '../support/temporal-tls.js';

const run = promisify(execFile);

let tls: TemporalTlsInfo;
/** The state dir of "another checkout": empty, nothing of it runs. */
let otherDir: string;
const stack = (args: string[]) =>
  run(process.execPath, ['--import', 'tsx', 'tools/stack/cli.ts', ...args], {
    cwd: repoRoot,
    env: { ...process.env, STACK_DIR: otherDir },
    timeout: 60_000,
  });

beforeAll(async () => {
  tls = await tlsTemporal();
  otherDir = mkdtempSync(join(tmpdir(), 'other-checkout-stack-'));
});

afterAll(() => {
  if (otherDir) rmSync(otherDir, { recursive: true, force: true });
});

describe("another checkout's stack and this one's TLS Temporal", () => {
  it('up --only temporal-tls fails naming the stack that holds the port, and starts nothing', async () => {
    const failed = await stack(['up', '--only', 'temporal-tls']).then(
      () => undefined,
      (e: unknown) => e as { code: number; stderr: string },
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain(
      `port ${tls.address} (TLS Temporal frontend) is used by the stack in ${stateDir()}, whose certificates and keys are not this checkout's`,
    );
    expect(failed?.stderr).toContain('STACK_TEMPORAL_TLS_PORT');
    expect(existsSync(join(otherDir, 'temporal-tls.pid'))).toBe(false);
  });

  it('status shows it stopped with that note, not as an external service to use', async () => {
    const { stdout } = await stack(['status', '--json']);
    const services = (
      JSON.parse(stdout) as { services: Record<string, { state: string; answering?: boolean; note?: string }> }
    ).services;
    expect(services['temporal-tls']).toMatchObject({ state: 'stopped', answering: true });
    expect(services['temporal-tls']!.note).toContain(`used by the stack in ${stateDir()}`);
  });
});
