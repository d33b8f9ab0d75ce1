/**
 * kafkajs 2.2.4's request queue keeps a 1-ms timer loop running on every connection it used, and on Node 24 prints a
 * TimeoutNegativeWarning for it (src/adapters/kafka/request-queue-timer.ts). Run in fresh processes on kafkajs's own
 * queue: without the fix an idle queue checks itself hundreds of times a second; with it, it arms no timer at all — and
 * a request that has to wait for a throttle is still sent once the throttle ends.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KAFKAJS_RELEASE_FIXED } from '../../../../src/adapters/kafka/request-queue-timer.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const FIX =
  "import { requestQueueFixed } from './src/adapters/kafka/request-queue-timer.ts'; if (!requestQueueFixed) process.exit(3);";

/**
 * An idle queue after one finished request (what every connection is between requests): how often it checked its
 * pending requests in 200 ms, and whether a check is still armed. Printed as JSON.
 */
const idleQueue = `
  import { createRequire } from 'node:module';
  const RequestQueue = createRequire(process.cwd() + '/')('kafkajs/src/network/requestQueue/index.js');
  const queue = new RequestQueue({ maxInFlightRequests: 1, requestTimeout: 1000, enforceRequestTimeout: false, clientId: 't', broker: 'b', logger: { debug() {} } });
  let checks = 0;
  const check = queue.checkPendingRequests.bind(queue);
  queue.checkPendingRequests = () => { checks += 1; check(); };
  queue.checkPendingRequests();
  const before = checks;
  setTimeout(() => {
    console.log(JSON.stringify({ checks: checks - before, armed: queue.throttleCheckTimeoutId !== null }));
    queue.destroy();
  }, 200);
`;

/** A request pushed while the queue is throttled for 50 ms: when it was sent, in ms after the push. */
const throttledRequest = `
  import { createRequire } from 'node:module';
  const RequestQueue = createRequire(process.cwd() + '/')('kafkajs/src/network/requestQueue/index.js');
  const queue = new RequestQueue({ maxInFlightRequests: 1, requestTimeout: 1000, enforceRequestTimeout: false, clientId: 't', broker: 'b', logger: { debug() {} } });
  queue.maybeThrottle(50);
  const pushed = Date.now();
  queue.push({ entry: { correlationId: 1, resolve() {}, reject() {} }, expectResponse: false, sendRequest: () => {
    console.log(JSON.stringify({ sentAfterMs: Date.now() - pushed, armed: queue.throttleCheckTimeoutId !== null }));
    queue.destroy();
  } });
`;

function run(script: string): { stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return { stdout: r.stdout, stderr: r.stderr };
}

describe("kafkajs's request queue timer", () => {
  const major = Number(process.versions.node.split('.')[0]);

  it('is the kafkajs release the fix was written for', () => {
    const { version } = createRequire(import.meta.url)('kafkajs/package.json') as { version: string };
    expect(
      version,
      'a new kafkajs: read its request queue, then drop or adapt src/adapters/kafka/request-queue-timer.ts',
    ).toBe(KAFKAJS_RELEASE_FIXED);
  });

  it('kafkajs alone: an idle queue checks itself every millisecond, and Node 24 warns of the negative delay', () => {
    const { stdout, stderr } = run(idleQueue);
    const idle = JSON.parse(stdout) as { checks: number; armed: boolean };
    // About 200 on an idle machine; far fewer than that is still a loop (the fixed queue makes none).
    expect(idle.checks).toBeGreaterThan(10);
    expect(idle.armed).toBe(true);
    if (major >= 24) expect(stderr).toContain('TimeoutNegativeWarning');
  });

  it('with the fix: an idle queue arms no check and prints no warning', () => {
    const { stdout, stderr } = run(`${FIX}\n${idleQueue}`);
    expect(JSON.parse(stdout)).toEqual({ checks: 0, armed: false });
    expect(stderr).not.toContain('TimeoutNegativeWarning');
  });

  it('with the fix: a request that waits for a throttle is sent when it ends, and nothing stays armed', () => {
    const { stdout } = run(`${FIX}\n${throttledRequest}`);
    const sent = JSON.parse(stdout) as { sentAfterMs: number; armed: boolean };
    expect(sent.sentAfterMs).toBeGreaterThanOrEqual(45);
    expect(sent.armed).toBe(false);
  });
});
