/**
 * The Java time-skipping test server, started by the tests and waited for by a condition — not by the SDK's
 * built-in launcher, whose fixed few-second start-up deadline a JVM on a busy 2-core machine can miss.
 *
 * The server runs from the stack's cached wrapper on a free loopback port; the environment is built over it
 * with time skipping on. `@temporalio/testing` exposes that combination only through its internal `create`
 * (the public `createFromExistingServer` turns time skipping off), so this module is the one place that calls
 * it; the SDK version is pinned in package.json, and test/stack/test-server.int.test.ts proves it still works.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll } from 'vitest';
import { testServerExecutablePath } from '../../tools/stack/index.js';
import { waitFor } from './harness.js';
import { freePort } from './processes.js';

/** How long the JVM may take to answer on a loaded machine before the suite fails, milliseconds. */
const START_TIMEOUT_MS = 180_000;

interface InternalCreate {
  create(opts: {
    server: { type: 'existing' };
    address: string;
    supportsTimeSkipping: boolean;
  }): Promise<TestWorkflowEnvironment>;
}

export interface TimeSkippingServer {
  env: TestWorkflowEnvironment;
  /** Closes the environment's connections and stops the server process. */
  teardown(): Promise<void>;
}

export async function startTimeSkipping(): Promise<TimeSkippingServer> {
  const port = await freePort();
  const child: ChildProcess = spawn(await testServerExecutablePath(), [String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
  let exited: number | string | undefined;
  child.on('exit', (code, signal) => (exited = code ?? signal ?? 'unknown'));
  const stop = () =>
    new Promise<void>((resolve) => {
      if (exited !== undefined) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  try {
    const env = await waitFor(
      'the time-skipping test server to answer',
      async () => {
        if (exited !== undefined) throw new Error(`test server exited ${exited}: ${stderr}`);
        return (TestWorkflowEnvironment as unknown as InternalCreate).create({
          server: { type: 'existing' },
          address: `127.0.0.1:${port}`,
          supportsTimeSkipping: true,
        });
      },
      START_TIMEOUT_MS,
      250,
    );
    return {
      env,
      async teardown() {
        await env.teardown();
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * One time-skipping server for the calling test file: started before its first test, stopped after its last. `env` is
 * the environment while the file's tests run.
 */
export function timeSkippingForThisFile(): { readonly env: TestWorkflowEnvironment } {
  let server: TimeSkippingServer | undefined;
  beforeAll(async () => {
    server = await startTimeSkipping();
  });
  afterAll(async () => server?.teardown());
  return {
    get env() {
      if (!server) throw new Error('the time-skipping server is not started yet (use it inside a test)');
      return server.env;
    },
  };
}
