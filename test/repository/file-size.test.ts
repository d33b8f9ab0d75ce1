/**
 * No product file (src/, activities/, workflows/) runs over 400 lines: a file that long holds more than one concept, so
 * it is split where a reader would look for each — a module per concept, named for it. The exceptions below are
 * named with their reason, and each is dropped as soon as its file is back under the limit (the test says so).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const LIMIT = 400;

/** Files allowed over the limit for now, and why; each must still be over it (else drop it here). */
const EXCEPTIONS: Record<string, string> = {};

/** Lines of a file as `wc -l` counts them. */
function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** Every .ts file under the product's folders, relative to the root. */
function productFiles(): string[] {
  return ['src', 'activities', 'workflows'].flatMap((dir) =>
    readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile() && e.name.endsWith('.ts'))
      .map((e) => relative(root, join(e.parentPath, e.name))),
  );
}

/** `path (N lines)` for each file over `limit` that `exceptions` does not name. */
function overLimit(files: { path: string; lines: number }[], limit: number, exceptions: Record<string, string>) {
  return files.filter((f) => f.lines > limit && !(f.path in exceptions)).map((f) => `${f.path} (${f.lines} lines)`);
}

describe('product file size', () => {
  const files = productFiles().map((path) => ({ path, lines: lineCount(readFileSync(join(root, path), 'utf8')) }));

  it(`no product file is over ${LIMIT} lines`, () => {
    expect(files.length).toBeGreaterThan(50);
    expect(
      overLimit(files, LIMIT, EXCEPTIONS),
      `over ${LIMIT} lines: split each where its concepts part (a module per concept, named for it), no behaviour change`,
    ).toEqual([]);
  });

  it('every exception is still a file over the limit', () => {
    const stale = Object.keys(EXCEPTIONS).filter((p) => !files.some((f) => f.path === p && f.lines > LIMIT));
    expect(stale, `back under ${LIMIT} lines or gone: drop them from EXCEPTIONS`).toEqual([]);
  });

  it('the check finds a file over the limit, and counts lines as wc -l does', () => {
    expect(lineCount('a\nb\n')).toBe(2);
    expect(lineCount('a\nb')).toBe(2);
    const sample = [
      { path: 'src/a.ts', lines: LIMIT },
      { path: 'src/b.ts', lines: LIMIT + 1 },
      { path: 'src/c.ts', lines: LIMIT + 1 },
    ];
    expect(overLimit(sample, LIMIT, { 'src/c.ts': 'named' })).toEqual([`src/b.ts (${LIMIT + 1} lines)`]);
  });
});
