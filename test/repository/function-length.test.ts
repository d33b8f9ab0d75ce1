/**
 * No function of the product (src/, activities/, workflows/) runs over 80 lines unless its comment says why ("Over 80
 * lines: …"): a long function is a place a reader climbs through, so it is split into named steps, or it says what
 * keeps it whole (a factory whose methods share its state, a list of declarations).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const LIMIT = 80;
/** The product's folders: the service, the order's activities and its workflows. */
const PRODUCT = ['src', 'activities', 'workflows'];
const REASON = /Over 80 lines: \S/;

/** Functions of `file` longer than LIMIT lines whose leading comment (or their declaration's) gives no reason. */
function longWithoutReason(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const commentOf = (node: ts.Node) =>
    (ts.getLeadingCommentRanges(text, node.getFullStart()) ?? []).map((r) => text.slice(r.pos, r.end)).join('\n');
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      if (last - first + 1 > LIMIT) {
        // The comment stands over the function, or over the statement that declares it (`const f = () => …`).
        let holder: ts.Node = node;
        while (
          holder.parent &&
          !ts.isSourceFile(holder.parent) &&
          !ts.isBlock(holder.parent) &&
          !ts.isClassLike(holder.parent)
        )
          holder = holder.parent;
        if (!REASON.test(commentOf(node)) && !REASON.test(commentOf(holder))) {
          const named = (n: ts.Node) =>
            (ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isVariableDeclaration(n)) && n.name
              ? n.name.getText(source)
              : undefined;
          found.push(`${file}: ${named(node) ?? named(node.parent) ?? '(anonymous)'}`);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('function length', () => {
  it(`no function in ${PRODUCT.join('/, ')}/ over ${LIMIT} lines without its reason stated`, () => {
    const files = PRODUCT.flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
        .filter((d) => d.isFile() && d.name.endsWith('.ts'))
        .map((d) => join(d.parentPath, d.name).slice(root.length)),
    );
    expect(files).toEqual(expect.arrayContaining(['activities/index.ts', 'workflows/order-fulfilment.ts']));
    const found = files.flatMap((f) => longWithoutReason(f, readFileSync(join(root, f), 'utf8')));
    expect(found, 'long, with no reason stated').toEqual([]);
  });

  it('the check finds a long function without a reason, and accepts one with it', () => {
    const body = Array.from({ length: LIMIT }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const long = `export function long(): void {\n${body}\n}\n`;
    expect(longWithoutReason('x.ts', long)).toEqual(['x.ts: long']);
    expect(longWithoutReason('x.ts', `/** Over 80 lines: a list of declarations. */\n${long}`)).toEqual([]);
    expect(
      longWithoutReason('x.ts', `/** Over 80 lines: shared state. */\nexport const f = () => {\n${body}\n};\n`),
    ).toEqual([]);
  });
});
