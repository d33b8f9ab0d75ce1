/**
 * Drives one order's workflow on the time-skipping test server with fake activities (test/support/fake-activities.ts):
 * a worker on a task queue of its own while the test's body starts, signals, queries and updates the order.
 */
import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { workflowBundle } from '../../src/domain/temporal.js';
import {
  ORDER_WORKFLOW_TYPE,
  orderEventSignal,
  orderStatusQuery,
  orderWorkflowId,
  type OrderView,
  type OrderWorkflowInput,
  type OrderWorkflowSettings,
} from '../../workflows/api.js';
import { FailureType, type OrderEvent } from '../../src/vocabulary/order.js';
import type { orderFulfilmentV2 } from '../../workflows/order-fulfilment.js';
import { fakeActivities, type FakeOptions, type FakeRow } from './fake-activities.js';
import { waitFor } from './promises.js';

const DAY = 24 * 3600;
/** The service's defaults but for a grace window a test can skip past (time skipping): runs close as they settle. */
export const defaultSettings: OrderWorkflowSettings = {
  cancelGraceSeconds: 30 * DAY,
  lingerSeconds: 0,
  shipmentDeadlineSeconds: DAY,
};

/** What a test's body does with its order. */
export interface OrderDriver {
  tenantId: string;
  orderId: string;
  /** The task queue of the test's worker. */
  taskQueue: string;
  /** The fake store's rows, keyed `<tenant>/<order>`: a test may seed the order's row before a repair run. */
  rows: Map<string, FakeRow>;
  /** Signal-with-start with one event, or several as one list (as the bridge sends a burst). */
  start: (...e: object[]) => Promise<void>;
  /** Starts a repair run (input.repair), as `fulfilment order retry|resolve` does once the order's run has closed. */
  startRepair: () => Promise<void>;
  signal: (e: object) => Promise<void>;
  result: () => Promise<OrderView>;
  query: () => Promise<OrderView>;
  handle: () => WorkflowHandle;
}

export async function withOrder<T>(
  env: TestWorkflowEnvironment,
  fakes: FakeOptions,
  body: (o: OrderDriver) => Promise<T>,
  s = defaultSettings,
) {
  const taskQueue = `wf-${randomUUID()}`;
  const tenantId = 'acme';
  const orderId = `o-${randomUUID().slice(0, 8)}`;
  const fake = fakeActivities(fakes);
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities: fake.activities,
    maxHeartbeatThrottleInterval: '1 second',
  });
  const workflowId = orderWorkflowId(tenantId, orderId);
  const handle = () => env.client.workflow.getHandle(workflowId);
  const withIds = (e: object) => ({ ...e, tenantId, orderId }) as OrderEvent;
  const input: OrderWorkflowInput = { tenantId, orderId, settings: s };
  const out = await worker.runUntil(
    body({
      tenantId,
      orderId,
      taskQueue,
      rows: fake.rows,
      start: async (...es) => {
        const arg = es.length === 1 ? withIds(es[0]!) : es.map(withIds);
        await env.client.workflow.signalWithStart<typeof orderFulfilmentV2, [OrderEvent | readonly OrderEvent[]]>(
          ORDER_WORKFLOW_TYPE,
          { workflowId, taskQueue, args: [input], signal: orderEventSignal, signalArgs: [arg] },
        );
      },
      startRepair: async () => {
        await env.client.workflow.start<typeof orderFulfilmentV2>(ORDER_WORKFLOW_TYPE, {
          workflowId,
          taskQueue,
          args: [{ ...input, repair: true }],
        });
      },
      signal: (e) => handle().signal(orderEventSignal, withIds(e)),
      // A run that ends with the order needing a person fails (OrderFailed) with the order's view in its details.
      result: () => (handle().result() as Promise<OrderView>).catch(viewOfFailedRun),
      query: () => handle().query(orderStatusQuery),
      handle,
    }),
  );
  return { out, calls: fake.calls, rows: fake.rows };
}

/** The order's view a run that ended with the order held as failed carries (FailureType.orderFailed); else rethrows. */
export function viewOfFailedRun(err: unknown): OrderView {
  const cause = err instanceof WorkflowFailedError ? err.cause : undefined;
  if (cause instanceof ApplicationFailure && cause.type === FailureType.orderFailed)
    return cause.details?.[0] as OrderView;
  throw err;
}

/** Waits until `check` holds (the fake activities' and tests' hand-offs): test/support/promises.ts waitFor, polled every 20 ms. */
export async function waitUntil(check: () => boolean, what = 'a hand-off of the test'): Promise<void> {
  await waitFor(what, check, 600_000, 20);
}
