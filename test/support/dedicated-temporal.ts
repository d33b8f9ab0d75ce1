/**
 * A Temporal dev server of a test's own (in memory, no UI) on free ports, with dynamic config the shared stack's must
 * not carry — e.g. a run at one of its per-workflow limits — and the app's search attributes. It can be killed (an
 * outage for everyone) and started again on the same port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../../src/provision/temporal.js';
import { waitFor } from './harness.js';
import { freePort } from './processes.js';
import { temporalCliPath } from '../../tools/stack/index.js';

export interface DedicatedTemporal {
  /** host:port of its frontend. */
  address: string;
  /** SIGKILLs it and waits for its exit: Temporal is down for everyone. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: it kept nothing) and waits until it answers. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** `dynamicConfig`: key → value as start-dev's --dynamic-config-value takes it (JSON: strings quoted). */
export async function dedicatedTemporal(
  dynamicConfig: Record<string, string | number | boolean>,
): Promise<DedicatedTemporal> {
  const cli = await temporalCliPath();
  const port = await freePort();
  const httpPort = await freePort();
  const address = `127.0.0.1:${port}`;
  const args = [
    'server',
    'start-dev',
    '--headless',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--http-port',
    String(httpPort),
    '--log-level',
    'error',
    '--color',
    'never',
  ];
  for (const [k, v] of Object.entries(dynamicConfig)) args.push('--dynamic-config-value', `${k}=${JSON.stringify(v)}`);
  for (const [k, v] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${k}=${v}`);
  let child: ChildProcess | undefined;
  let output = '';

  async function start(): Promise<void> {
    const c = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
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
          await conn.workflowService.describeNamespace({ namespace: 'default' });
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
  }

  async function kill(): Promise<void> {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGKILL');
    await exited;
  }

  await start();
  return { address, kill, restart: start, stop: kill };
}
