/**
 * `npm test`'s closing count (tools/closing-count.ts): a lane that could not run here (the failover tests without a
 * network namespace) is counted as skipped and named on the closing line, never left out of it.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { closingCount, countListed, notRunProject, type Run } from '../../../tools/closing-count.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const ran = (passed: number, failed = 0): Run => ({
  code: failed ? 1 : 0,
  counts: { passed, failed, skipped: 0 },
  failures: [],
});
const lastLine = (text: string) => text.trimEnd().split('\n').at(-1);

describe("npm test's closing count", () => {
  it('counts a lane that was not run as skipped, and names it on the closing line', () => {
    const notRun: Run = {
      code: 0,
      counts: { passed: 0, failed: 0, skipped: 9 },
      failures: [],
      notRun: { project: 'failover', why: 'no network namespace' },
    };
    const { text, code } = closingCount([ran(800), ran(20), notRun]);
    expect(lastLine(text)).toBe('tests: 820 passed, 0 failed, 9 skipped (failover: 9 not run, no network namespace)');
    expect(code).toBe(0);
  });

  it('is the plain count when every lane ran, and names every failure again above it', () => {
    const failed: Run = { ...ran(3, 1), failures: ['[outage] failed: a > b: boom'] };
    const { text, code } = closingCount([ran(800), failed]);
    expect(text).toBe('\n[outage] failed: a > b: boom\n\ntests: 803 passed, 1 failed\n');
    expect(code).toBe(1);
  });

  it("counts the failover project's tests as vitest collects them, at least one per file", () => {
    const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
    const run = notRunProject(vitest, root, 'failover', 'no network namespace');
    const files = readdirSync(join(root, 'test', 'failover')).filter((f) => f.endsWith('.int.test.ts'));
    expect(run.code).toBe(0);
    expect(run.counts?.skipped).toBeGreaterThanOrEqual(files.length);
    expect(lastLine(closingCount([ran(1), run]).text)).toBe(
      `tests: 1 passed, 0 failed, ${run.counts?.skipped} skipped (failover: ${run.counts?.skipped} not run, no network namespace)`,
    );
  });

  it('refuses output that is not a test list', () => {
    expect(countListed('[{"name":"a"},{"name":"b"}]')).toBe(2);
    expect(countListed('Error: no projects matched')).toBeUndefined();
    expect(countListed('{}')).toBeUndefined();
  });
});
