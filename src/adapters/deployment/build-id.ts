/**
 * This build's id: the version a worker runs in its worker deployment (Temporal Worker Deployment Versioning). Set
 * by WORKER_BUILD_ID; else, run from what `npm run build` emitted, the id it stamped beside the code (dist/build-id:
 * BUILD_ID at build time, the git commit, or the workflow bundle's hash — tools/build.ts); else, run from sources,
 * the git commit, with `-modified` when the checkout has uncommitted changes.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** True when this code runs as `npm run build` emitted it (dist/), false from its sources (tsx). */
const FROM_DIST = import.meta.url.endsWith('.js');
/** Where `npm run build` writes the stamp: dist/build-id (this file is dist/src/adapters/deployment/build-id.js). */
export const BUILD_ID_STAMP = fileURLToPath(new URL('../../../build-id', import.meta.url));

/** A build id Temporal takes (and WORKER_BUILD_ID's rule): letters, digits, `-` and `_`. */
export function sanitizeBuildId(raw: string): string {
  return raw
    .trim()
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .slice(0, 200);
}

/** The git commit of the checkout holding this code (12 hex digits, `-modified` with changes), or undefined. */
export function gitBuildId(cwd = dirname(fileURLToPath(import.meta.url))): string | undefined {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const commit = git('rev-parse', '--short=12', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') === '' ? commit : `${commit}-modified`;
  } catch {
    return undefined;
  }
}

function stampedBuildId(): string | undefined {
  if (!FROM_DIST) return undefined;
  try {
    const id = readFileSync(BUILD_ID_STAMP, 'utf8').trim();
    return id === '' ? undefined : id;
  } catch {
    return undefined;
  }
}

/** The build id a worker runs as: `configured` (WORKER_BUILD_ID), the build's stamp, or the git commit. */
export function resolveBuildId(configured: string | undefined): string {
  const id = configured ?? stampedBuildId() ?? gitBuildId();
  if (id === undefined)
    throw new Error(
      `WORKER_BUILD_ID: no build id — not set, no ${BUILD_ID_STAMP} from \`npm run build\`, and no git checkout; expected letters, digits, - and _ (e.g. the image tag)`,
    );
  return id;
}
