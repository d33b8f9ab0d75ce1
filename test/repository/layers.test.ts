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
      'src/adapters/kafka/client.ts',
      "import { createBridge } from '../../roles/bridge/bridge.js';",
      'the Kafka port imports nothing above it',
    ],
    [
      'src/adapters/store/db.ts',
      "import { createActivities } from '../../../activities/index.js';",
      'an adapter serves the layers above it',
    ],
    [
      'src/adapters/tracing/spans.ts',
      "import type { RecordInPartition } from '../../roles/bridge/record-pipeline.js';",
      'an adapter serves the layers above it',
    ],
    [
      'src/domain/workflow-settings.ts',
      "import { startWorkerRole } from '../roles/worker/role.js';",
      "the order's effects know nothing of the roles",
    ],
    [
      'src/adapters/dlq/sink.ts',
      "import type { OrderView } from '../../../workflows/api.js';",
      'an adapter serves the layers above it',
    ],
    [
      'activities/index.ts',
      "import { startApp } from '../src/app.js';",
      "the order's effects know nothing of the roles",
    ],
    [
      'src/roles/worker/role.ts',
      "import { startBridgeRole } from '../bridge/role.js';",
      'the worker role does not import the bridge',
    ],
    [
      'src/roles/provision/index.ts',
      "import { main } from '../../cli/main.js';",
      'a role is started by the entry points',
    ],
    [
      'src/roles/bridge/lanes.ts',
      "import { startWorkerRole } from '../worker/role.js';",
      'the bridge role imports neither the worker nor the reconciler',
    ],
    [
      'src/domain/temporal.ts',
      "import { runPass } from '../reconcile/pass.js';",
      "the order's effects know nothing of the roles",
    ],
    [
      'src/reconcile/pass.ts',
      "import { startWorkerRole } from '../roles/worker/role.js';",
      'the reconciler is run by the entry points and the roles',
    ],
    [
      'src/base/config.ts',
      "import { createKafka } from '../adapters/kafka/client.js';",
      'the base layer imports nothing above it',
    ],
    [
      'src/base/tenants/fairness.ts',
      "import { connectClient } from '../../domain/temporal.js';",
      'the base layer imports nothing above it',
    ],
    [
      'src/adapters/store/fulfilments.ts',
      "import type { OrderView } from '../../../workflows/api.js';",
      'an adapter serves the layers above it',
    ],
    [
      'src/vocabulary/order.ts',
      "import type { Metrics } from '../base/metrics.js';",
      'The vocabulary imports only its own files',
    ],
    [
      'src/vocabulary/warehouse-retry.ts',
      "import { sleep } from '../base/sleep.js';",
      'The vocabulary imports only its own files',
    ],
    [
      'workflows/order-state.ts',
      "import { sleep } from '../src/base/sleep.js';",
      'workflows/ imports only its own files',
    ],
    [
      'workflows/store-effects.ts',
      "import type { Db } from '../src/adapters/store/db.js';",
      'workflows/ imports only its own files',
    ],
    [
      'workflows/activity-failures.ts',
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
    ['src/roles/bridge/role.ts', "import { createKafka } from '../../adapters/kafka/client.js';"],
    ['src/roles/worker/continuous-reconcile.ts', "import { runPass } from '../../reconcile/pass.js';"],
    ['activities/index.ts', "import type { DeadLetterSink } from '../src/adapters/dlq/sink.js';"],
    ['src/adapters/events/envelope.ts', "import { headerString } from '../kafka/records.js';"],
    ['src/adapters/store/db.ts', "import type { OrderEvent } from '../../vocabulary/order.js';"],
    ['src/vocabulary/order-rules.ts', "import type { OrderEvent } from './order.js';"],
    ['workflows/order-fulfilment.ts', "import type { OrderActivities } from '../activities/index.js';"],
    ['workflows/order-state.ts', "import { FailureType } from '../src/vocabulary/order.js';"],
    ['workflows/api.ts', "import { defineSearchAttributeKey } from '@temporalio/common';"],
    ['test/integration/pipeline.int.test.ts', "import { repoRoot } from '../../tools/stack/index.js';"],
    ['test/stack/addresses.unit.test.ts', "import { parseHostPort } from '../../tools/stack/addresses.js';"],
    ['tools/deploy/validate.ts', "import { withLock } from '../stack/index.js';"],
    ['src/base/config.ts', "import { PayloadKeys } from './config/payload-keys.js';"],
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

  it.each(['workflows/order-fulfilment.ts', 'activities/index.ts', 'src/roles/bridge/bridge.ts'])(
    '%s: an unawaited promise is refused, a void one passes',
    async (path) => {
      expect(await promiseFindings(path, floating)).toEqual(['@typescript-eslint/no-floating-promises']);
      expect(await promiseFindings(path, marked)).toEqual([]);
      expect(await promiseFindings(path, handedAsCallback)).toEqual(['@typescript-eslint/no-misused-promises']);
    },
  );
});
