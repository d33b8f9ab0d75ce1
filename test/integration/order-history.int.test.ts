/**
 * What one order costs in Temporal, and what its history says: a real order on the real stack (Kafka → bridge →
 * workflow → PostgreSQL and the warehouse) is driven to `shipped`, and its history is read back from the server.
 * The number of events is deterministic (the commands the workflow issues), so it is asserted exactly as a bound,
 * never as a time; the user metadata (summaries of the run, its timers and activities) is what the Web UI's Event
 * History shows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import type { App } from '../../src/app.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';

/**
 * History events of a shipped order while it lingers (up to the linger timer): 27 before the cheaper shape. 14 are
 * the order's own — started, signalled, two workflow tasks, the recording marker, the shipping activity, the
 * `shipped` status and the linger timer — and 2 are the `cheaper-orders` patch's marker and its
 * TemporalChangeVersion upsert, which go once the patch is removed (README "Changing the workflow").
 */
export const SHIPPED_ORDER_EVENTS = 16;
/** The same order once its run closed: the timer fired, one more workflow task, completion (32 before). */
export const CLOSED_ORDER_EVENTS = SHIPPED_ORDER_EVENTS + 5;

const { EventType } = temporal.api.enums.v1;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

describe('an order history on the real stack', () => {
  let s: Scenario;
  let app: App;
  beforeAll(async () => {
    s = await scenario('order-history', { ORDER_LINGER_SECONDS: '3' });
    app = await s.startInstance();
  });
  afterAll(async () => s?.close());

  const eventsOf = async (workflowId: string): Promise<HistoryEvent[]> => (await app.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const summaryOf = async (e: HistoryEvent): Promise<string | undefined> =>
    e.userMetadata?.summary ? String(await app.client.options.loadedDataConverter.payloadConverter.fromPayload(e.userMetadata.summary)) : undefined;
  const lingerTimer = (e: HistoryEvent) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED;

  it(`a shipped order costs at most ${SHIPPED_ORDER_EVENTS} history events while it lingers, ${CLOSED_ORDER_EVENTS} once closed, and its history says what each step is`, async () => {
    const tenant = s.tenant();
    const placed = events.placed(tenant, 'o-1');
    await s.produce([{ key: `${tenant}/o-1`, value: placed }]);
    const workflowId = orderWorkflowId(tenant, 'o-1');
    const handle = app.client.workflow.getHandle(workflowId);

    // Shipped and lingering: the workflow task that learnt of the shipment also started the linger timer.
    const lingering = await waitFor('the order to ship and linger', async () => {
      const history = await eventsOf(workflowId);
      return history.some(lingerTimer) ? history : undefined;
    });
    expect((await s.row(tenant, 'o-1'))?.status).toBe('shipped');
    expect((await handle.query(orderStatusQuery)).status).toBe('shipped');
    expect(lingering.length, `events up to the linger timer: ${lingering.map((e) => EventType[e.eventType!]).join(', ')}`).toBeLessThanOrEqual(SHIPPED_ORDER_EVENTS);

    await waitFor('the run to close after its linger', async () => (await handle.describe()).status.name === 'COMPLETED', 60_000, 200);
    const closed = await eventsOf(workflowId);
    expect(closed.length, `events of the closed run: ${closed.map((e) => EventType[e.eventType!]).join(', ')}`).toBeLessThanOrEqual(CLOSED_ORDER_EVENTS);
    // One activity (the shipment and its record) and one local-activity marker (the event's record), no more.
    expect(closed.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)).toHaveLength(1);
    const markers = closed.filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED).map((e) => e.markerRecordedEventAttributes?.markerName);
    expect(markers.sort()).toEqual(['core_local_activity', 'core_patch']);

    // The readable history: the run's summary and details, and one summary per timer and activity.
    const description = await handle.describe();
    expect(await description.staticSummary()).toBe(`order ${tenant}/o-1`);
    expect(await description.staticDetails()).toContain(`orders.OrderPlaced\` v1 (event \`${placed.eventId}\``);
    const summaries = await Promise.all(closed.map(async (e) => [EventType[e.eventType!], await summaryOf(e)] as const));
    expect(summaries.filter(([, summary]) => summary !== undefined)).toEqual([
      ['EVENT_TYPE_WORKFLOW_EXECUTION_STARTED', `order ${tenant}/o-1`],
      ['EVENT_TYPE_MARKER_RECORDED', 'record event OrderPlaced v1'],
      ['EVENT_TYPE_ACTIVITY_TASK_SCHEDULED', 'ship via warehouse'],
      ['EVENT_TYPE_TIMER_STARTED', 'linger for late events'],
    ]);
  });
});
