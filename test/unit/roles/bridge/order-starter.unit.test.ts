/**
 * The order starter's hand-over with a Temporal client that answers as a real one does at each turn (the run open,
 * closed meanwhile, or closed already), and a late path that records or hands the event back: no event is ever
 * dropped, whatever became of its order's run between two calls. Every start, whichever path makes it, carries the
 * order's priority: its tenant as the fairness key, the tenant's weight.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy, WorkflowNotFoundError, type Priority } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createOrderStarter, type LateEventRecorder } from '../../../../src/roles/bridge/order-starter.js';
import { lateEventNeedsRun, type LateBatch } from '../../../../src/adapters/store/order-events.js';
import { orderEventSignal, type OrderWorkflowInput } from '../../../../workflows/api.js';
import { type OrderEvent } from '../../../../src/vocabulary/order.js';
import { loadConfig } from '../../../../src/base/config.js';
import { tenantWeights } from '../../../../src/base/tenants/weights.js';
import { events } from '../../../support/events.js';

const settings = { cancelGraceSeconds: 3600, lingerSeconds: 0 };
/** acme's weight is the default; globex is given one of its own. */
const weightOf = tenantWeights(loadConfig({ TENANT_WEIGHTS: 'globex=2.5', TENANT_DEFAULT_WEIGHT: '0.5' }));

interface Calls {
  start: { input: OrderWorkflowInput; reuse: unknown; priority?: Priority }[];
  signal: unknown[];
  signalWithStart: { input: OrderWorkflowInput; reuse: unknown; signalArgs: unknown[]; priority?: Priority }[];
  late: OrderEvent[][];
}

/** A client whose start, signal and signal-with-start answer as `answers` says, recording every call. */
function fakeClient(
  answers: { start?: 'ok' | 'exists'; signal?: 'ok' | 'gone'; signalWithStart?: ('ok' | 'closed')[] },
  calls: Calls,
): Client {
  const swsAnswers = [...(answers.signalWithStart ?? ['ok'])];
  const workflow = {
    async start(_type: string, o: { args: [OrderWorkflowInput]; workflowIdReusePolicy: unknown; priority?: Priority }) {
      calls.start.push({ input: o.args[0], reuse: o.workflowIdReusePolicy, priority: o.priority });
      if (answers.start === 'exists')
        throw new WorkflowExecutionAlreadyStartedError('already started', 'wf', 'orderFulfilmentV2');
    },
    getHandle: (workflowId: string) => ({
      async signal(def: unknown, arg: unknown) {
        expect(def).toBe(orderEventSignal);
        calls.signal.push(arg);
        // The run that was open when the start was refused has closed since: Temporal finds no running execution.
        if (answers.signal === 'gone')
          throw new WorkflowNotFoundError('workflow execution already completed', workflowId, undefined);
      },
    }),
    async signalWithStart(
      _type: string,
      o: { args: [OrderWorkflowInput]; workflowIdReusePolicy: unknown; signalArgs: unknown[]; priority?: Priority },
    ) {
      calls.signalWithStart.push({
        input: o.args[0],
        reuse: o.workflowIdReusePolicy,
        signalArgs: o.signalArgs,
        priority: o.priority,
      });
      if (swsAnswers.shift() === 'closed')
        throw new WorkflowExecutionAlreadyStartedError('already started', 'wf', 'orderFulfilmentV2');
    },
  };
  const connection = { withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn() };
  return { workflow, connection } as unknown as Client;
}

/** What the store answers for one event of a late burst: recorded with this outcome, or it needs a run (why). */
type LateAnswer =
  { kind: 'recorded'; stored: LateBatch['recorded'][number]['stored'] } | { kind: 'needs-run'; reason: string };

/** A late path that answers each event of a burst as `lateAnswer` says, stopping at the first that needs a run. */
function lateBatch(events: readonly OrderEvent[], lateAnswer: (e: OrderEvent) => LateAnswer): LateBatch {
  const recorded: LateBatch['recorded'] = [];
  for (const event of events) {
    const answer = lateAnswer(event);
    if (answer.kind === 'needs-run') return { recorded, needsRun: answer.reason };
    recorded.push({ event, stored: answer.stored });
  }
  return { recorded };
}

function setUp(answers: Parameters<typeof fakeClient>[0], lateAnswer: (e: OrderEvent) => LateAnswer, eager: boolean) {
  const calls: Calls = { start: [], signal: [], signalWithStart: [], late: [] };
  const late: LateEventRecorder = async (events) => {
    calls.late.push([...events]);
    return lateBatch(events, lateAnswer);
  };
  const starter = createOrderStarter(fakeClient(answers, calls), 'orders', settings, late, { eager, weightOf });
  return { starter, calls };
}

const recorded = (): LateAnswer => ({
  kind: 'recorded',
  stored: { outcome: 'applied', status: 'shipped', orderVersion: 2, placed: true, cancelRefused: true },
});
const cancellation = () => events.cancelled('acme', 'o1') as OrderEvent;

describe('the eager start → signal race', () => {
  it('a run that closed between the refused start and the signal: the event is recorded through the store, not dropped', async () => {
    const { starter, calls } = setUp({ start: 'exists', signal: 'gone' }, recorded, true);
    const e = cancellation();
    expect(await starter.deliver([e])).toBe('recorded-late');
    expect(calls.start).toHaveLength(1);
    expect(calls.signal).toEqual([e]);
    expect(calls.late).toEqual([[e]]);
    expect(calls.start[0]!.reuse).toBe(WorkflowIdReusePolicy.REJECT_DUPLICATE);
  });

  it('a run that closed failed meanwhile: the cancellation needs a run (its shipment must be recalled), so one is started from the store with it', async () => {
    const { starter, calls } = setUp(
      { start: 'exists', signal: 'gone' },
      () => ({ kind: 'needs-run', reason: 'a cancellation of a failed order' }),
      true,
    );
    const e = cancellation();
    expect(await starter.deliver([e])).toBe('accepted');
    expect(calls.signalWithStart).toHaveLength(1);
    const [sws] = calls.signalWithStart;
    expect(sws!.input).toMatchObject({ tenantId: 'acme', orderId: 'o1', repair: true });
    expect(sws!.reuse).toBe(WorkflowIdReusePolicy.ALLOW_DUPLICATE);
    expect(sws!.signalArgs).toEqual([e]);
  });

  it('the run still open: the signal takes the events and nothing goes to the store', async () => {
    const { starter, calls } = setUp({ start: 'exists', signal: 'ok' }, recorded, true);
    expect(await starter.deliver([cancellation()])).toBe('accepted');
    expect(calls.late).toHaveLength(0);
  });
});

describe('the late path after signal-with-start', () => {
  it('a closed run refuses the start; the burst goes to the store in one call, which records its events, in order, until one needs a run, which takes it and the rest', async () => {
    const placed = events.placed('acme', 'o1', { orderVersion: 3 }) as OrderEvent;
    const dup = cancellation();
    const cancel = events.cancelled('acme', 'o1', { orderVersion: 4 }) as OrderEvent;
    const { starter, calls } = setUp(
      { signalWithStart: ['closed', 'ok'] },
      (e) => (e === cancel ? { kind: 'needs-run', reason: 'a cancellation of a failed order' } : recorded()),
      false,
    );
    expect(await starter.deliver([dup, placed, cancel])).toBe('accepted');
    expect(calls.late).toEqual([[dup, placed, cancel]]);
    expect(calls.signalWithStart.map((c) => c.reuse)).toEqual([
      WorkflowIdReusePolicy.REJECT_DUPLICATE,
      WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    ]);
    expect(calls.signalWithStart[1]!.signalArgs).toEqual([cancel]);
  });

  it('a burst whose event k needs a run: the ones before it recorded, k and every one after it handed to one run, in order', async () => {
    const burst = [1, 2, 3, 4, 5].map((v) => events.cancelled('acme', 'o1', { orderVersion: v }) as OrderEvent);
    const { starter, calls } = setUp(
      { signalWithStart: ['closed', 'ok'] },
      (e) => (e === burst[2] ? { kind: 'needs-run', reason: 'the store holds the order pending' } : recorded()),
      false,
    );
    expect(await starter.deliver(burst)).toBe('accepted');
    expect(calls.late).toEqual([burst]);
    expect(calls.signalWithStart).toHaveLength(2);
    expect(calls.signalWithStart[1]!.signalArgs).toEqual([burst.slice(2)]);
  });

  it('a burst of which nothing needs a run: recorded late in one call, no run started', async () => {
    const burst = [1, 2, 3].map((v) => events.cancelled('acme', 'o1', { orderVersion: v }) as OrderEvent);
    const { starter, calls } = setUp({ signalWithStart: ['closed'] }, recorded, false);
    expect(await starter.deliver(burst)).toBe('recorded-late');
    expect(calls.late).toEqual([burst]);
    expect(calls.signalWithStart).toHaveLength(1);
  });

  it('a failure of the store on the late path is thrown as it came (transient: the partition parks), nothing recorded as done', async () => {
    const calls: Calls = { start: [], signal: [], signalWithStart: [], late: [] };
    const starter = createOrderStarter(
      fakeClient({ signalWithStart: ['closed'] }, calls),
      'orders',
      settings,
      async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:55432');
      },
      { weightOf },
    );
    await expect(starter.deliver([cancellation()])).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe("every start carries the order's priority: its tenant as the fairness key, the tenant's weight", () => {
  const needsRun = (): LateAnswer => ({ kind: 'needs-run', reason: 'a cancellation of a failed order' });
  it.each([
    ['acme', 'the default weight', 0.5],
    ['globex', 'its own weight', 2.5],
  ])('%s (%s)', async (tenant, _what, weight) => {
    const priority = { fairnessKey: tenant, fairnessWeight: weight };
    const e = events.cancelled(tenant, 'o1') as OrderEvent;
    // Signal-with-start, refused by the closed run; then the run started from the store.
    const bySignal = setUp({ signalWithStart: ['closed', 'ok'] }, needsRun, false);
    expect(await bySignal.starter.deliver([e])).toBe('accepted');
    expect(bySignal.calls.signalWithStart.map((c) => c.priority)).toEqual([priority, priority]);
    // The eager start.
    const eager = setUp({ start: 'ok' }, recorded, true);
    expect(await eager.starter.deliver([e])).toBe('accepted');
    expect(eager.calls.start.map((c) => c.priority)).toEqual([priority]);
  });
});

describe('what needs a run when the order has none open (lateEventNeedsRun)', () => {
  const cancel = { type: 'orders.OrderCancelled', orderVersion: 5 } as const;
  const place = { type: 'orders.OrderPlaced', orderVersion: 5 } as const;
  it.each([
    ['a placement the store has no row for', undefined, place, true],
    ['a cancellation the store has no row for (a tombstone is all it leaves)', undefined, cancel, false],
    [
      'any event of an order the store holds pending (a terminated run left it)',
      { status: 'pending', order_version: 9 },
      cancel,
      true,
    ],
    [
      'a newer cancellation of a failed order (its shipment must be recalled)',
      { status: 'failed', order_version: 4 },
      cancel,
      true,
    ],
    ['a stale cancellation of a failed order', { status: 'failed', order_version: 5 }, cancel, false],
    ['a newer placement of a failed order', { status: 'failed', order_version: 4 }, place, false],
    [
      'a cancellation of a shipped order (refused by the store)',
      { status: 'shipped', order_version: 1 },
      cancel,
      false,
    ],
    ['a placement of a cancelled order', { status: 'cancelled', order_version: 1 }, place, false],
    ['a cancellation of a recall-failed order', { status: 'recall-failed', order_version: 1 }, cancel, false],
  ] as const)('%s → %s', (_what, row, event, needsRun) => {
    const placed = row ? { ...row, placed_at: new Date(0) } : undefined;
    expect(lateEventNeedsRun(placed, event) !== undefined).toBe(needsRun);
  });
});
