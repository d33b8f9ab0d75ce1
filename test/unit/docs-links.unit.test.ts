/**
 * The README is the map: every file in docs/ is linked from it, and every relative link in the README and in docs/
 * leads to a file of this repository — and, where it names a heading (`#anchor`), to a heading that exists there.
 * The code's comments are held the same way: every repository path one names exists.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const docs = readdirSync(join(root, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => join('docs', f));
const pages = [
  'README.md',
  ...docs,
  'tools/stack/README.md',
  'src/status-events/README.md',
  'src/warehouse/README.md',
  'src/deployment/README.md',
  'src/store/RETENTION.md',
];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  let inCode = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    const m = !inCode && /^#{1,6} (.*)$/.exec(line);
    if (m)
      out.add(
        m[1]!
          .trim()
          .toLowerCase()
          .replace(/[^\w\- ]/g, '')
          .replace(/ /g, '-'),
      );
  }
  return out;
}

/** Relative markdown links of a page, outside code blocks: [text](target). */
function links(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/.test(t));
}

/** Every .ts file under `dir` (node_modules and dist left out), relative to the root. */
function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter(
      (e) =>
        e.isFile() &&
        e.name.endsWith('.ts') &&
        !/(^|[\\/])(node_modules|dist)([\\/]|$)/.test(relative(root, e.parentPath)),
    )
    .map((e) => relative(root, join(e.parentPath, e.name)));
}

/** Repository paths named in a file's comments (`//` to the end of the line, and block-comment lines). */
function commentPaths(text: string): { line: number; path: string }[] {
  const out: { line: number; path: string }[] = [];
  text.split('\n').forEach((line, i) => {
    const at = line.indexOf('//');
    const trimmed = line.trim();
    const comment = at >= 0 ? line.slice(at) : trimmed.startsWith('*') || trimmed.startsWith('/*') ? line : '';
    for (const m of comment.matchAll(
      /(?<![\w./-])((?:src|docs|tools|activities|workflows|bench|test|deploy|migrations)\/[\w.\-/]*[\w/])/g,
    )) {
      // NNN_name.sql and the like are patterns, not paths.
      if (!m[1]!.includes('NNN')) out.push({ line: i + 1, path: m[1]!.replace(/\.+$/, '') });
    }
  });
  return out;
}

describe('the README and docs/', () => {
  it('the README is under 300 lines and links every file in docs/', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    const linked = new Set(links(readme).map((l) => l.split('#')[0]!));
    expect(docs.filter((d) => !linked.has(d))).toEqual([]);
  });

  it.each(pages)('every relative link of %s leads to a file and heading that exist', (page) => {
    const text = readFileSync(join(root, page), 'utf8');
    const broken: string[] = [];
    for (const link of links(text)) {
      const [path, anchor] = link.split('#') as [string, string | undefined];
      const target = path === '' ? join(root, page) : join(root, dirname(page), decodeURI(path));
      if (!existsSync(target)) broken.push(`${link} (no ${relative(root, target)})`);
      else if (anchor && target.endsWith('.md') && !anchors(readFileSync(target, 'utf8')).has(anchor))
        broken.push(`${link} (no heading #${anchor})`);
    }
    expect(broken).toEqual([]);
  });
});

describe("the code's comments", () => {
  it.each(['src', 'workflows', 'activities', 'bench', 'tools', 'test'])(
    'every repository path a comment under %s/ names exists',
    (dir) => {
      const files = sources(dir);
      expect(files.length).toBeGreaterThan(0);
      const missing = files.flatMap((f) =>
        commentPaths(readFileSync(join(root, f), 'utf8'))
          .filter((p) => !existsSync(join(root, p.path)))
          .map((p) => `${f}:${p.line} ${p.path}`),
      );
      expect(missing).toEqual([]);
    },
  );

  it('the check finds a path that does not exist', () => {
    // Spelt apart, so that this file's own check does not read them as paths.
    const [dir, page, file] = [
      ['src', 'relay/'],
      ['docs', 'performance.md'],
      ['src', 'nowhere.ts'],
    ].map((p) => p.join('/'));
    const text = `const x = 1; ${'//'} see ${dir} and ${page}.\n * as ${file} says`;
    expect(commentPaths(text).map((p) => p.path)).toEqual([dir, page, file]);
  });
});
