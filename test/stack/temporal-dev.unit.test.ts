/**
 * The stack's dev server without running it (tools/stack/services/temporal-dev.ts): the launcher `prepare` writes,
 * when `up` restarts a running one, and what happens to a store another Temporal release made. Its state dir is a temporary
 * folder, and nothing is built or started (the integration suites run it).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planFromEnv } from '../../tools/stack/addresses.js';
import type { PidRecord } from '../../tools/stack/proc.js';
import {
  DEV_SERVER_RELEASE,
  devDir,
  devRestartReason,
  writeDevServer,
} from '../../tools/stack/services/temporal-dev.js';
import { TEMPORAL_CLI } from '../../tools/stack/temporal-cli.js';

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
  it("sets aside a store an earlier release made, keeps its own, and runs the CLI's start-dev on a SQLite file", () => {
    const plan = planFromEnv({});
    mkdirSync(devDir(), { recursive: true });
    // A store of the stack's earlier dev server (the Temporal server 1.32.1 built from source).
    writeFileSync(join(devDir(), 'store-release'), 'v1.32.1\n');
    writeFileSync(join(devDir(), 'temporal.db'), 'earlier');
    writeFileSync(join(devDir(), 'temporal.db-wal'), 'earlier wal');
    const spec = writeDevServer(plan);
    expect(readFileSync(join(devDir(), 'temporal-v1.32.1.db'), 'utf8')).toBe('earlier');
    expect(readFileSync(join(devDir(), 'temporal-v1.32.1.db-wal'), 'utf8')).toBe('earlier wal');
    expect(existsSync(join(devDir(), 'temporal.db'))).toBe(false);
    expect(readFileSync(join(devDir(), 'store-release'), 'utf8').trim()).toBe(DEV_SERVER_RELEASE);
    expect(DEV_SERVER_RELEASE).toBe(`v${TEMPORAL_CLI.server}`);

    // This release's store stays where it is.
    writeFileSync(join(devDir(), 'temporal.db'), 'ours');
    writeDevServer(plan);
    expect(readFileSync(join(devDir(), 'temporal.db'), 'utf8')).toBe('ours');

    // The launcher execs the CLI (one process: nothing of it outlives a kill), with the stack's settings.
    const launcher = readFileSync(spec.args[0]!, 'utf8');
    const line = launcher.split('\n').find((l) => l.startsWith('exec '))!;
    expect(line).toContain(`/temporal-cli-${TEMPORAL_CLI.version}/temporal' server start-dev `);
    for (const arg of [
      '--ip 127.0.0.1 --port 7233 --http-port 7243',
      `--db-filename ${join(devDir(), 'temporal.db')}`,
      '--sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=NORMAL',
      '--dynamic-config-value system.enableActivityEagerExecution=true',
      '--dynamic-config-value matching.enableFairness=true',
      '--dynamic-config-value matching.maxDeployments=100000',
      `--dynamic-config-value 'matching.PollerHistoryTTL="30s"'`,
      `--dynamic-config-value 'matching.longPollExpirationInterval="20s"'`,
      '--ui-ip 127.0.0.1 --ui-port 8233 --ui-disable-news-fetch',
      '--log-level warn',
    ])
      expect(line).toContain(arg);
    expect(line).not.toContain('--ui-codec-endpoint');
  });

  it("restarts an earlier stack's Temporal, and one whose launcher would be written otherwise now", () => {
    const plan = planFromEnv({});
    writeDevServer(plan);
    const ours = record(`/bin/sh ${join(devDir(), 'run.sh')}`);
    expect(devRestartReason(plan, ours)).toBeUndefined();
    expect(
      devRestartReason(plan, record('/root/.cache/fulfilment/bin/temporal server start-dev --ip 127.0.0.1')),
    ).toMatch(/an earlier stack's Temporal runs/);
    process.env.STACK_TEMPORAL_SQLITE_SYNCHRONOUS = 'FULL';
    try {
      expect(devRestartReason(plan, ours)).toMatch(/its configuration changed .*run\.sh/);
    } finally {
      delete process.env.STACK_TEMPORAL_SQLITE_SYNCHRONOUS;
    }
    process.env.STACK_UI_CODEC_ENDPOINT = 'http://127.0.0.1:8888';
    try {
      expect(devRestartReason(planFromEnv({}), ours)).toMatch(/its configuration changed/);
      writeDevServer(planFromEnv({}));
      expect(readFileSync(join(devDir(), 'run.sh'), 'utf8')).toContain('--ui-codec-endpoint http://127.0.0.1:8888');
    } finally {
      delete process.env.STACK_UI_CODEC_ENDPOINT;
    }
  });
});
