/**
 * On Node 24 kafkajs's request queue prints a TimeoutNegativeWarning in every process that talks to Kafka
 * (src/kafka/negative-timeout-warning.ts). Run in fresh processes, on kafkajs's own code: without the filter the
 * warning is printed; with it, it is not, while a negative timeout of anyone else's is still reported.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const armKafkajsQueue = `
  import { createRequire } from 'node:module';
  const RequestQueue = createRequire(process.cwd() + '/')('kafkajs/src/network/requestQueue/index.js');
  const queue = new RequestQueue({ maxInFlightRequests: 1, requestTimeout: 1000, enforceRequestTimeout: false, clientId: 't', broker: 'b', logger: { debug() {} } });
  queue.scheduleCheckPendingRequests();
  setTimeout(() => queue.destroy(), 20);
`;

function stderrOf(script: string): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stderr;
}

describe("kafkajs's negative timeout warning", () => {
  const major = Number(process.versions.node.split('.')[0]);

  it.runIf(major >= 24)('is printed by kafkajs alone on this Node', () => {
    expect(stderrOf(armKafkajsQueue)).toContain('TimeoutNegativeWarning');
  });

  it('is dropped once the filter is imported; any other negative timeout is still reported', () => {
    const filtered = `import './src/kafka/negative-timeout-warning.ts';\n${armKafkajsQueue}`;
    expect(stderrOf(filtered)).not.toContain('TimeoutNegativeWarning');
    if (major >= 24)
      expect(stderrOf(`import './src/kafka/negative-timeout-warning.ts';\nsetTimeout(() => {}, -5);`)).toContain(
        'TimeoutNegativeWarning: -5 is a negative number',
      );
  });
});
