/**
 * What the workflow code costs the worker per order, apart from the stack: one recorded history (by default an order
 * that ships in one task) replayed `--runs` times through the workflow code with the worker's own options
 * (workflowCodeOptions, the replay gate's), after a warm-up of 50. Prints the process's CPU (every thread: the SDK's
 * workflow thread, its core, V8's helpers) and wall time per replayed run. A replay activates the workflow as the
 * worker does — start, the local activity's answer, completion, eviction — without any server, Kafka or PostgreSQL,
 * so two builds of the workflow code compare on a busy machine when run alternately: `--workflows` points at another
 * checkout's workflows/index.ts.
 *
 *   npx tsx bench/workflow-replay-cost.ts [--history test/histories/shipped-in-one-task.json] [--runs 600] [--workflows PATH]
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { workflowCodeOptions } from '../src/domain/temporal.js';

const { values: args } = parseArgs({
  options: {
    history: { type: 'string', default: 'test/histories/shipped-in-one-task.json' },
    runs: { type: 'string', default: '600' },
    workflows: { type: 'string', default: 'workflows/index.ts' },
  },
});
const runs = Number(args.runs);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs takes a whole number from 1, got ${args.runs}`);
const WARM_UP = 50;

Runtime.install({ logger: new DefaultLogger('ERROR') });
const history = historyFromJSON(JSON.parse(readFileSync(args.history, 'utf8')) as unknown);
const code = await workflowCodeOptions({ workflowsPath: resolve(args.workflows) });

/** Replays the history `count` times on one replay worker; throws if any replay failed (a nondeterministic build). */
async function replay(count: number): Promise<void> {
  async function* histories() {
    for (let i = 0; i < count; i += 1) yield { workflowId: `replay-cost-${i}`, history };
  }
  for await (const r of Worker.runReplayHistories({ ...code, replayName: 'replay-cost' }, histories()))
    if (r.error) throw new Error(`${args.history} does not replay on ${args.workflows}`, { cause: r.error });
}

await replay(WARM_UP);
const cpu = process.cpuUsage();
const start = performance.now();
await replay(runs);
const used = process.cpuUsage(cpu);
const perRun = (ms: number) => Math.round((ms / runs) * 100) / 100;
console.log(
  JSON.stringify({
    history: args.history,
    workflows: args.workflows,
    runs,
    cpuMsPerRun: perRun((used.user + used.system) / 1000),
    wallMsPerRun: perRun(performance.now() - start),
  }),
);
