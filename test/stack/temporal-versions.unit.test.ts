/**
 * One Temporal release everywhere: the stack's dev server (the Temporal CLI of tools/stack/temporal-cli.ts), the
 * Temporal server it builds for STACK_TEMPORAL=server and the TLS Temporal, its Web UI server, docker-compose.yml's
 * image, and every release the current documentation names. docs/performance.md and docs/resilience.md are records
 * of measurements taken on the releases of their day, and are left out.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../../tools/stack/paths.js';
import { TEMPORAL_CLI } from '../../tools/stack/temporal-cli.js';
import { TEMPORAL_SERVER_TAG, TEMPORAL_UI_SERVER_TAG } from '../../tools/stack/tools.js';

/** The files that say which Temporal the project runs, is tested on, or asks a deployment for. */
const CURRENT = [
  'README.md',
  'docker-compose.yml',
  'tools/stack/README.md',
  'docs/deploying.md',
  'docs/development.md',
  'docs/testing.md',
  'docs/dependencies.md',
  'docs/changing-the-workflow.md',
  'deploy/kubernetes/kustomization.yaml',
];

const read = (file: string) => readFileSync(join(repoRoot, file), 'utf8');

describe('the Temporal release', () => {
  it('is the one the CLI embeds, for every Temporal the stack runs or builds', () => {
    expect(TEMPORAL_SERVER_TAG).toBe(`v${TEMPORAL_CLI.server}`);
    expect(TEMPORAL_UI_SERVER_TAG).toBe(`v${TEMPORAL_CLI.ui}`);
  });

  it("is docker-compose.yml's image", () => {
    const compose = parse(read('docker-compose.yml')) as { services: Record<string, { image?: string }> };
    const images = Object.values(compose.services)
      .map((s) => s.image ?? '')
      .filter((i) => i.startsWith('temporalio/'));
    expect(images).toEqual([`temporalio/temporal:${TEMPORAL_CLI.version}`]);
  });

  it('is the only one the current documentation names', () => {
    const named: string[] = [];
    for (const file of CURRENT) {
      const text = read(file);
      const releases = [
        ...text.matchAll(/Temporal (?:server |CLI |dev server )?v?(\d+\.\d+\.\d+)/gi),
        ...text.matchAll(/(?:server|CLI) v?(\d+\.\d+\.\d+)/g),
        ...text.matchAll(/temporalio\/(?:temporal|server|auto-setup|admin-tools):v?(\d+\.\d+\.\d+)/g),
        ...text.matchAll(/(?:UI server|Web UI) v?(\d+\.\d+\.\d+)/gi),
      ].map((m) => m[1]!);
      for (const r of releases)
        if (![TEMPORAL_CLI.server, TEMPORAL_CLI.version, TEMPORAL_CLI.ui].includes(r as never))
          named.push(`${file}: ${r}`);
    }
    expect(named, `releases other than CLI ${TEMPORAL_CLI.version} / server ${TEMPORAL_CLI.server}`).toEqual([]);
    // The deployment notes say which release the project is tested on.
    expect(read('docs/deploying.md')).toContain(`Temporal server ${TEMPORAL_CLI.server}`);
  });
});
