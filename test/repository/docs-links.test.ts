/**
 * The README is the map: every file in docs/ is linked from it, and every relative link in the README and in docs/
 * leads to a file of this repository — and, where it names a heading (`#anchor`), to a heading that exists there.
 * Paths named elsewhere are held the same way: every repository path that code comments (.ts, .js), YAML, Dockerfile
 * and XML comments, Markdown and shell scripts name exists, and so does every root-level file named bare (`package.json`).
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
  'src/adapters/status-events/README.md',
  'src/adapters/warehouse/README.md',
  'src/adapters/deployment/README.md',
  'src/adapters/store/RETENTION.md',
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

/** Folders and files never read: installed, built or run-time state, and recorded histories (data, not prose). */
const SKIPPED = /^(node_modules|dist|\.stack[^/]*|\.cache|\.git|coverage|test\/histories)(\/|$)/;

/** How a kind of file names paths: in its comments, or anywhere in it. */
type Kind = 'code' | 'hash' | 'xml' | 'markdown' | 'shell';

/** What kind of file `path` is for this check (undefined: not read); `text` tells a shell script without a suffix. */
function kindOf(path: string, text: () => string): Kind | undefined {
  if (/\.(ts|js|mjs|cjs)$/.test(path)) return 'code';
  if (/\.ya?ml$/.test(path) || /(^|\/)Dockerfile$/.test(path)) return 'hash';
  if (path.endsWith('.xml')) return 'xml';
  if (path.endsWith('.md')) return 'markdown';
  if (path.endsWith('.sh')) return 'shell';
  if (!/\.[a-z]+$/i.test(path) && /^#!.*\b(ba|da|z)?sh\b/.test(text().split('\n', 1)[0]!)) return 'shell';
  return undefined;
}

/** Every file of the repository the check reads, with its kind, relative to the root. */
function checkedFiles(): { path: string; kind: Kind }[] {
  const out: { path: string; kind: Kind }[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = dir ? `${dir}/${e.name}` : e.name;
      if (SKIPPED.test(path)) continue;
      if (e.isDirectory()) walk(path);
      else if (e.isFile()) {
        const kind = kindOf(path, () => readFileSync(join(root, path), 'utf8'));
        if (kind) out.push({ path, kind });
      }
    }
  };
  walk('');
  return out;
}

/** The lines of `text` a file of `kind` names paths in, each with its line number; others blanked. */
function commentText(text: string, kind: Kind): string[] {
  const lines = text.split('\n');
  if (kind === 'shell') return lines;
  if (kind === 'markdown') {
    // A console block's output is what a program printed then (a file it wrote, say); its commands are checked.
    let fence: string | undefined;
    return lines.map((l) => {
      const open = /^\s*```(\w*)/.exec(l);
      if (open) {
        fence = fence === undefined ? open[1]! : undefined;
        return fence === undefined ? '' : l;
      }
      return fence === 'console' && !l.startsWith('$ ') ? '' : l;
    });
  }
  if (kind === 'hash') return lines.map((l) => /(?:^|\s)#(.*)$/.exec(l)?.[1] ?? '');
  if (kind === 'xml') {
    let open = false;
    return lines.map((l) => {
      let kept = '';
      let rest = l;
      for (;;) {
        if (!open) {
          const at = rest.indexOf('<!--');
          if (at < 0) break;
          open = true;
          rest = rest.slice(at + 4);
        }
        const end = rest.indexOf('-->');
        kept += ` ${end < 0 ? rest : rest.slice(0, end)}`;
        if (end < 0) break;
        open = false;
        rest = rest.slice(end + 3);
      }
      return kept;
    });
  }
  return lines.map((line) => {
    const at = line.indexOf('//');
    const trimmed = line.trim();
    return at >= 0 ? line.slice(at) : trimmed.startsWith('*') || trimmed.startsWith('/*') ? line : '';
  });
}

/** The repository's top-level folders a path may start with. */
const TOP = 'src|docs|tools|activities|workflows|bench|test|deploy|migrations|bin|patches';
/** A path under one of them, up to where the prose or the code around it resumes. */
const PATH = new RegExp(`(?<![\\w./@-])((?:${TOP})\\/[^\\s\`'"()[\\],;|]*)`, 'g');
/** A file named bare that only the repository's root would hold: README.md, docker-compose.yml, package.json, … */
const ROOT_NAME =
  /(?<![\w./@-])([A-Z][A-Z0-9_-]*\.md|Dockerfile|docker-compose[\w.-]*\.ya?ml|package(?:-lock)?\.json|tsconfig[\w.-]*\.json|(?:vitest|eslint|prettier)\.config\.[cm]?[jt]s)(?![\w/-])/g;

/**
 * Repository paths a file of `kind` names (in comments; anywhere in Markdown and shell scripts), each as the part that
 * must exist: a pattern (`at-<commit>/`, `*.int.test.ts`, `NNN_name.sql`, `${dir}`) names its folder only.
 */
function namedPaths(text: string, kind: Kind = 'code'): { line: number; path: string }[] {
  const out: { line: number; path: string }[] = [];
  commentText(text, kind).forEach((line, i) => {
    for (const m of line.matchAll(PATH)) {
      let path = m[1]!.replace(/[#?].*$/, '').replace(/:\d.*$/, '');
      const pattern = /[<>*{}$]|NNN|…/.exec(path);
      if (pattern) path = path.slice(0, path.lastIndexOf('/', pattern.index) + 1);
      path = path.replace(/[.:!]+$/, '');
      if (path) out.push({ line: i + 1, path });
    }
    for (const m of line.matchAll(ROOT_NAME)) out.push({ line: i + 1, path: m[1]! });
  });
  return out;
}

/** `file:line path` for each path `files` name that does not exist. */
function missingPaths(files: { path: string; kind: Kind }[]): string[] {
  return files.flatMap((f) =>
    namedPaths(readFileSync(join(root, f.path), 'utf8'), f.kind)
      .filter((p) => !existsSync(join(root, p.path)))
      .map((p) => `${f.path}:${p.line} ${p.path}`),
  );
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

describe('paths named in the repository', () => {
  const files = checkedFiles();
  const kinds: [Kind, string][] = [
    ['code', '.ts and .js comments'],
    ['hash', 'YAML and Dockerfile comments'],
    ['xml', 'XML comments'],
    ['markdown', 'Markdown'],
    ['shell', 'shell scripts'],
  ];

  it.each(kinds)('every repository path named in %s (%s) exists', (kind) => {
    const ofKind = files.filter((f) => f.kind === kind);
    expect(ofKind.length).toBeGreaterThan(0);
    expect(missingPaths(ofKind)).toEqual([]);
  });

  it('reads every kind where it lives: product, tools, tests, deploy, docs, the root', () => {
    const paths = files.map((f) => f.path);
    for (const p of ['src/roles/worker/role.ts', 'test/repository/docs-links.test.ts', 'deploy/prometheus/rules.yml'])
      expect(paths).toContain(p);
    for (const p of ['tools/stack/maven/kafka/pom.xml', 'README.md', 'docker-compose.yml', '.ci/run'])
      expect(paths).toContain(p);
    expect(paths.filter((p) => SKIPPED.test(p))).toEqual([]);
  });

  it('the check finds a path that does not exist', () => {
    // Spelt apart, so that this file's own check does not read them as paths.
    const [dir, page, file, design] = [
      ['src', 'relay/'],
      ['docs', 'performance.md'],
      ['src', 'nowhere.ts'],
      ['DESIGN', 'md'],
    ].map((p, i) => p.join(i === 3 ? '.' : '/'));
    const text = `const x = 1; ${'//'} see ${dir} and ${page}.\n * as ${file} and ${design} say`;
    expect(namedPaths(text).map((p) => p.path)).toEqual([dir, page, file, design]);
    const hash = `key: 1 ${'#'} after ${file}\n${'#'} ${design}\nurl: "http://x/${file}#frag"`;
    expect(namedPaths(hash, 'hash').map((p) => p.path)).toEqual([file, design]);
    const xml = `<a>${file}</a> <${'!'}-- ${page}\n ${design} --> <b>${file}</b>`;
    expect(namedPaths(xml, 'xml').map((p) => p.path)).toEqual([page, design]);
    const pattern = `${'test'}/histories/at-<commit>/ and ${'migrations'}/NNN_name.sql and ${file}:12.`;
    expect(namedPaths(pattern, 'markdown').map((p) => p.path)).toEqual(['test/histories/', 'migrations/', file]);
    const fence = '`'.repeat(3);
    const consoleBlock = `${fence}console\n$ cat ${file}\nwrote ${page}\n${fence}\n${fence}sh\nls ${page}\n${fence}`;
    expect(namedPaths(consoleBlock, 'markdown').map((p) => p.path)).toEqual([file, page]);
    expect(missingPaths([{ path: 'README.md', kind: 'markdown' }])).toEqual([]);
  });
});
