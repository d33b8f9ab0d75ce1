/**
 * The stack's dev server without running it (tools/stack/services/temporal-dev.ts): what `prepare` writes, when `up`
 * restarts a running one, and what happens to a store another Temporal release made. Its state dir is a temporary
 * folder, and nothing is built or started (the integration suites run it).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planFromEnv } from '../../tools/stack/addresses.js';
import type { PidRecord } from '../../tools/stack/proc.js';
import { devDir, devRestartReason, writeDevServer } from '../../tools/stack/services/temporal-dev.js';
import { TEMPORAL_SERVER_TAG } from '../../tools/stack/tools.js';

const dir = mkdtempSync(join(tmpdir(), 'temporal-dev-'));
const saved = {
  STACK_DIR: process.env.STACK_DIR,
  SYNC: process.env.STACK_TEMPORAL_SQLITE_SYNCHRONOUS,
  CODEC: process.env.STACK_UI_CODEC_ENDPOINT,
};
beforeAll(() => {
  process.env.STACK_DIR = dir;
  delete process.env.STACK_TEMPORAL_SQLITE_SYNCHRONOUS;
  delete process.env.STACK_UI_CODEC_ENDPOINT;
});
afterAll(() => {
  if (saved.STACK_DIR === undefined) delete process.env.STACK_DIR;
  else process.env.STACK_DIR = saved.STACK_DIR;
  if (saved.SYNC !== undefined) process.env.STACK_TEMPORAL_SQLITE_SYNCHRONOUS = saved.SYNC;
  if (saved.CODEC !== undefined) process.env.STACK_UI_CODEC_ENDPOINT = saved.CODEC;
  rmSync(dir, { recursive: true, force: true });
});

const record = (command: string): PidRecord => ({
  pid: 1,
  pgid: 1,
  startTime: '0',
  startedAt: new Date().toISOString(),
  command,
  log: '',
});

describe("the stack's dev server", () => {
  it('sets aside a store an earlier release made, keeps its own, and writes a one-process SQLite configuration', () => {
    const plan = planFromEnv({});
    mkdirSync(devDir(), { recursive: true });
    // A store of the temporal CLI's dev server (no release file): Temporal 1.29.1.
    writeFileSync(join(devDir(), 'temporal.db'), 'earlier');
    writeFileSync(join(devDir(), 'temporal.db-wal'), 'earlier wal');
    const spec = writeDevServer(plan);
    expect(readFileSync(join(devDir(), 'temporal-v1.29.1.db'), 'utf8')).toBe('earlier');
    expect(readFileSync(join(devDir(), 'temporal-v1.29.1.db-wal'), 'utf8')).toBe('earlier wal');
    expect(existsSync(join(devDir(), 'temporal.db'))).toBe(false);
    expect(readFileSync(join(devDir(), 'store-release'), 'utf8').trim()).toBe(TEMPORAL_SERVER_TAG);

    // This release's store stays where it is.
    writeFileSync(join(devDir(), 'temporal.db'), 'ours');
    writeDevServer(plan);
    expect(readFileSync(join(devDir(), 'temporal.db'), 'utf8')).toBe('ours');

    const config = JSON.parse(readFileSync(join(devDir(), 'config', 'development.yaml'), 'utf8')) as {
      persistence: {
        defaultStore: string;
        visibilityStore: string;
        numHistoryShards: number;
        datastores: Record<string, { sql: { pluginName: string; databaseName: string; connectAttributes: object } }>;
      };
      services: Record<string, { rpc: { grpcPort: number; httpPort?: number } }>;
    };
    expect(config.persistence).toMatchObject({ numHistoryShards: 1, visibilityStore: config.persistence.defaultStore });
    expect(config.persistence.datastores[config.persistence.defaultStore]!.sql).toMatchObject({
      pluginName: 'sqlite',
      databaseName: join(devDir(), 'temporal.db'),
      connectAttributes: { setup: 'true', journal_mode: 'wal', synchronous: 'NORMAL' },
    });
    expect(Object.keys(config.services).sort()).toEqual(['frontend', 'history', 'matching', 'worker']);
    expect(config.services.frontend!.rpc).toMatchObject({ grpcPort: 7233, httpPort: 7243 });
    const dynamic = readFileSync(join(devDir(), 'config', 'dynamicconfig.yaml'), 'utf8');
    for (const key of [
      'system.forceSearchAttributesCacheRefreshOnRead',
      'system.enableActivityEagerExecution',
      'matching.maxDeployments',
    ])
      expect(dynamic).toContain(key);
    // The launcher starts the Web UI server and the Temporal server in one process group.
    const launcher = readFileSync(spec.args[0]!, 'utf8');
    expect(launcher).toMatch(/temporal-ui-server' .* start &\nexec '.*temporal-server' .* --allow-no-auth start\n$/);
  });

  it("restarts the temporal CLI's dev server, and one whose configuration would be written otherwise now", () => {
    const plan = planFromEnv({});
    writeDevServer(plan);
    const ours = record(`/bin/sh ${join(devDir(), 'run.sh')}`);
    expect(devRestartReason(plan, ours)).toBeUndefined();
    expect(
      devRestartReason(plan, record('/root/.cache/fulfilment/bin/temporal server start-dev --ip 127.0.0.1')),
    ).toMatch(/the temporal CLI's dev server runs/);
    process.env.STACK_TEMPORAL_SQLITE_SYNCHRONOUS = 'FULL';
    try {
      expect(devRestartReason(plan, ours)).toMatch(/its configuration changed .*development\.yaml/);
    } finally {
      delete process.env.STACK_TEMPORAL_SQLITE_SYNCHRONOUS;
    }
    process.env.STACK_UI_CODEC_ENDPOINT = 'http://127.0.0.1:8888';
    try {
      expect(devRestartReason(planFromEnv({}), ours)).toMatch(/its configuration changed .*ui/);
    } finally {
      delete process.env.STACK_UI_CODEC_ENDPOINT;
    }
  });
});
