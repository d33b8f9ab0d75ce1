/**
 * `npm run build`: the JavaScript production runs. Emits src/, workflows/, activities/ and the bench's child process
 * into dist/ with tsc (incremental: an unchanged tree builds in about a second), then prebuilds the workflow bundles a
 * worker run from dist/ loads instead of bundling at start-up (src/domain/temporal.ts prebuiltBundlePath): plain, and
 * with the OpenTelemetry workflow interceptors. `npm start`, the bench and the image run dist/; tsx is for sources
 * only.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { gitBuildId, sanitizeBuildId } from '../src/adapters/deployment/build-id.js';
import { repoRoot } from './stack/index.js';

const dist = join(repoRoot, 'dist');
const say = (line: string) => process.stdout.write(`[build] ${line}\n`);

let t0 = Date.now();
say('tsc -p tsconfig.build.json → dist/');
const tsc = spawnSync(
  process.execPath,
  [join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(repoRoot, 'tsconfig.build.json')],
  { stdio: 'inherit' },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
say(`  emitted in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

const quiet = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: console.warn,
  error: console.error,
};
let plainBundleHash = '';
for (const traced of [false, true]) {
  t0 = Date.now();
  const out = join(dist, 'workflows', `bundle${traced ? '-traced' : ''}.js`);
  const { code, sourceMap } = await bundleWorkflowCode({
    workflowsPath: join(dist, 'workflows', 'index.js'),
    logger: quiet,
    ...(traced ? { workflowInterceptorModules: [join(dist, 'workflows', 'tracing-interceptors.js')] } : {}),
  });
  writeFileSync(out, code);
  writeFileSync(`${out}.map`, sourceMap);
  if (!traced) plainBundleHash = createHash('sha256').update(code).digest('hex').slice(0, 12);
  say(
    `  workflow bundle${traced ? ' (traced)' : ''} → ${out.slice(repoRoot.length + 1)} (${(code.length / 2 ** 20).toFixed(1)} MB) in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
}

// The build id a worker from dist/ runs as, unless WORKER_BUILD_ID says otherwise
// (src/adapters/deployment/build-id.ts): BUILD_ID given to the build (the image's build argument), else the git commit,
// else the workflow code's hash.
const buildId = sanitizeBuildId(process.env.BUILD_ID || gitBuildId(repoRoot) || `bundle-${plainBundleHash}`);
writeFileSync(join(dist, 'build-id'), `${buildId}\n`);
say(`  build id ${buildId} → dist/build-id`);
