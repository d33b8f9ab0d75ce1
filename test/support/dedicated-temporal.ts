/**
 * A Temporal of a test's own: the stack's dev server (the Temporal CLI's `server start-dev`, its store a SQLite file in
 * a temporary folder, no UI) on free ports, with dynamic config the shared stack's must not carry — e.g. a run at one
 * of its per-workflow limits —, the default namespace and the app's search attributes. It can be killed (an outage
 * for everyone) and started again on the same ports and store.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { loadConfig } from '../../src/base/config.js';
import { waitFor } from './harness.js';
import { freePort } from './processes.js';
import { ensureNamespace, privateServerCommand, registerSearchAttributes } from '../../tools/stack/index.js';

export interface DedicatedTemporal {
  /** host:port of its frontend. */
  address: string;
  /** SIGKILLs it and waits for its exit: Temporal is down for everyone. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and store and waits until it answers. */
  restart(): Promise<void>;
  /**
   * Replaces the dynamic config given at the start: the dev server reads it from its command line only, so it is
   * stopped and started again on the same ports and store with the new values (a short outage for everyone).
   */
  setDynamicConfig(values: Record<string, string | number | boolean>): Promise<void>;
  stop(): Promise<void>;
}

/** `dynamicConfig`: key → value, beside the stack's own (services/temporal-server.ts, stackDynamicConfig). */
export async function dedicatedTemporal(
  dynamicConfig: Record<string, string | number | boolean>,
): Promise<DedicatedTemporal> {
  const host = '127.0.0.1';
  const port = await freePort();
  const address = `${host}:${port}`;
  const dir = mkdtempSync(join(tmpdir(), 'dedicated-temporal-'));
  const { command, args } = await privateServerCommand(dir, { host, port, httpPort: await freePort() });
  let values: Record<string, string | number | boolean> = dynamicConfig;
  const settings = loadConfig({ TEMPORAL_ADDRESS: address }).temporal;
  let child: ChildProcess | undefined;
  let output = '';

  async function start(): Promise<void> {
    const c = spawn(command, args(values), { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    const keep = (chunk: Buffer) => void (output = (output + chunk.toString()).slice(-4000));
    c.stdout!.on('data', keep);
    c.stderr!.on('data', keep);
    await waitFor(
      `the dedicated Temporal at ${address} to answer`,
      async () => {
        if (c.exitCode !== null) throw new Error(`the dedicated Temporal exited ${c.exitCode}: ${output}`);
        const conn = await Connection.connect({ address, connectTimeout: '2s' }).catch(() => undefined);
        if (!conn) return undefined;
        try {
          await conn.workflowService.getSystemInfo({});
          return true;
        } catch {
          return undefined;
        } finally {
          await conn.close();
        }
      },
      180_000,
      250,
    );
    // A new store has no namespace and no search attributes.
    await ensureNamespace(settings, 'the dedicated Temporal');
    await registerSearchAttributes(settings, true, 'the dedicated Temporal');
  }

  async function kill(): Promise<void> {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGKILL');
    await exited;
  }

  await start();
  return {
    address,
    kill,
    restart: start,
    async setDynamicConfig(next) {
      values = { ...dynamicConfig, ...next };
      await kill();
      await start();
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
