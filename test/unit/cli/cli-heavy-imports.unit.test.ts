import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Bad input must exit 2 before the CLI loads kafkajs, Temporal or pg: on a loaded machine those imports alone
// can take longer than a test's patience. Each case runs the real launcher (bin/fulfilment.mjs) in a child
// process with a preload that records every module of those packages the child resolves, through ESM imports
// (a module.register resolve hook) and through CommonJS require (Module._resolveFilename). The controls prove
// the recorder sees the heavy modules when a command module is loaded. No stack, no timing assumptions.

const root = fileURLToPath(new URL('../../../', import.meta.url));
const bin = join(root, 'bin/fulfilment.mjs');
const HEAVY = String.raw`[\\/]node_modules[\\/](@temporalio[\\/][^\\/]+|kafkajs|pg)[\\/]`;
/** A child spawns node and tsx from cold; generous, because a loaded machine is exactly the case in question. */
const CHILD_TIMEOUT_MS = 120_000;

const HOOKS = `
import { appendFileSync } from 'node:fs';
const HEAVY = new RegExp(${JSON.stringify(HEAVY)});
export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  if (HEAVY.test(result.url)) appendFileSync(process.env.HEAVY_IMPORT_LOG, 'import ' + specifier + ' -> ' + result.url + '\\n');
  return result;
}
`;

const PRELOAD = `
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';
const HEAVY = new RegExp(${JSON.stringify(HEAVY)});
register(new URL('./hooks.mjs', import.meta.url));
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  const file = resolveFilename.call(this, request, ...rest);
  if (HEAVY.test(file)) appendFileSync(process.env.HEAVY_IMPORT_LOG, 'require ' + request + ' -> ' + file + '\\n');
  return file;
};
`;

let dir: string;
let preload: string;
let runs = 0;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cli-heavy-imports-'));
  writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
  preload = pathToFileURL(join(dir, 'preload.mjs')).href;
  writeFileSync(join(dir, 'preload.mjs'), PRELOAD);
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Every resolution of a heavy package's module, one line each: "import|require <specifier> -> <file>". */
  heavy: string[];
}

/** The packages the `heavy` lines name, each once: ['@temporalio/client', 'kafkajs', ...]. */
function packages(heavy: string[]): string[] {
  return [...new Set(heavy.map((l) => new RegExp(HEAVY).exec(l)?.[1]?.replace('\\', '/') ?? l))].sort();
}

/** Runs `node --import <preload> ...nodeArgs` in the repository with only the environment given (plus PATH). */
function child(nodeArgs: string[], env: Record<string, string> = {}): Promise<Run> {
  const log = join(dir, `heavy-${++runs}.log`);
  writeFileSync(log, '');
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', preload, ...nodeArgs], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
        ...env,
        HEAVY_IMPORT_LOG: log,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) =>
      resolve({ code, stdout, stderr, heavy: readFileSync(log, 'utf8').split('\n').filter(Boolean) }),
    );
  });
}

const cliEnv = { CONSUMER_GROUP: 'fulfilment-main', KAFKA_BROKERS: '127.0.0.1:1' };

describe('fulfilment: bad input exits 2 without loading kafkajs, Temporal or pg', () => {
  it.each([
    [['dlq', 'list', '--limit', '0'], cliEnv, "option '--limit <n>' argument '0' is invalid"],
    [['dlq', 'list', '--offset', '5', '--page', '2'], cliEnv, '--offset and --page both say where the page starts'],
    [['dlq', 'list'], { KAFKA_BROKERS: 'not a broker' }, 'KAFKA_BROKERS="not a broker" is invalid: expected host:port'],
    [['dlq', 'show', 'abc'], cliEnv, "value 'abc' is invalid for argument 'partition:offset'"],
    [['dlq', 'show', '0:1', '--redact-fields', ','], cliEnv, "option '--redact-fields <list>' argument ',' is invalid"],
    [['dlq', 'redrive'], cliEnv, 'choose what to redrive: --id <partition:offset> (repeatable), filters'],
    [['dlq', 'redrive', '--all', '--tenant', 't1'], cliEnv, '--all cannot be combined with filters'],
    [['dlq', 'redrive', '--id', '0:1', '--rate', '0'], cliEnv, "option '--rate <per-second>' argument '0' is invalid"],
    [['dlq', 'redrive', '--all', '--operator', ' '], cliEnv, "option '--operator <name>' argument ' ' is invalid"],
    [
      ['dlq', 'redrive', '--force', '--again'],
      cliEnv,
      'choose what to redrive: --id <partition:offset> (repeatable), filters',
    ],
    [['dlq', 'purge'], cliEnv, "required option '--before <time>' not specified"],
    [['dlq', 'purge', '--before', 'last week'], cliEnv, "option '--before <time>' argument 'last week' is invalid"],
    [
      ['dlq', 'purge', '--before', '2999-01-01T00:00:00Z', '--yes'],
      cliEnv,
      '--before 2999-01-01T00:00:00.000Z is in the future',
    ],
    [['dlq', 'purge', '--before', '7d', '--yes', '--dry-run'], cliEnv, '--yes and --dry-run contradict each other'],
    [['redeliver', '--from', 'soon', '--rate', '5'], cliEnv, "option '--from <point>' argument 'soon' is invalid"],
    [['redeliver', '--from', 'earliest'], cliEnv, '--rate <events/s> is required'],
    [
      ['redeliver', '--from', 'earliest', '--rate', '5', '--group', 'fulfilment-main'],
      cliEnv,
      "--group fulfilment-main is the service's own consumer group",
    ],
    [
      ['redeliver', '--from', 'earliest', '--dry-run'],
      { KAFKA_BROKERS: 'not a broker' },
      'KAFKA_BROKERS="not a broker" is invalid',
    ],
    [
      ['order', 'retry', 'acme-eu', '--reason', 'fixed'],
      cliEnv,
      "value 'acme-eu' is invalid for argument 'tenant/order'. expected <tenant>/<order>",
    ],
    [['order', 'retry', 'acme-eu/o-1'], cliEnv, "required option '--reason <text>' not specified"],
    [
      ['order', 'show', 'acme-eu'],
      cliEnv,
      "value 'acme-eu' is invalid for argument 'tenant/order'. expected <tenant>/<order>",
    ],
    [['tenant', 'show', 'acme eu'], cliEnv, "value 'acme eu' is invalid for argument 'tenant'"],
    [['workflow', 'replay'], cliEnv, 'workflow replay: give the workflow id'],
    [['workflow', 'replay', 'order/a/b', '--run-id', 'x'], cliEnv, "option '--run-id <id>' argument 'x' is invalid"],
    [['workflow', 'export', 'order/a/b', '--out', ''], cliEnv, "option '--out <path>' argument '' is invalid"],
    [
      ['provision', '--only', 'kafka,mysql'],
      cliEnv,
      "option '--only <steps>' argument 'kafka,mysql' is invalid. expected a comma-separated list of kafka, temporal, postgres.",
    ],
    [
      ['provision'],
      { DATABASE_URL: 'postgres://app:a@db/x', DATABASE_MIGRATION_URL: 'postgres://app:b@db/x' },
      'DATABASE_URL and DATABASE_MIGRATION_URL both connect as "app"',
    ],
  ])(
    '%j with env %j → exit 2: %s',
    async (argv, env, message) => {
      const r = await child([bin, ...argv], env);
      expect(r.stderr).toContain(message);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(packages(r.heavy)).toEqual([]);
    },
    CHILD_TIMEOUT_MS,
  );

  it(
    '--help loads none of them either',
    async () => {
      const r = await child([bin, '--help'], cliEnv);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('Usage: fulfilment');
      expect(packages(r.heavy)).toEqual([]);
    },
    CHILD_TIMEOUT_MS,
  );

  // Controls: the recorder does see them, so an empty record above means they were not loaded.
  it.each([
    ['src/cli/dlq/list.ts', ['kafkajs']],
    ['src/cli/dlq/show.ts', ['kafkajs']],
    ['src/cli/dlq/redrive.ts', ['kafkajs']],
    ['src/cli/dlq/purge.ts', ['kafkajs']],
    ['src/cli/redeliver/redeliver.ts', ['kafkajs', '@temporalio/client', 'pg']],
    ['src/cli/order/retry.ts', ['@temporalio/client']],
    ['src/cli/order/show.ts', ['kafkajs', '@temporalio/client', 'pg']],
    ['src/cli/tenant/show.ts', ['@temporalio/client', 'pg']],
    ['src/cli/workflow/replay.ts', ['@temporalio/client', '@temporalio/worker']],
    ['src/cli/workflow/export.ts', ['@temporalio/client']],
    ['src/cli/provision/provision.ts', ['kafkajs', '@temporalio/client', 'pg']],
  ])(
    'control: importing %s loads %j',
    async (module, expected) => {
      const url = pathToFileURL(join(root, module)).href;
      const r = await child(['--import', 'tsx', '--input-type=module', '-e', `await import(${JSON.stringify(url)});`]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(packages(r.heavy)).toEqual(expect.arrayContaining(expected));
    },
    CHILD_TIMEOUT_MS,
  );
});
