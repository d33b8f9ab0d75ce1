/**
 * The resumer's release → signal → error path, without a stack: the store's release and hand-back and Temporal's
 * signal are stand-ins here (the stack tests run the real ones, test/integration/wake-ups.int.test.ts). What is held:
 * a failed signal does not end the batch, hands its order back naming the release's exact mark, and fails the round
 * (counted); a run that is gone is counted, set aside and not handed back; a hand-back the store refuses is left to the lease.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import type { Db } from '../../../../src/adapters/store/db.js';
import { createLogger } from '../../../../src/base/log.js';
import { createMetrics } from '../../../../src/base/metrics.js';
import { startShipmentResumer } from '../../../../src/roles/worker/shipment-resumer.js';
import { wakeReleased } from '../../../../src/roles/worker/wake-orders.js';
import type { WaitingOrder } from '../../../../src/adapters/store/shipment-waits.js';

const logger = createLogger('silent');
const order = (n: number): WaitingOrder => ({
  tenantId: 'acme',
  orderId: `o-${n}`,
  waitingSince: new Date(n * 1000),
  waitedAt: new Date(n * 1000),
  releaseMark: `2026-12-05 09:00:0${n}.123456+00`,
});

/** A Temporal client whose signal to the listed orders fails as given; the rest succeed. Records every signal. */
function client(fails: Record<string, Error>) {
  const signalled: string[] = [];
  return {
    signalled,
    workflow: {
      getHandle: (id: string) => ({
        signal: async (def: { name: string }) => {
          signalled.push(`${id}:${def.name}`);
          const err = Object.entries(fails).find(([o]) => id.endsWith(`/${o}`) || id.endsWith(o))?.[1];
          if (err) throw err;
        },
      }),
    },
  };
}

/** A store whose queries are recorded; unrelease answers `handBack` (true, false, or an error). */
function store(handBack: boolean | Error = true, released: WaitingOrder[] = []) {
  const queries: { sql: string; values: unknown[] }[] = [];
  const db = {
    query: async (sql: string, values: unknown[] = []) => {
      queries.push({ sql, values });
      if (sql.includes('unrelease_waiting_order') || sql.includes('mark_waiting_order_run_gone')) {
        if (handBack instanceof Error) throw handBack;
        return { rows: [{ ok: handBack }] };
      }
      if (sql.includes('orders_waiting_summary'))
        return { rows: [{ orders: String(released.length), oldest: new Date(0), paused: '0', run_gone: '0' }] };
      if (sql.includes('release_waiting_orders')) {
        const rows = released.splice(0).map((o) => ({
          tenant_id: o.tenantId,
          order_id: o.orderId,
          waiting_since: o.waitingSince,
          waited_at: o.waitedAt,
          release_mark: o.releaseMark,
        }));
        return { rows };
      }
      throw new Error(`unexpected query ${sql}`);
    },
  };
  return { db: db as unknown as Db, queries };
}

describe('waking released orders', () => {
  it('goes on past a failed signal, hands that order back by its exact release mark, and reports the first error', async () => {
    const temporal = client({ 'o-2': new Error('14 UNAVAILABLE: connection refused') });
    const { db, queries } = store();
    const tally = await wakeReleased({ client: temporal as never, db, logger }, [order(1), order(2), order(3)]);
    expect(tally.woken.map((o) => o.orderId)).toEqual(['o-1', 'o-3']);
    expect(tally.failed.map((o) => o.orderId)).toEqual(['o-2']);
    expect(tally.error).toContain('UNAVAILABLE');
    expect(temporal.signalled).toHaveLength(3);
    const handBacks = queries.filter((q) => q.sql.includes('unrelease_waiting_order'));
    expect(handBacks.map((q) => q.values)).toEqual([['acme', 'o-2', order(2).releaseMark]]);
  });

  it('does not hand back an order whose run is gone: it is counted apart and set aside under its release mark', async () => {
    const gone = new WorkflowNotFoundError('not found', 'order/acme/o-1', undefined);
    const { db, queries } = store();
    const tally = await wakeReleased({ client: client({ 'o-1': gone }) as never, db, logger }, [order(1)]);
    expect(tally.gone.map((o) => o.orderId)).toEqual(['o-1']);
    expect(tally.failed).toEqual([]);
    expect(queries.filter((q) => q.sql.includes('unrelease_waiting_order'))).toEqual([]);
    expect(queries.filter((q) => q.sql.includes('mark_waiting_order_run_gone')).map((q) => q.values)).toEqual([
      ['acme', 'o-1', order(1).releaseMark],
    ]);
  });

  it('survives a hand-back the store refuses: the order is left to its lease, the rest still woken', async () => {
    const { db } = store(new Error('Connection terminated unexpectedly'));
    const tally = await wakeReleased(
      { client: client({ 'o-1': new Error('deadline exceeded') }) as never, db, logger },
      [order(1), order(2)],
    );
    expect(tally.failed.map((o) => o.orderId)).toEqual(['o-1']);
    expect(tally.woken.map((o) => o.orderId)).toEqual(['o-2']);
  });
});

describe("the resumer's round", () => {
  it('counts the wake-ups it could not send, hands them back, and wakes the others in the same round', async () => {
    const metrics = createMetrics();
    const temporal = client({ 'o-1': new Error('14 UNAVAILABLE') });
    const { db, queries } = store(true, [order(1), order(2)]);
    const resumer = startShipmentResumer({
      db,
      client: temporal as never,
      warehouse: {
        health: () => ({
          circuit: 'closed',
          lastAnswerAt: 2,
          lastFailureAt: 1,
          recent: { calls: 0, failures: 0, failingKeys: 0, windowMs: 30_000, judged: false, unhealthy: false },
        }),
      },
      probeSeconds: 15,
      perSecond: 20,
      taskQueue: 'orders',
      metrics,
      logger,
      tickMs: 20,
    });
    try {
      await expect.poll(() => temporal.signalled.length, { timeout: 10_000 }).toBe(2);
      await expect
        .poll(
          async () =>
            (await metrics.wakeUpsFailed.get()).values.find((v) => v.labels.reason === 'signal-failed')?.value,
        )
        .toBe(1);
      expect((await metrics.shipmentsResumed.get()).values[0]?.value).toBe(1);
      expect(queries.filter((q) => q.sql.includes('unrelease_waiting_order')).map((q) => q.values[1])).toEqual(['o-1']);
      // The lease the worker was given reaches the store.
      const release = queries.find((q) => q.sql.includes('release_waiting_orders'))!;
      expect(release.values[4]).toBe(60);
    } finally {
      await resumer.stop();
    }
  });
});
