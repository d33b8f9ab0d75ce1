/**
 * promtool, Prometheus's own rule checker and rule unit-test runner, for deploy/prometheus/: built once with
 * `go install github.com/prometheus/prometheus/cmd/promtool@<tag>` into the cache (~/.cache/fulfilment/bin, or
 * FULFILMENT_CACHE_DIR), again when missing or built from another tag. The build shows its progress and logs to
 * `<cache>/logs/go-install-promtool.log`; it needs a route to the Go module proxy (run the first one outside a
 * network namespace without one).
 *
 *   npx tsx tools/deploy/promtool.ts                       # builds it if needed, prints its path
 *   npx tsx tools/deploy/promtool.ts test rules deploy/prometheus/rules.test.yml   # runs promtool with those args
 */
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { goInstalledTool, StackError } from '../stack/index.js';

/**
 * Go module tags of Prometheus, tried in order (the Go module of Prometheus 3.x is tagged v0.3xx.y): the newest
 * first, older ones if it does not build with the machine's Go.
 */
export const PROMTOOL_TAGS = ['v0.316.0', 'v0.315.1', 'v0.314.0'];

/** promtool: the cached build, else built now with `go install` (first run only, a few minutes). */
export function promtoolPath(): Promise<string> {
  return goInstalledTool({
    name: 'promtool',
    pkg: 'github.com/prometheus/prometheus/cmd/promtool',
    tags: PROMTOOL_TAGS,
    expected: '~3-8 min',
    versioned: true,
  });
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
