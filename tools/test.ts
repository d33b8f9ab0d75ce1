/**
 * `npm test`: builds the JavaScript (`npm run build`), brings up the local stack, provisions it (`fulfilment provision`), then runs every suite. Unit and integration tests share the local
 * stack. Outage tests stop and restart services, so they must have a stack to themselves: where a network
 * namespace can be made (root and `ip`, as on CI), they run at the same time as the others, in a namespace of
 * their own with a second stack on the same ports (state in `.stack-outage/`); elsewhere, or with
 * FULFILMENT_TEST_NETNS=0, after the others, one file at a time. The failover tests, which kill nodes of the
 * three-node Kafka (STACK_KAFKA=cluster), follow the outage tests in that namespace on a stack of their own
 * (`.stack-failover/`); without a namespace they are not run, and the closing count says so: their tests are counted
 * as skipped and the lane is named on that line. Extra arguments go to one plain `vitest run`.
 *
 * What only some tests need and must be compiled (tools/test-builds.ts: the TLS Temporal's server, the manifest
 * checks' tools) is made beside everything else from the start, niced, its lines prefixed `[builds]`; those tests
 * (the vitest project `needs-builds`) run once it is done and the unit and integration tests have finished.
 *
 * The last line is the closing count of everything that ran (tools/closing-count.ts): `tests: N passed, N failed[, N
 * skipped]`, followed by ` (failover: N not run, no network namespace)` when that lane could not run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { closingCount, notRunProject, type Run } from './closing-count.js';
import { repoRoot, stackKafkaEnv } from './stack/index.js';
import { OWN_GROUP, stopProcessGroup } from './process-group.js';
import { announceRuntime } from './runtime.js';

const node = process.execPath;
const vitest = join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
const stackCli = join(repoRoot, 'tools', 'stack', 'cli.ts');
const fulfilmentCli = join(repoRoot, 'bin', 'fulfilment.mjs');
const SUMMARY = /^tests: (\d+) passed, (\d+) failed(?:, (\d+) skipped)?$/;

/** Runs a command, echoing its output (each line prefixed when `prefix` is set), and reads its closing count. */
function run(
  command: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; prefix?: string; started?: (child: ChildProcess) => void; ownGroup?: boolean } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: repoRoot,
      env: opts.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(opts.ownGroup ? OWN_GROUP : {}),
    });
    opts.started?.(child);
    let counts: Run['counts'];
    const failures: string[] = [];
    const echo = (stream: NodeJS.WriteStream) => {
      let pending = '';
      return (chunk: Buffer) => {
        pending += chunk.toString();
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, nl);
          pending = pending.slice(nl + 1);
          const m = SUMMARY.exec(line.trim());
          if (m) counts = { passed: Number(m[1]), failed: Number(m[2]), skipped: Number(m[3] ?? 0) };
          if (line.startsWith('failed: ')) failures.push(`${opts.prefix ?? ''}${line}`);
          stream.write(`${opts.prefix ?? ''}${line}\n`);
        }
      };
    };
    child.stdout.on('data', echo(process.stdout));
    child.stderr.on('data', echo(process.stderr));
    child.on('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), counts, failures }));
  });
}

/** The namespace for the outage tests of this checkout, made and brought up if needed; undefined when not possible. */
function outageNamespace(): string | undefined {
  if (process.env.FULFILMENT_TEST_NETNS === '0' || process.getuid?.() !== 0) return undefined;
  const name = `fulfilment-outage-${createHash('sha256').update(repoRoot).digest('hex').slice(0, 8)}`;
  const exists = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  if (exists.status !== 0) return undefined;
  if (
    !exists.stdout.split('\n').some((l) => l.split(' ')[0] === name) &&
    spawnSync('ip', ['netns', 'add', name]).status !== 0
  )
    return undefined;
  return spawnSync('ip', ['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up']).status === 0 ? name : undefined;
}

/**
 * The background builds' process, in a process group of its own: when the run ends before they do (or is
 * interrupted), the group is stopped, the builds' own children (Go's compilers, apt-get, pip) with it.
 */
let buildsChild: ChildProcess | undefined;

const stopBuilds = async (): Promise<void> => {
  if (buildsChild) await stopProcessGroup(buildsChild);
};

/** tools/test-builds.ts in the background at a low priority: the suite's own processes come first. */
function startBuilds(): Promise<Run> {
  const script = ['--import', 'tsx', join(repoRoot, 'tools', 'test-builds.ts')];
  const opts = { prefix: '[builds] ', started: (c: ChildProcess) => void (buildsChild = c), ownGroup: true };
  return spawnSync('nice', ['-n', '15', 'true']).status === 0
    ? run('nice', ['-n', '15', node, ...script], opts)
    : run(node, script, opts);
}

/** The projects that need no stack: the product's unit tests, the repository's own rules, the deployment files' checks. */
const QUICK_PROJECTS = ['--project', 'unit', '--project', 'repository', '--project', 'deploy'];

async function main(): Promise<number> {
  announceRuntime('test');
  const extra = process.argv.slice(2);
  // A run of chosen files makes what they need as they ask for it (the needs-builds project's hooks wait for it).
  const builds = extra.length > 0 ? undefined : startBuilds();
  // The JavaScript production runs (dist/): the tests of the built service and the bench's children run it.
  const built = await run(node, ['--import', 'tsx', join(repoRoot, 'tools', 'build.ts')]);
  if (built.code !== 0) return built.code;
  const up = await run(node, ['--import', 'tsx', stackCli, 'up', '--for-tests']);
  if (up.code !== 0) return up.code;
  // What the service never creates itself (topics, search attributes, schema, the runtime role's grants); the stack
  // has provisioned its own services already, so this changes something only where a service is configured externally.
  const provisioned = await run(node, [fulfilmentCli, 'provision']);
  if (provisioned.code !== 0) return provisioned.code;
  if (!builds) return (await run(node, [vitest, 'run', ...extra])).code;
  // The tests of what was built beside the suite, once it is built and the unit and integration tests are done.
  const afterBuilds = async (rest: Promise<Run>): Promise<Run> => {
    const made = await builds;
    await rest;
    if (made.code !== 0) {
      process.stdout.write('[builds] failed: the needs-builds tests were not run\n');
      return { ...made, failures: ['failed: tools/test-builds.ts (see the [builds] lines)'] };
    }
    return run(node, [vitest, 'run', '--project', 'needs-builds']);
  };

  const ns = outageNamespace();
  if (!ns) {
    process.stdout.write(
      '[test] outage tests run after the others (no network namespace here); the failover tests need one: not run\n',
    );
    const all = run(node, [vitest, 'run', ...QUICK_PROJECTS, '--project', 'int', '--project', 'outage']);
    // Listed once the others are done (collecting the files takes a few seconds): counted as skipped, and named.
    return close([
      await all,
      await afterBuilds(all),
      notRunProject(vitest, repoRoot, 'failover', 'no network namespace'),
    ]);
  }
  process.stdout.write(
    `[test] outage tests, then failover tests, run beside the others, in network namespace ${ns} with stacks of their own\n`,
  );
  const inNs = (args: string[]) => ['netns', 'exec', ns, node, ...args];
  /** Brings up a stack of its own in the namespace, runs one vitest project on it, and stops that stack again. */
  const lane = async (project: string, env: NodeJS.ProcessEnv): Promise<Run> => {
    const prefix = `[${project}] `;
    try {
      const stack = await run('ip', inNs(['--import', 'tsx', stackCli, 'up']), { env, prefix });
      if (stack.code !== 0) return stack;
      const provisioned = await run('ip', inNs([fulfilmentCli, 'provision']), { env, prefix });
      if (provisioned.code !== 0) return provisioned;
      return await run('ip', inNs([vitest, 'run', '--project', project]), { env, prefix });
    } finally {
      // The lane's stack is its own: nothing of it outlives the run (only the shared stack stays up).
      await run('ip', inNs(['--import', 'tsx', stackCli, 'down']), { env, prefix });
      process.stdout.write(`[test] ${project} stack stopped\n`);
    }
  };
  const lanes = (async () => {
    try {
      const outage = await lane('outage', { ...process.env, STACK_DIR: join(repoRoot, '.stack-outage') });
      // The three-node Kafka (STACK_KAFKA=cluster) on the same ports as the outage stack's broker: one after the other.
      const failover = await lane('failover', failoverEnv());
      return [outage, failover];
    } finally {
      spawnSync('ip', ['netns', 'delete', ns]);
      process.stdout.write(`[test] network namespace ${ns} removed\n`);
    }
  })();
  const rest = run(node, [vitest, 'run', ...QUICK_PROJECTS, '--project', 'int']);
  const [restRun, laneRuns, buildRuns] = await Promise.all([rest, lanes, afterBuilds(rest)]);
  return close([restRun, ...laneRuns, buildRuns]);
}

/** Prints the closing count of several runs; their exit code. */
function close(results: Run[]): number {
  const { text, code } = closingCount(results);
  process.stdout.write(text);
  return code;
}

/**
 * The failover lane's environment: the stack's three-node Kafka, each node in a namespace of its own, its own state
 * dir, every node as a bootstrap broker.
 */
function failoverEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    STACK_DIR: join(repoRoot, '.stack-failover'),
    STACK_KAFKA: 'cluster',
    STACK_KAFKA_NETNS: '1',
  };
  delete env.KAFKA_BROKERS;
  return { ...env, ...stackKafkaEnv(env) };
}

// Out of the terminal's process group, the builds no longer get its Ctrl-C: an interrupted run stops them itself.
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
] as const)
  process.once(signal, () => void stopBuilds().finally(() => process.exit(code)));

main().then(
  async (code) => {
    await stopBuilds();
    process.exit(code);
  },
  async (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    await stopBuilds();
    process.exit(1);
  },
);
