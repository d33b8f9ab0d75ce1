/**
 * The local Temporal killed as an OOM kill does (SIGKILL of the dev server's pid), with a process of the stack's own
 * left on its Web UI port — as the separate Web UI server of earlier stacks outlived its Temporal — comes back with one
 * command, `npm run stack -- up --only temporal`: the leftover is recognised (it carries this stack's state dir) and
 * stopped, the dev server starts on the same store, and a workflow started before the kill is still there.
 *
 * Only the outage project runs this (one file at a time, on a stack of its own): it kills the stack's Temporal.
 */
import { execFile, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { planFromEnv, repoRoot, stackStatus, stackUp } from '../../tools/stack/index.js';
import { waitFor } from '../support/harness.js';

const run = promisify(execFile);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
let leftover: number | undefined;

/** Whether something accepts connections on host:port. */
const listening = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, host);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

afterAll(() => {
  if (leftover !== undefined && alive(leftover)) process.kill(leftover, 'SIGKILL');
});

describe('the local Temporal after a kill -9', () => {
  it(
    "comes back with one `up --only temporal`, replacing what is left of the stack's own processes on its ports",
    { timeout: 300_000 },
    async () => {
      const plan = planFromEnv();
      const before = await stackUp({ services: ['temporal'], quiet: true });
      const pid = before.services.temporal.pid;
      expect(pid, 'the stack runs its own Temporal').toBeDefined();

      // A workflow on a task queue nobody polls: it stays open, in the store.
      const workflowId = `crash-${Date.now()}`;
      const connection = await Connection.connect({ address: plan.temporal.address });
      const client = new Client({ connection, namespace: plan.temporal.namespace });
      await client.workflow.start('nobodyRunsThis', { workflowId, taskQueue: `nobody-${workflowId}` });
      await connection.close();

      process.kill(pid!, 'SIGKILL');
      await waitFor('the dev server to be gone', async () => !alive(pid!) || undefined, 30_000, 100);

      // What an earlier stack's Web UI server did: a process of this stack (its state dir in the environment), in a
      // process group of its own, still listening on the Web UI's port.
      const child = spawn(
        process.execPath,
        ['-e', `require('node:net').createServer().listen(${plan.temporal.ui.port}, '${plan.temporal.ui.host}')`],
        { detached: true, stdio: 'ignore', env: { ...process.env, FULFILMENT_STACK_DIR: before.stateDir } },
      );
      leftover = child.pid;
      child.unref();
      await waitFor(
        'the leftover to hold the Web UI port',
        async () => (await listening(plan.temporal.ui.host, plan.temporal.ui.port)) || undefined,
        30_000,
        100,
      );

      // The one command a person runs.
      const { stdout, stderr } = await run(
        process.execPath,
        ['--import', 'tsx', join(repoRoot, 'tools', 'stack', 'cli.ts'), 'up', '--only', 'temporal'],
        { cwd: repoRoot, env: process.env, timeout: 240_000 },
      );
      expect(stderr).toMatch(
        new RegExp(
          `port ${plan.temporal.ui.host}:${plan.temporal.ui.port} \\(Temporal Web UI\\) is held by pid ${leftover} .*left by an earlier run of this stack: stopping it`,
        ),
      );
      expect(stdout).toMatch(/temporal\s+running/);
      expect(alive(leftover!), 'the leftover was stopped').toBe(false);

      const after = await stackStatus();
      expect(after.services.temporal.state).toBe('running');
      expect(after.services.temporal.pid).not.toBe(pid);
      const again = await Connection.connect({ address: plan.temporal.address });
      try {
        const handle = new Client({ connection: again, namespace: plan.temporal.namespace }).workflow.getHandle(
          workflowId,
        );
        expect((await handle.describe()).status.name, 'the workflow started before the kill').toBe('RUNNING');
        await handle.terminate('the test is over');
      } finally {
        await again.close();
      }
      expect((await fetch(plan.temporal.uiUrl)).status).toBeLessThan(500);
    },
  );
});
