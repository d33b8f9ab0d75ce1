/**
 * A V8 CPU profile (`node --cpu-prof`, e.g. the open loop's service with BENCH_SERVICE_NODE_FLAGS) as the tables
 * docs/performance.md shows: where the process's time went by part (a package under node_modules, a folder of ours,
 * Node's internals, the garbage collector) — self time, and inclusive time of the top-level parts — and the
 * functions with the most self time. Per order when `--orders N` says how many orders the profile covers.
 *
 * `--functions a,b` adds each named function's inclusive time (every sample with it on the stack), e.g. the SDK's
 * promise hook `init` of a workflow thread's profile.
 *
 *   npx tsx bench/profile-summary.ts PROFILE.cpuprofile [--orders N] [--top 25] [--functions init,createWorkflow] [--markdown]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatTable } from '../src/cli/table.js';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    orders: { type: 'string' },
    top: { type: 'string', default: '25' },
    functions: { type: 'string' },
    markdown: { type: 'boolean', default: false },
  },
});
if (positionals.length !== 1)
  throw new Error('usage: profile-summary.ts PROFILE.cpuprofile [--orders N] [--top 25] [--markdown]');
const profile = JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Profile;
const orders = args.orders === undefined ? undefined : Number(args.orders);

/** The part a frame belongs to: a package, a folder of ours, Node's internals, or V8's own pseudo-frames. */
function part(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (/workflow-bundle-[0-9a-f]+\.js$/.test(url)) return 'the workflow bundle';
  if (url.startsWith('evalmachine.')) return '(workflow sandbox glue)';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const ours = /\/(?:dist\/)?(src\/[^/]+|workflows|activities)(?:\/|$)/.exec(url);
  if (ours) return ours[1]!.replace(/\.js$/, '');
  return url
    .replace(/^file:\/\//, '')
    .split('/')
    .slice(-2)
    .join('/');
}

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const selfUs = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i += 1)
  selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const idle = [...selfUs]
  .filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)')
  .reduce((a, [, us]) => a + us, 0);
const busy = total - idle;

const selfByPart = new Map<string, number>();
const inclByPart = new Map<string, number>();
const selfByFn = new Map<string, number>();
const named = (args.functions ?? '').split(',').filter(Boolean);
const inclByFn = new Map<string, number>(named.map((n) => [n, 0]));
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  const f = n.callFrame;
  if (f.functionName === '(idle)') continue;
  const p = part(f.url, f.functionName);
  selfByPart.set(p, (selfByPart.get(p) ?? 0) + us);
  const name = f.functionName || '(anonymous)';
  const fn = `${name.length > 60 ? `${name.slice(0, 57)}…` : name} ${p}:${f.lineNumber + 1}`;
  selfByFn.set(fn, (selfByFn.get(fn) ?? 0) + us);
  // Inclusive: every distinct part (and named function) on the sample's stack gets the sample once.
  const seen = new Set<string>();
  const seenFn = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const name = byId.get(at)!.callFrame.functionName;
    if (inclByFn.has(name) && !seenFn.has(name)) {
      seenFn.add(name);
      inclByFn.set(name, inclByFn.get(name)! + us);
    }
  }
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const c = byId.get(at)!.callFrame;
    const q = part(c.url, c.functionName);
    if (q === '(root)' || seen.has(q)) continue;
    seen.add(q);
    inclByPart.set(q, (inclByPart.get(q) ?? 0) + us);
  }
}

const ms = (us: number) => (us / 1000).toFixed(0);
const share = (us: number) => `${((us / busy) * 100).toFixed(1)} %`;
const perOrder = (us: number) => (orders ? (us / 1000 / orders).toFixed(2) : '–');
const top = Number(args.top);
const partRows = [...selfByPart]
  .sort((a, b) => b[1] - a[1])
  .slice(0, top)
  .map(([p, us]) => [p, ms(us), share(us), perOrder(us), ms(inclByPart.get(p) ?? 0), share(inclByPart.get(p) ?? 0)]);
const fnRows = [...selfByFn]
  .sort((a, b) => b[1] - a[1])
  .slice(0, top)
  .map(([fn, us]) => [fn, ms(us), share(us), perOrder(us)]);

const fnInclRows = [...inclByFn].map(([fn, us]) => [fn, ms(us), share(us), perOrder(us)]);
const title = `${positionals[0]}: ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s profiled, ${ms(busy)} ms busy (${((busy / total) * 100).toFixed(0)} %)${orders ? `, ${orders} orders: ${(busy / 1000 / orders).toFixed(2)} ms per order` : ''}`;
const partHeader = ['part', 'self ms', 'self share', 'self ms/order', 'inclusive ms', 'inclusive share'];
const fnHeader = ['function', 'self ms', 'share', 'ms/order'];
if (args.markdown) {
  const md = (h: string[], rs: string[][]) =>
    [`| ${h.join(' | ')} |`, `|${h.map(() => '---').join('|')}|`, ...rs.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  const incl = fnInclRows.length ? `\n${md(['function (inclusive)', 'ms', 'share', 'ms/order'], fnInclRows)}\n` : '';
  process.stdout.write(`${title}\n\n${md(partHeader, partRows)}\n\n${md(fnHeader, fnRows)}\n${incl}`);
} else {
  const incl = fnInclRows.length
    ? `\n${formatTable(['function (inclusive)', 'ms', 'share', 'ms/order'], fnInclRows).join('\n')}\n`
    : '';
  process.stdout.write(
    `${title}\n\n${formatTable(partHeader, partRows).join('\n')}\n\n${formatTable(fnHeader, fnRows).join('\n')}\n${incl}`,
  );
}
