/**
 * patches/kafkajs+2.2.4.patch is applied on install (package.json's postinstall runs patch-package): kafkajs's
 * producer tracks a send's answers per partition (test/failover/producer.int.test.ts proves what that changes on the
 * three-node cluster), and a stopping consumer's fetchers no longer spin (found stopping a bridge while a broker was
 * down: the process ran at 100 % of a core and never exited, its shutdown deadline's timer starved). An upgrade of kafkajs makes this fail, so the patch gets a look rather than silently lapsing.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);

describe("kafkajs's producer patch", () => {
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
});
