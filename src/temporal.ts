/** Temporal client connection and the workflow bundle. The workflow bundle is built once per process and reused. */
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

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
