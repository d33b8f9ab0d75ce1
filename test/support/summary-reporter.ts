/**
 * Prints one plain closing line after vitest's own summary — `tests: N passed, N failed[, N skipped]` — so that
 * tools which read a run's last line (CI) see how many tests ran, whatever the runner's format. A test that never
 * ran because its file failed is a failure here.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = errors.length;
    let skipped = 0;
    for (const module of modules) {
      const tests = [...module.children.allTests()];
      // A file that failed outside its tests (a hook, an import, a server that never started) counts every test
      // that did not pass as failed, never as skipped, and counts once even when it has no tests at all.
      const fileFailed = module.state() === 'failed';
      if (fileFailed && tests.length === 0) failed += 1;
      for (const test of tests) {
        const state = test.result().state;
        if (state === 'passed') passed += 1;
        else if (state === 'failed' || fileFailed) failed += 1;
        else skipped += 1;
      }
    }
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}
