/** Temporal client connection and the workflow bundle. The workflow bundle is built once per process and reused. */
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime, bundleWorkflowCode, type LogLevel, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Logger } from './log.js';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** The workflow code bundled for the worker sandbox; built on first use (a few seconds), then cached. */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
  return bundle;
}

const quietBundlerLogger = {
  log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined,
  warn: (m: string, a?: unknown) => console.warn(m, a ?? ''),
  error: (m: string, a?: unknown) => console.error(m, a ?? ''),
};

export async function connectClient(address: string, namespace: string): Promise<Client> {
  const connection = await Connection.connect({ address });
  return new Client({ connection, namespace });
}

/** Routes the Temporal SDK's own logs (worker state, activity failures) into our logger, at WARN and above. */
export function installTemporalRuntime(logger: Logger, level: LogLevel = 'WARN'): void {
  const log = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    logger: new DefaultLogger(level, ({ level: l, message, meta }) => {
      const method = l === 'ERROR' ? 'error' : l === 'WARN' ? 'warn' : 'debug';
      log[method](meta ?? {}, message);
    }),
  });
}
