import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSchema, loadConfig } from '../../src/base/config.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const configurationDoc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
const ciRun = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8');

describe('docs/configuration.md', () => {
  it('documents every configuration variable with its real default', () => {
    const defaults = loadConfig({});
    for (const name of Object.keys(configSchema)) {
      const row = configurationDoc.split('\n').find((l) => l.startsWith(`| \`${name}\` |`));
      expect(row, name).toBeDefined();
      const value = defaults[name as keyof typeof defaults];
      // A variable without a default is documented as `unset`.
      if (value === undefined) expect(row, name).toContain('| unset |');
      else expect(row, name).toContain(`\`${Array.isArray(value) ? value.join(',') : String(value)}\``);
    }
  });

  it('lists no variable the configuration does not read', () => {
    const documented = [...configurationDoc.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]!);
    expect(documented.filter((name) => !(name in configSchema))).toEqual([]);
  });
});

describe('README', () => {
  it('has a two-line quick start whose test line is what CI runs', () => {
    const quick = /## Quick start\n\n```sh\n([^`]*)```/.exec(readme)?.[1] ?? '';
    const lines = quick
      .trim()
      .split('\n')
      .map((l) => l.replace(/#.*$/, '').trim());
    expect(lines).toEqual(['npm ci && npm start', 'npm ci && npm test']);
    expect(ciRun.trim().split('\n').at(-1)).toBe(lines[1]);
  });
});
