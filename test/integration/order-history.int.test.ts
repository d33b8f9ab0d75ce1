/**
 * What one order costs in Temporal, and what its history says: real orders on the real stack (Kafka → bridge →
 * workflow → PostgreSQL and the warehouse) are driven to `shipped` and their runs to closed, and their histories are
 * read back from the server. The number of events is deterministic (the commands the workflow issues), so it is
 * asserted exactly, never as a time; the user metadata (summaries of the run, its markers and timers) is what the
 * Web UI's Event History shows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import type { App } from '../../src/app.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';

/**
 * A shipped order's whole life when a bridge starts it with signal-with-start: started, signalled, one workflow task
 * (scheduled, started, completed) whose completion carries the placement's record and its shipment as one
 * local-activity marker (placeAndShip), the `shipped` status upsert and the run's completion (27 events for a lingering
 * run of the earlier type, 21 for its cheaper shape once closed).
 */
export const ORDER_EVENTS = 8;
/** The same when the bridge shares its process with a worker and starts the run eagerly: no signal event. */
export const EAGER_ORDER_EVENTS = 7;
/** What a linger adds: its timer started and fired, and the workflow task that closes the run. */
export const LINGER_EVENTS = 5;

const { EventType } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

describe('an order history on the real stack', () => {
  let s: Scenario;
  let app: App;
  let worker: App;
  beforeAll(async () => {
    s = await scenario('order-history');
    // Both roles in one process: orders start eagerly on the worker's connection.
    app = await s.startInstance();
  });
  afterAll(async () => {
    await worker?.stop();
    await s?.close();
  });

  const eventsOf = async (workflowId: string): Promise<HistoryEvent[]> =>
    (await app.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const summaryOf = async (e: HistoryEvent): Promise<string | undefined> =>
    e.userMetadata?.summary
      ? String(await app.client.options.loadedDataConverter.payloadConverter.fromPayload(e.userMetadata.summary))
      : undefined;
  const names = (history: HistoryEvent[]) =>
    history.map((e) => EventType[e.eventType!]!.replace('EVENT_TYPE_', '')).join(', ');

  /** Produces one placement and waits for its run to close; its history. */
  async function closedOrder(tenant: string, orderId: string): Promise<{ history: HistoryEvent[]; eventId: string }> {
    const placed = events.placed(tenant, orderId);
    await s.produce([{ key: `${tenant}/${orderId}`, value: placed }]);
    const handle = app.client.workflow.getHandle(orderWorkflowId(tenant, orderId));
    await waitFor(
      'the order to ship and its run to close',
      async () =>
        (await s.row(tenant, orderId))?.status === 'shipped' && (await handle.describe()).status.name === 'COMPLETED',
      120_000,
      200,
    );
    return { history: await eventsOf(orderWorkflowId(tenant, orderId)), eventId: placed.eventId };
  }

  it(`an order started eagerly ships and closes in its first workflow task: ${EAGER_ORDER_EVENTS} events, and its history says what each step is`, async () => {
    const tenant = s.tenant();
    const { history, eventId } = await closedOrder(tenant, 'o-1');
    expect(names(history)).toBe(
      'WORKFLOW_EXECUTION_STARTED, WORKFLOW_TASK_SCHEDULED, WORKFLOW_TASK_STARTED, WORKFLOW_TASK_COMPLETED, MARKER_RECORDED, UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, WORKFLOW_EXECUTION_COMPLETED',
    );
    expect(history).toHaveLength(EAGER_ORDER_EVENTS);

    // The readable history: the run's summary and details, and one summary per local activity.
    const description = await app.client.workflow.getHandle(orderWorkflowId(tenant, 'o-1')).describe();
    expect(await description.staticSummary()).toBe(`order ${tenant}/o-1`);
    expect(await description.staticDetails()).toContain(`orders.OrderPlaced\` v1 (event \`${eventId}\``);
    const summaries = await Promise.all(
      history.map(async (e) => [EventType[e.eventType!], await summaryOf(e)] as const),
    );
    expect(summaries.filter(([, summary]) => summary !== undefined)).toEqual([
      ['EVENT_TYPE_WORKFLOW_EXECUTION_STARTED', `order ${tenant}/o-1`],
      ['EVENT_TYPE_MARKER_RECORDED', 'record event OrderPlaced v1 and ship via warehouse'],
    ]);
  });

  it(`an order a bridge-only process signals-with-start costs ${ORDER_EVENTS} events; a linger adds ${LINGER_EVENTS}`, async () => {
    await app.stop();
    const bridge = await s.startInstance({ roles: { worker: false, bridge: true } });
    worker = await s.startInstance({ roles: { worker: true, bridge: false } });
    app = bridge;
    const tenant = s.tenant();
    const { history } = await closedOrder(tenant, 'o-2');
    expect(names(history)).toBe(
      'WORKFLOW_EXECUTION_STARTED, WORKFLOW_EXECUTION_SIGNALED, WORKFLOW_TASK_SCHEDULED, WORKFLOW_TASK_STARTED, WORKFLOW_TASK_COMPLETED, MARKER_RECORDED, UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, WORKFLOW_EXECUTION_COMPLETED',
    );
    await bridge.stop();

    // The same with a linger: the settling task starts its timer, which fires into one more task that closes the run.
    app = await s.startInstance({ roles: { worker: false, bridge: true } }, { ORDER_LINGER_SECONDS: '1' });
    const lingered = await closedOrder(tenant, 'o-3');
    expect(lingered.history.length, names(lingered.history)).toBe(ORDER_EVENTS + LINGER_EVENTS);
    const timer = lingered.history.find((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED)!;
    expect(await summaryOf(timer)).toBe('linger for late events');
    await app.stop();
  });
});
