/**
 * Prints one plain closing line after vitest's own summary — `tests: N passed, N failed[, N skipped]` — so that
 * tools which read a run's last line (CI) see how many tests ran, whatever the runner's format. A test that never
 * ran because its file failed is a failure here. Before it, one `failed: <file> > <test>: <reason>` line per failure,
 * so that a log's tail names what failed even when the runner's own report of it scrolled away.
 */
import type { Reporter, TestModule } from 'vitest/node';

/** The first line of an error's message, shortened: enough to tell one failure from another in a log's tail. */
function reason(error: unknown): string {
  const message =
    typeof error === 'object' && error !== null && 'message' in error ? String(error.message) : String(error);
  const first = message.split('\n').find((line) => line.trim() !== '') ?? '';
  return first.length > 300 ? `${first.slice(0, 300)}…` : first;
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = errors.length;
    let skipped = 0;
    const lines = errors.map((error) => `failed: (outside any test): ${reason(error)}`);
    for (const module of modules) {
      const tests = [...module.children.allTests()];
      // A file that failed outside its tests (a hook, an import, a server that never started) counts every test
      // that did not pass as failed, never as skipped, and counts once even when it has no tests at all.
      const fileFailed = module.state() === 'failed';
      if (fileFailed) {
        for (const error of module.errors())
          lines.push(`failed: ${module.relativeModuleId} (the file): ${reason(error)}`);
      }
      if (fileFailed && tests.length === 0) failed += 1;
      for (const test of tests) {
        const result = test.result();
        if (result.state === 'passed') passed += 1;
        else if (result.state === 'failed' || fileFailed) {
          failed += 1;
          const why = result.state === 'failed' ? (result.errors ?? []).map(reason).join(' | ') : 'its file failed';
          lines.push(`failed: ${module.relativeModuleId} > ${test.fullName}: ${why}`);
        } else skipped += 1;
      }
    }
    if (lines.length > 0) process.stdout.write(`\n${lines.join('\n')}\n`);
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}
