/**
 * `npm test`'s closing count over its vitest runs (tools/test.ts): `tests: N passed, N failed[, N skipped]`, and when a
 * whole project could not run here (the failover lane without a network namespace), its tests counted as skipped and
 * the project named on the same line — a run that left out a lane never reads as one that ran it.
 */
import { spawnSync } from 'node:child_process';

export interface Run {
  code: number;
  counts?: { passed: number; failed: number; skipped: number };
  /** The reporter's `failed: …` lines, as printed (with the run's prefix). */
  failures: string[];
  /** A project that was not run at all, and why: its tests are this run's `skipped`. */
  notRun?: { project: string; why: string };
}

/** The closing text (every failure named again, then the count) and the exit code of several runs. */
export function closingCount(results: Run[]): { text: string; code: number } {
  const total = { passed: 0, failed: 0, skipped: 0 };
  for (const r of results) {
    total.passed += r.counts?.passed ?? 0;
    total.failed += r.counts?.failed ?? (r.code === 0 ? 0 : 1);
    total.skipped += r.counts?.skipped ?? 0;
  }
  // The runs' output is interleaved and the one that ended first scrolled away: name every failure again here.
  const failures = results.flatMap((r) => r.failures);
  const notRun = results.flatMap((r) =>
    r.notRun ? [`${r.notRun.project}: ${r.counts?.skipped ?? 0} not run, ${r.notRun.why}`] : [],
  );
  const count = `tests: ${total.passed} passed, ${total.failed} failed${total.skipped ? `, ${total.skipped} skipped` : ''}`;
  return {
    text: `${failures.length > 0 ? `\n${failures.join('\n')}\n` : ''}\n${count}${notRun.length > 0 ? ` (${notRun.join('; ')})` : ''}\n`,
    code: results.some((r) => r.code !== 0) ? 1 : 0,
  };
}

/**
 * A vitest project that cannot run here, as a run: its tests, as `vitest list` collects them, counted as skipped. A
 * project whose files cannot even be collected is a failure, named.
 */
export function notRunProject(vitest: string, cwd: string, project: string, why: string): Run {
  const listed = spawnSync(process.execPath, [vitest, 'list', '--project', project, '--json'], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const tests = listed.status === 0 ? countListed(listed.stdout) : undefined;
  if (tests === undefined)
    return {
      code: 1,
      failures: [
        `failed: the ${project} tests, not run (${why}), could not be listed: vitest list exited ${listed.status}`,
      ],
    };
  return { code: 0, counts: { passed: 0, failed: 0, skipped: tests }, failures: [], notRun: { project, why } };
}

/** How many tests `vitest list --json` printed; undefined when its output is not that list. */
export function countListed(stdout: string): number | undefined {
  try {
    const list: unknown = JSON.parse(stdout);
    return Array.isArray(list) ? list.length : undefined;
  } catch {
    return undefined;
  }
}
