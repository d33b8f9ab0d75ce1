/**
 * The stack is brought up by `npm test` (stack up --for-tests) before vitest; these tests only read it.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../tools/stack/paths.js';
import { stackStatus } from '../../tools/stack/index.js';

const run = promisify(execFile);

describe('stack status', () => {
  it('prints exactly one JSON object with every address on stdout', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'tools/stack/cli.ts', 'status', '--json'], { cwd: repoRoot });
    const info = JSON.parse(stdout) as Record<string, unknown>;
    expect(Object.keys(info)).toEqual(
      expect.arrayContaining(['kafkaBrokers', 'temporalAddress', 'temporalUiUrl', 'databaseUrl', 'warehouseUrl', 'services']),
    );
    expect(Array.isArray(info.kafkaBrokers)).toBe(true);
    const services = info.services as Record<string, { state: string; address: string }>;
    expect(Object.keys(services).sort()).toEqual(['kafka', 'postgres', 'temporal', 'warehouse']);
    for (const s of Object.values(services)) {
      expect(['running', 'external', 'stopped']).toContain(s.state);
      expect(typeof s.address).toBe('string');
    }
  });

  it('reports the services tests depend on as up', async () => {
    const info = await stackStatus();
    for (const name of ['kafka', 'temporal', 'postgres'] as const) {
      const s = info.services[name];
      expect(s.state, `${name}: ${JSON.stringify(s)}`).not.toBe('stopped');
      expect(s.answering, `${name} answers at ${s.address}`).toBe(true);
    }
  });
});
