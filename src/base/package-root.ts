/**
 * Where the package's own files are — migrations/, test/histories/ — whether this code runs from its sources
 * (src/…) or as the JavaScript `npm run build` emitted (dist/src/…): the nearest folder above this module that holds
 * package.json.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

/** The package's root folder (the one with package.json). */
export const PACKAGE_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

/** A path inside the package, from its root. */
export function packagePath(...parts: string[]): string {
  return join(PACKAGE_ROOT, ...parts);
}
