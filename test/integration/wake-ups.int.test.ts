/**
 * No wake-up lost (docs/how-it-works.md, "When the warehouse is down"): orders wait through a warehouse outage, then,
 * in the middle of the recovery that wakes them,
 * - the service is SIGKILLed and started again at once — with, besides, wake-ups already lost between a resumer's
 *   release and its signal (the test releases some waiting orders itself, as release_waiting_orders() hands them to a
 *   resumer, and sends nothing: what a resumer killed in that window leaves);
 * - Temporal is unreachable from the service for a minute (a relay between them cut, Temporal itself untouched).
 * Every waiting order ships by itself, each once, and none fails. The service runs as production runs it (the built
 * service in its own process), at its defaults except, and why:
 * - the breaker half-opens after 2 s and the resumer probes every 3 s (defaults 10 s and 15 s), so that recovery
 *   starts within seconds of the warehouse answering;
 * - the resumer wakes 4 orders a second (default 20), so that the recovery of 80 orders lasts long enough for the
 *   fault to land in the middle of it;
 * - in the kill case, the orders' own checks come after an hour (ORDER_WAIT_RECHECK_SECONDS, default 300): only the
 *   release's lease (WAKE_LEASE_SECONDS, the default 60) can bring the lost wake-ups back, so the case shows the lease.
 * Printed: when the last order shipped after the warehouse answered, against the stated worst case.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, inTenantTransaction, type Db } from '../../src/db.js';
import { runtimeConnection } from '../../src/store/connection.js';
import { releaseWaitingOrders } from '../../src/store/shipment-waits.js';
import { events, scenario, waitFor } from '../support/harness.js';
import { freePort } from '../support/processes.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { tcpCut, type TcpCut } from '../support/tcp-cut.js';

const ORDERS = 80;
const FAST_RECOVERY = {
  WAREHOUSE_BREAKER_HALF_OPEN_MS: '2000',
  WAREHOUSE_PROBE_SECONDS: '3',
  WAREHOUSE_RESUME_PER_SECOND: '4',
};

interface Counts {
  total: number;
  waiting: number;
  shipped: number;
  failed: number;
}

async function counts(db: Db, tenant: string): Promise<Counts> {
  const row = await inTenantTransaction(
    db,
    tenant,
    async (tx) =>
      (
        await tx.query<Record<keyof Counts, string>>(
          `SELECT count(*) AS total,
                  count(*) FILTER (WHERE status = 'pending' AND waiting_since IS NOT NULL) AS waiting,
                  count(*) FILTER (WHERE status = 'shipped') AS shipped,
                  count(*) FILTER (WHERE status = 'failed') AS failed
             FROM fulfilments WHERE tenant_id = $1`,
          [tenant],
        )
      ).rows[0]!,
  );
  return { total: +row.total, waiting: +row.waiting, shipped: +row.shipped, failed: +row.failed };
}

/** One case's stack: a scenario, the service in a process of its own, the runtime role's pool, a tenant. */
async function waitingOrders(name: string, env: Record<string, string>) {
  const s = await scenario(name, { ...FAST_RECOVERY, ...env });
  const db = createDb(runtimeConnection(s.config), 2);
  const tenant = s.tenant();
  const start = async (extra: Record<string, string> = {}): Promise<ServiceProcess> => {
    const proc = startServiceProcess(
      { ...s.env, METRICS_PORT: String(await freePort()), SHUTDOWN_DEADLINE_MS: '180000', ...extra },
      { built: true },
    );
    await proc.said('service ready', 240_000);
    return proc;
  };
  const faults = (body: object) =>
    fetch(`${s.warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) });
  /** The warehouse down; ORDERS placements produced; waits until every one of them waits. */
  const makeThemWait = async () => {
    await faults({ down: true });
    const placements = Array.from({ length: ORDERS }, (_, i) => {
      const orderId = `o-${i}`;
      return { key: `${tenant}/${orderId}`, value: events.placed(tenant, orderId) };
    });
    for (let i = 0; i < placements.length; i += 20) await s.produce(placements.slice(i, i + 20));
    await waitFor(`all ${ORDERS} orders to wait`, async () => (await counts(db, tenant)).waiting === ORDERS, 180_000);
  };
  /** Every order shipped, each once: one dispatched shipment per order, under its key, none recalled. */
  const shippedOnce = async () => {
    const end = await waitFor(
      `all ${ORDERS} orders to ship`,
      async () => {
        const c = await counts(db, tenant);
        return c.shipped + c.failed === ORDERS ? c : undefined;
      },
      360_000,
      500,
    );
    expect(end.failed).toBe(0);
    const shipments = await s.shipments(tenant);
    expect(shipments).toHaveLength(ORDERS);
    expect(new Set(shipments.map((x) => x.orderId)).size).toBe(ORDERS);
    expect(shipments.filter((x) => x.status !== 'dispatched')).toEqual([]);
  };
  const close = async () => {
    await faults({ down: false }).catch(() => undefined);
    await db.end();
    await s.close();
  };
  return { s, db, tenant, start, faults, makeThemWait, shippedOnce, close };
}

describe('a waiting order’s wake-up', () => {
  let procs: ServiceProcess[] = [];
  let cut: TcpCut | undefined;
  let closers: (() => Promise<void>)[] = [];
  beforeAll(() => {
    procs = [];
    closers = [];
  });
  afterAll(async () => {
    for (const p of procs) if (p.alive()) await p.stop();
    await cut?.close();
    for (const close of closers) await close();
  });

  it(
    'survives the service SIGKILLed in the middle of a recovery, and wake-ups lost between release and signal',
    { timeout: 900_000 },
    async () => {
      const c = await waitingOrders('wake-kill', { ORDER_WAIT_RECHECK_SECONDS: '3600' });
      closers.push(c.close);
      const first = await c.start();
      procs.push(first);
      await c.makeThemWait();

      // Wake-ups lost in the window the previous build lost them in: released, never signalled.
      const lost = await releaseWaitingOrders(c.db, 8, {
        tenantId: c.tenant,
        taskQueue: c.s.config.TEMPORAL_TASK_QUEUE,
      });
      expect(lost).toHaveLength(8);
      const lostAt = Date.now();

      await c.faults({ down: false });
      const answered = Date.now();
      await waitFor('the recovery to be under way', async () => (await counts(c.db, c.tenant)).shipped >= 15, 120_000);
      first.child.kill('SIGKILL');
      expect(await first.exited).toBe('SIGKILL');
      const killedAt = Date.now();
      const shippedAtKill = (await counts(c.db, c.tenant)).shipped;
      procs.push(await c.start());

      await c.shippedOnce();
      const allShipped = Date.now();
      for (const o of lost) expect((await c.s.row(c.tenant, o.orderId))?.status).toBe('shipped');
      console.log(
        `[wake-ups] kill: ${ORDERS} orders waited; ${lost.length} wake-ups lost (released, not signalled); the service ` +
          `SIGKILLed ${((killedAt - answered) / 1000).toFixed(1)} s into the recovery with ${shippedAtKill} shipped; ` +
          `all shipped ${((allShipped - answered) / 1000).toFixed(1)} s after the warehouse answered, the lost ones ` +
          `${((allShipped - lostAt) / 1000).toFixed(1)} s after their release (stated worst case: the probe, ` +
          `${ORDERS} / 4 per second, a restart, and one lease of 60 s)`,
      );
    },
  );

  it(
    'survives Temporal unreachable from the service for a minute in the middle of a recovery',
    { timeout: 900_000 },
    async () => {
      const c = await waitingOrders('wake-temporal', {});
      const [host, port] = c.s.config.TEMPORAL_ADDRESS.split(':');
      cut = await tcpCut({ host: host!, port: Number(port) });
      closers.push(c.close);
      const proc = await c.start({ TEMPORAL_ADDRESS: cut.address });
      procs.push(proc);
      await c.makeThemWait();

      await c.faults({ down: false });
      const answered = Date.now();
      await waitFor('the recovery to be under way', async () => (await counts(c.db, c.tenant)).shipped >= 10, 120_000);
      cut.cut();
      const cutAt = Date.now();
      const shippedAtCut = (await counts(c.db, c.tenant)).shipped;
      // A minute without Temporal; the resumer's rounds fail meanwhile (it says so), and nothing else is done by hand.
      await proc.said('shipment resumer round failed', 120_000);
      await waitFor('a minute to pass', () => Date.now() - cutAt >= 60_000, 120_000, 1_000);
      cut.restore();
      const restoredAt = Date.now();

      await c.shippedOnce();
      const allShipped = Date.now();
      expect(proc.alive()).toBe(true);
      console.log(
        `[wake-ups] Temporal cut: ${ORDERS} orders waited; Temporal unreachable for ${((restoredAt - cutAt) / 1000).toFixed(0)} s ` +
          `from ${((cutAt - answered) / 1000).toFixed(1)} s into the recovery (${shippedAtCut} shipped); all shipped ` +
          `${((allShipped - restoredAt) / 1000).toFixed(1)} s after it was reachable again`,
      );
    },
  );
});
