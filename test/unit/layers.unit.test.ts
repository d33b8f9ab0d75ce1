/**
 * Imports point down the layers (eslint.config.js): the rule `npm run lint` applies, run here on imports that climb —
 * each must be refused with the layer's message — and on ones that descend, which must pass.
 */
import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: fileURLToPath(new URL('../../', import.meta.url)) });

/** The layer-rule messages ESLint gives `code` as if it were the file at `path`. */
async function refusals(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path });
  return result!.messages.filter((m) => /no-restricted-imports$/.test(m.ruleId ?? '')).map((m) => m.message);
}

describe('imports point down the layers', () => {
  it.each([
    [
      'src/kafka/client.ts',
      "import { createBridge } from '../bridge/bridge.js';",
      'the Kafka port imports nothing above it',
    ],
    [
      'src/db.ts',
      "import { createActivities } from '../../activities/index.js';",
      'an adapter serves the layers above it',
    ],
    [
      'src/tracing/spans.ts',
      "import type { RecordInPartition } from '../bridge/record-pipeline.js';",
      'an adapter serves the layers above it',
    ],
    [
      'src/dlq/sink.ts',
      "import { startWorkerRole } from '../worker/role.js';",
      "the order's effects know nothing of the roles",
    ],
    [
      'activities/index.ts',
      "import { startApp } from '../src/app.js';",
      "the order's effects know nothing of the roles",
    ],
    [
      'src/worker/role.ts',
      "import { startBridgeRole } from '../bridge/role.js';",
      'the worker role does not import the bridge',
    ],
    ['src/bridge/role.ts', "import { main } from '../cli/main.js';", 'the bridge role does not import the worker'],
    ['src/config.ts', "import { createKafka } from './kafka/client.js';", 'the base layer imports nothing above it'],
    [
      'src/store/fulfilments.ts',
      "import type { OrderView } from '../../workflows/api.js';",
      'an adapter serves the layers above it',
    ],
    ['src/order.ts', "import type { Metrics } from './metrics.js';", "The order's vocabulary imports nothing"],
    [
      'src/order-rules.ts',
      "import type { Metrics } from './metrics.js';",
      "The order's rules import only the order's words",
    ],
    ['workflows/order-state.ts', "import { sleep } from '../src/sleep.js';", 'workflows/ imports only its own files'],
    ['workflows/store-effects.ts', "import type { Db } from '../src/db.js';", 'workflows/ imports only its own files'],
    [
      'workflows/failures.ts',
      "import { Context } from '@temporalio/activity';",
      'workflows/ imports only its own files',
    ],
    [
      'workflows/order-fulfilment.ts',
      "import { createActivities } from '../activities/index.js';",
      'workflows/ takes only the types of activities',
    ],
    ['src/app.ts', "import { stackUp } from '../tools/stack/index.js';", 'The product never imports the tooling'],
    [
      'activities/index.ts',
      "import { waitFor } from '../test/support/promises.js';",
      'The product never imports the tooling',
    ],
    [
      'test/integration/pipeline.int.test.ts',
      "import { repoRoot } from '../../tools/stack/paths.js';",
      'Reach the local stack through its entry',
    ],
    ['tools/build.ts', "import { repoRoot } from './stack/paths.js';", 'Reach the local stack through its entry'],
    [
      'tools/deploy/validate.ts',
      "import { withLock } from '../stack/proc.js';",
      'Reach the local stack through its entry',
    ],
  ])('%s may not import %s', async (path, code, why) => {
    expect(await refusals(path, `${code}\nexport {};\n`)).toEqual([expect.stringContaining(why)]);
  });

  it.each([
    ['src/bridge/role.ts', "import { createKafka } from '../kafka/client.js';"],
    ['activities/index.ts', "import type { DeadLetterSink } from '../src/dlq/sink.js';"],
    ['src/events/envelope.ts', "import { headerString } from '../kafka/records.js';"],
    ['src/db.ts', "import type { OrderEvent } from '../order.js';"],
    ['workflows/order-fulfilment.ts', "import type { OrderActivities } from '../activities/index.js';"],
    ['workflows/order-state.ts', "import { FailureType } from '../src/order.js';"],
    ['workflows/api.ts', "import { defineSearchAttributeKey } from '@temporalio/common';"],
    ['test/integration/pipeline.int.test.ts', "import { repoRoot } from '../../tools/stack/index.js';"],
    ['test/stack/addresses.unit.test.ts', "import { parseHostPort } from '../../tools/stack/addresses.js';"],
    ['tools/deploy/validate.ts', "import { withLock } from '../stack/index.js';"],
    ['src/config.ts', "import { PayloadKeys } from './codec/keys.js';"],
  ])('%s may import %s', async (path, code) => {
    expect(await refusals(path, `${code}\nexport {};\n`)).toEqual([]);
  });
});

describe('promises in product code are awaited or marked void', () => {
  /** The type-aware promise rules' messages ESLint gives `code` as if it were the file at `path`. */
  async function promiseFindings(path: string, code: string): Promise<string[]> {
    const [result] = await eslint.lintText(code, { filePath: path });
    return result!.messages.filter((m) => /no-(floating|misused)-promises/.test(m.ruleId ?? '')).map((m) => m.ruleId!);
  }
  const floating = 'async function work(): Promise<void> {}\nexport function run(): void {\n  work();\n}\n';
  const marked = 'async function work(): Promise<void> {}\nexport function run(): void {\n  void work();\n}\n';
  const handedAsCallback =
    "async function work(): Promise<void> {}\nexport function run(t: { on(e: string, f: () => void): void }): void {\n  t.on('x', work);\n}\n";

  it.each(['workflows/order-fulfilment.ts', 'activities/index.ts', 'src/bridge/bridge.ts'])(
    '%s: an unawaited promise is refused, a void one passes',
    async (path) => {
      expect(await promiseFindings(path, floating)).toEqual(['@typescript-eslint/no-floating-promises']);
      expect(await promiseFindings(path, marked)).toEqual([]);
      expect(await promiseFindings(path, handedAsCallback)).toEqual(['@typescript-eslint/no-misused-promises']);
    },
  );
});
