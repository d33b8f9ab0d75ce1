/**
 * patches/kafkajs+2.2.4.patch is applied on install (package.json's postinstall runs patch-package): kafkajs's
 * producer tracks a send's answers per partition (test/unit/adapters/kafka/kafkajs-producer-retry.unit.test.ts shows what that
 * changes on a scripted cluster, every run; test/failover/producer.int.test.ts on the three-node cluster), and a
 * stopping consumer's fetchers no longer spin (found stopping a bridge while a broker was down: the process ran at
 * 100 % of a core and never exited, its shutdown deadline's timer starved), and a consumer stopped while its brokers
 * change (a node fenced) finishes stopping (found scaling a bridge in while a leader moved: it waited out its shutdown
 * deadline), and a consumer that crashed without leaving its group rejoins as the same member (found in the failover
 * lane: the coordinator waited out the old member's session before any rebalance completed). An upgrade of kafkajs
 * makes this fail, so the patch gets a look rather than silently lapsing.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);

describe("kafkajs's patch", () => {
  it('is on the release it was written for', () => {
    const { version } = require('kafkajs/package.json') as { version: string };
    expect(version).toBe('2.2.4');
  });

  it('is applied: a retry re-sends every partition without an answer, whichever broker answered before', () => {
    const code = readFileSync(require.resolve('kafkajs/src/producer/sendMessages.js'), 'utf8');
    expect(code).toContain('responsePerPartition');
    expect(code).not.toContain('brokersWithoutResponse');
  });

  it('is applied: a consumer that is not running answers its fetchers after a pause, never at once', () => {
    const code = readFileSync(require.resolve('kafkajs/src/consumer/runner.js'), 'utf8');
    expect(code).toMatch(
      /if \(!this\.running\) \{[\s\S]*?await sleep\(NOT_RUNNING_FETCH_DELAY_MS\)[\s\S]*?return \[\]/,
    );
  });

  it('is applied: a consumer that crashed without leaving its group restarts as the member it was', () => {
    const code = readFileSync(require.resolve('kafkajs/src/consumer/index.js'), 'utf8');
    expect(code).toMatch(/rejoinAs = \(crashed && crashed\.memberId\) \|\| null/);
    expect(code).toMatch(/if \(rejoinAs\) \{\s*consumerGroup\.memberId = rejoinAs/);
  });

  it('is applied: a fetch manager stopped while its brokers change stops, instead of starting new fetchers for ever', async () => {
    type FetchManager = { start(): Promise<void>; stop(): Promise<void> };
    const createFetchManager = require('kafkajs/src/consumer/fetchManager') as (o: object) => FetchManager;
    const said: string[] = [];
    const logger = {
      namespace: () => logger,
      debug: (m: string) => said.push(m),
      info: (m: string) => said.push(m),
      warn() {},
      error() {},
    };
    let nodeIds = [1, 2];
    let fetches = 0;
    const fm = createFetchManager({
      logger,
      getNodeIds: () => nodeIds,
      // Long polls that return nothing, as fetches of an idle topic do; node 2's takes longer.
      fetch: async (nodeId: number) => {
        fetches += 1;
        await new Promise((r) => setTimeout(r, nodeId === 2 ? 200 : 5));
        return [];
      },
      handler: async () => {},
      concurrency: 1,
    });
    const started = fm.start();
    while (fetches < 4) await new Promise((r) => setTimeout(r, 1));
    // Node 1 is fenced: its fetcher's next fetch finds the brokers changed, and the manager stops its fetchers (waiting
    // for node 2's poll) to make new ones. The consumer is stopped while it waits.
    nodeIds = [2];
    while (!said.includes('Stopping fetchers...')) await new Promise((r) => setTimeout(r, 1));
    await fm.stop();
    const ended = await Promise.race([
      started.then(() => 'ended'),
      new Promise((r) => setTimeout(() => r('still fetching'), 5_000)),
    ]);
    expect(ended).toBe('ended');
    const after = fetches;
    await new Promise((r) => setTimeout(r, 50));
    expect(fetches).toBe(after);
  });
});
