/**
 * promtool, Prometheus's own rule checker and rule unit-test runner, for deploy/prometheus/. Where Debian's packages
 * are at hand (apt-get, as on this project's machines) it is the binary of Debian's `prometheus` package, fetched with
 * `apt-get download` (apt checks it against the signed index) and unpacked with `dpkg -x` into the cache
 * (~/.cache/fulfilment/promtool-<version>, or FULFILMENT_CACHE_DIR): nothing is installed and no Prometheus server
 * runs. Elsewhere it is built once with `go install github.com/prometheus/prometheus/cmd/promtool@<tag>` (a few
 * minutes; log `<cache>/logs/go-install-promtool.log`).
 *
 *   npx tsx tools/deploy/promtool.ts                       # fetches it if needed, prints its path
 *   npx tsx tools/deploy/promtool.ts test rules deploy/prometheus/rules.test.yml   # runs promtool with those args
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cachedFolder, cacheDir, fmtSeconds, goInstalledTool, runQuick, say, StackError } from '../stack/index.js';

/** The Debian package that carries promtool beside the server (bookworm: Prometheus 2.42). */
export const PROMTOOL_DEBIAN_PACKAGE = 'prometheus';

/**
 * Go module tags of Prometheus, tried in order where no Debian package can be had (the Go module of Prometheus 3.x is
 * tagged v0.3xx.y): the newest first, older ones if it does not build with the machine's Go.
 */
export const PROMTOOL_TAGS = ['v0.316.0', 'v0.315.1', 'v0.314.0'];

/**
 * The oldest promtool the rules and their unit tests are known to pass on: bookworm's package (they also pass on 2.53
 * and 3.5). Which release a machine gets is not pinned — Debian's candidate, or the first tag above that builds — so
 * it is stated instead: `promtoolPath()` says which it uses, and refuses one older than this.
 */
export const PROMTOOL_OLDEST = '2.42.0';

/**
 * The release of promtool `bin`: what `promtool --version` reports ("promtool, version 2.42.0+ds (branch: …)" →
 * "2.42.0"); a Go build, whose binary reports none, is the release of the module tag it was built from (its
 * `<cache>/bin/promtool.version`: v0.316.0 is Prometheus 3.16.0).
 */
export function promtoolVersion(bin: string): string | undefined {
  const reported = /\bversion (\d+\.\d+\.\d+)/.exec(runQuick(bin, ['--version']).output)?.[1];
  if (reported) return reported;
  try {
    const tag =
      readFileSync(join(dirname(bin), 'promtool.version'), 'utf8')
        .split(' ')[0]
        ?.trim() ?? '';
    const m = /^v0\.(\d)(\d\d)\.(\d+)$/.exec(tag);
    return m ? `${m[1]}.${Number(m[2])}.${m[3]}` : undefined;
  } catch {
    return undefined;
  }
}

/** True when release `a` (x.y.z) is older than `b`. */
export function olderThan(a: string, b: string): boolean {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < 3; i += 1) if ((x?.[i] ?? 0) !== (y?.[i] ?? 0)) return (x?.[i] ?? 0) < (y?.[i] ?? 0);
  return false;
}

/** Says which promtool is used, and refuses one older than PROMTOOL_OLDEST. */
export function statedPromtool(bin: string): string {
  const version = promtoolVersion(bin);
  if (version && olderThan(version, PROMTOOL_OLDEST))
    throw new StackError(
      `promtool ${version} (${bin}) is older than ${PROMTOOL_OLDEST}, the oldest the alert rules are known to pass on`,
    );
  say(`promtool ${version ?? '(its build does not report a version)'}: ${bin}`);
  return bin;
}

const aptAvailable = (): boolean =>
  runQuick('apt-get', ['--version']).status === 0 && runQuick('dpkg', ['--version']).status === 0;

/** The candidate version apt would download, or undefined when its lists do not know the package. */
function candidate(): string | undefined {
  const m = /Candidate:\s*(\S+)/.exec(runQuick('apt-cache', ['policy', PROMTOOL_DEBIAN_PACKAGE]).output);
  return m?.[1] && m[1] !== '(none)' ? m[1] : undefined;
}

function run(label: string, command: string, args: string[], cwd: string): void {
  const r = runQuick(command, args, { cwd });
  if (r.status !== 0) throw new StackError(`${label} failed (exit ${r.status}): ${r.output.trim().slice(-600)}`);
}

/** promtool from Debian's package, into `<cache>/promtool-<version>/promtool` (once). */
async function debianPromtool(): Promise<string> {
  let version = candidate();
  if (!version) {
    say('apt-get update (its package lists know no prometheus yet)...');
    run('apt-get update', 'apt-get', ['update', '-qq'], '/');
    version = candidate();
  }
  if (!version) throw new StackError(`apt knows no ${PROMTOOL_DEBIAN_PACKAGE} package`);
  const dir = join(cacheDir(), `promtool-${version.replace(/[^A-Za-z0-9.+~-]/g, '_')}`);
  const bin = join(dir, 'promtool');
  return cachedFolder({
    dir,
    bin,
    lock: join(cacheDir(), '.locks', 'promtool'),
    what: 'the promtool download',
    async fill(tmp) {
      const start = Date.now();
      say(`fetching promtool from Debian's ${PROMTOOL_DEBIAN_PACKAGE} ${version} (first run only)...`);
      run('apt-get download', 'apt-get', ['download', `${PROMTOOL_DEBIAN_PACKAGE}=${version}`], tmp);
      const deb = readdirSync(tmp).find((f) => f.endsWith('.deb'));
      if (!deb) throw new StackError(`apt-get download ${PROMTOOL_DEBIAN_PACKAGE}=${version} left no .deb in ${tmp}`);
      run('dpkg -x', 'dpkg', ['-x', deb, 'x'], tmp);
      renameSync(join(tmp, 'x', 'usr', 'bin', 'promtool'), join(tmp, 'promtool'));
      rmSync(join(tmp, 'x'), { recursive: true, force: true });
      rmSync(join(tmp, deb));
      writeFileSync(join(tmp, 'source'), `Debian package ${PROMTOOL_DEBIAN_PACKAGE} ${version}\n`);
      say(`promtool from ${PROMTOOL_DEBIAN_PACKAGE} ${version} in ${fmtSeconds(Date.now() - start)} → ${bin}`);
    },
  });
}

/**
 * promtool: Debian's where apt is at hand, else the cached Go build (first run only, a few minutes); which release it
 * is, is said (see PROMTOOL_OLDEST).
 */
export async function promtoolPath(): Promise<string> {
  if (aptAvailable() && process.getuid?.() === 0) return statedPromtool(await debianPromtool());
  return statedPromtool(
    await goInstalledTool({
      name: 'promtool',
      pkg: 'github.com/prometheus/prometheus/cmd/promtool',
      tags: PROMTOOL_TAGS,
      expected: '~3-8 min',
      versioned: true,
    }),
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  promtoolPath().then(
    (bin) => {
      const args = process.argv.slice(2);
      if (args.length === 0) {
        process.stdout.write(`${bin}\n`);
        process.exit(0);
      }
      const r = spawnSync(bin, args, { stdio: 'inherit' });
      process.exit(r.status ?? 1);
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof StackError ? err.message : ((err as Error).stack ?? String(err))}\n`);
      process.exit(1);
    },
  );
}
