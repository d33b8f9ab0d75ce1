/**
 * No wake-up lost (docs/how-it-works.md, "When the warehouse is down"): orders wait through a warehouse outage, then,
 * in the middle of the recovery that wakes them, one fault at a time; each case leaves only the mechanism it shows
 * within reach and asserts the worst case the docs state for it:
 * - the service is SIGKILLed and started again at once — with, besides, wake-ups already lost between a resumer's
 *   release and its signal (the test releases some waiting orders itself, as release_waiting_orders() hands them to a
 *   resumer, and sends nothing: what a resumer killed in that window leaves). The lost ones come back only by the
 *   release's lease: each ships within one lease of its release, the others within the probe, the paced share and
 *   the restart after the warehouse answered;
 * - Temporal is unreachable from the service for half a minute or more (a relay between them cut, Temporal itself
 *   untouched): the resumer's rounds go on releasing orders whose signals fail. Only the hand-back of each failed
 *   signal leaves them to the next round; without it they would sit out their lease. Every order ships within the
 *   client's reconnection and the paced share of those still waiting after Temporal is reachable again.
 * Every waiting order ships, each once, and none fails. The service runs as production runs it (the built service in
 * its own process), at its defaults except, and why:
 * - the breaker half-opens after 2 s and the resumer probes every 3 s (defaults 10 s and 15 s), so that recovery
 *   starts within seconds of the warehouse answering;
 * - the resumer wakes 2 orders a second (default 20), so that the recovery of 24 orders lasts long enough for the
 *   fault to land in the middle of it;
 * - the orders' own checks come after an hour (ORDER_WAIT_RECHECK_SECONDS, default 300), so that no order comes back
 *   by itself: what ships was brought back by the mechanism the case shows;
 * - in the Temporal case, the release's lease is ten minutes (WAKE_LEASE_SECONDS, default 60 s), longer than the case,
 *   so that the lease cannot stand in for a hand-back that did not happen (a minute's lease would: a round whose
 *   signals fail takes about 30 s, so whether an order released in the cut is released again before it ends, its
 *   lease doubled, or comes back once it ends, depends on where the rounds fall); the kill case keeps the default.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { releaseWaitingOrders } from '../../src/adapters/store/shipment-waits.js';
import { events, scenario, waitFor } from '../support/harness.js';
import { freePort } from '../support/processes.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';
import { tcpCut, type TcpCut } from '../support/tcp-cut.js';
import { leasedBy, secs, shippedLate, wokenBy } from '../support/wake-bounds.js';

const ORDERS = 24;
const PROBE_S = 3;
const PER_SECOND = 2;
const LEASE_S = 60;
/** The lease of the Temporal case: longer than the whole case. */
const LONG_LEASE_S = 600;
/** How long Temporal is unreachable, at least (and until a resumer round failed). */
const CUT_S = 30;
/**
 * What the service's Temporal client takes to try again once Temporal is reachable, as a share of how long it was not:
 * grpc-js backs off 1 s, × 1.6 per failed attempt, ± 20 %, so its next attempt comes within about 0.72 × the cut.
 */
const RECONNECT_SHARE = 0.75;
const FAST_RECOVERY = {
  WAREHOUSE_BREAKER_HALF_OPEN_MS: '2000',
  WAREHOUSE_PROBE_SECONDS: String(PROBE_S),
  WAREHOUSE_RESUME_PER_SECOND: String(PER_SECOND),
  ORDER_WAIT_RECHECK_SECONDS: '3600',
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

/** When each of the tenant's orders shipped, by the store's clock (the same host's as the test's). */
async function shippedAt(db: Db, tenant: string): Promise<Map<string, number>> {
  const rows = await inTenantTransaction(
    db,
    tenant,
    async (tx) =>
      (
        await tx.query<{ order_id: string; shipped_at: Date }>(
          "SELECT order_id, shipped_at FROM fulfilments WHERE tenant_id = $1 AND status = 'shipped'",
          [tenant],
        )
      ).rows,
  );
  return new Map(rows.map((r) => [r.order_id, r.shipped_at.getTime()]));
}

/** One case's stack: a scenario, the service in a process of its own, the runtime role's pool, a tenant. */
async function waitingOrders(name: string, leaseSeconds: number) {
  const s = await scenario(name, { ...FAST_RECOVERY, WAKE_LEASE_SECONDS: String(leaseSeconds) });
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
    await s.produce(placements);
    await waitFor(`all ${ORDERS} orders to wait`, async () => (await counts(db, tenant)).waiting === ORDERS, 180_000);
  };
  /**
   * Every order shipped by `deadline` (the case's stated worst case), each once: one dispatched shipment per order,
   * under its key, none recalled. Returns when each shipped.
   */
  const shippedOnceBy = async (deadline: number, worstCase: string) => {
    const end = await waitFor(
      `all ${ORDERS} orders to ship within ${worstCase}`,
      async () => {
        const c = await counts(db, tenant);
        return c.shipped + c.failed === ORDERS ? c : undefined;
      },
      Math.max(deadline - Date.now(), 1_000),
      500,
    );
    expect(end.failed).toBe(0);
    const shipments = await s.shipments(tenant);
    expect(shipments).toHaveLength(ORDERS);
    expect(new Set(shipments.map((x) => x.orderId)).size).toBe(ORDERS);
    expect(shipments.filter((x) => x.status !== 'dispatched')).toEqual([]);
    return shippedAt(db, tenant);
  };
  const close = async () => {
    await faults({ down: false }).catch(() => undefined);
    // Any order a failed case left waiting stops waiting with it, so no other file's every-tenant count meets it.
    await inTenantTransaction(db, tenant, (tx) =>
      tx.query("UPDATE fulfilments SET status = 'cancelled' WHERE tenant_id = $1 AND status = 'pending'", [tenant]),
    ).catch(() => undefined);
    await db.end();
    await s.close();
  };
  return { s, db, tenant, start, faults, makeThemWait, shippedOnceBy, close };
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
    'survives the service SIGKILLed in the middle of a recovery; wake-ups lost between release and signal come back by their lease',
    { timeout: 600_000 },
    async () => {
      const c = await waitingOrders('wake-kill', LEASE_S);
      closers.push(c.close);
      const first = await c.start();
      procs.push(first);
      await c.makeThemWait();

      // Wake-ups lost in the window the previous build lost them in: released, never signalled.
      const lost = await releaseWaitingOrders(c.db, 4, {
        tenantId: c.tenant,
        taskQueue: c.s.config.TEMPORAL_TASK_QUEUE,
      });
      expect(lost).toHaveLength(4);
      const lostAt = Date.now();

      await c.faults({ down: false });
      const answered = Date.now();
      await waitFor('the recovery to be under way', async () => (await counts(c.db, c.tenant)).shipped >= 6, 120_000);
      first.child.kill('SIGKILL');
      expect(await first.exited).toBe('SIGKILL');
      const killedAt = Date.now();
      const shippedAtKill = (await counts(c.db, c.tenant)).shipped;
      procs.push(await c.start());
      const restart = Date.now() - killedAt;

      // Stated: the probe, the paced share and the restart after the warehouse answered; one lease after its release
      // for an order whose wake-up was lost.
      const woken = wokenBy(answered, {
        probeSeconds: PROBE_S,
        orders: ORDERS,
        perSecond: PER_SECOND,
        extraMs: restart,
      });
      const leased = leasedBy(lostAt, LEASE_S);
      const at = await c.shippedOnceBy(Math.max(woken, leased), 'the stated worst case');
      const lostIds = new Set(lost.map((o) => o.orderId));
      expect(shippedLate(at, lostIds, { woken, leased }), 'orders shipped after the stated worst case').toEqual([]);
      const lastLost = Math.max(...lost.map((o) => at.get(o.orderId)!));
      const lastOther = Math.max(...[...at].filter(([id]) => !lostIds.has(id)).map(([, t]) => t));
      console.log(
        `[wake-ups] kill: ${ORDERS} orders waited; ${lost.length} wake-ups lost (released, not signalled); the service ` +
          `SIGKILLed ${secs(killedAt - answered)} into the recovery with ${shippedAtKill} shipped, ready again in ` +
          `${secs(restart)}; the others all shipped ${secs(lastOther - answered)} after the warehouse answered ` +
          `(bound ${secs(woken - answered)}), the lost ones ${secs(lastLost - lostAt)} after their release (bound: ` +
          `one lease, ${secs(leased - lostAt)} with the margin)`,
      );
    },
  );

  it(
    'survives Temporal unreachable from the service mid-recovery: each failed wake-up is handed back',
    { timeout: 600_000 },
    async () => {
      const c = await waitingOrders('wake-temporal', LONG_LEASE_S);
      const [host, port] = c.s.config.TEMPORAL_ADDRESS.split(':');
      cut = await tcpCut({ host: host!, port: Number(port) });
      closers.push(c.close);
      const proc = await c.start({ TEMPORAL_ADDRESS: cut.address });
      procs.push(proc);
      await c.makeThemWait();

      await c.faults({ down: false });
      const answered = Date.now();
      await waitFor('the recovery to be under way', async () => (await counts(c.db, c.tenant)).shipped >= 4, 120_000);
      cut.cut();
      const cutAt = Date.now();
      const shippedAtCut = (await counts(c.db, c.tenant)).shipped;
      // Half a minute without Temporal, and until a round of the resumer failed (it says so); nothing else is done by
      // hand.
      await proc.said('shipment resumer round failed', 120_000);
      await waitFor('half a minute to pass', () => Date.now() - cutAt >= CUT_S * 1000, 120_000, 1_000);
      const waitingAtRestore = (await counts(c.db, c.tenant)).waiting;
      cut.restore();
      const restoredAt = Date.now();

      // Stated: a failed wake-up is handed back at once, so once the service reaches Temporal again the orders follow
      // at the paced rate; one left to its lease would wait ten minutes. (No probe: the warehouse answered before.)
      const bound = wokenBy(restoredAt, {
        probeSeconds: 0,
        orders: waitingAtRestore,
        perSecond: PER_SECOND,
        extraMs: Math.round(RECONNECT_SHARE * (restoredAt - cutAt)),
      });
      const at = await c.shippedOnceBy(bound, 'the reconnection and the paced share after Temporal is reachable again');
      const late = shippedLate(at, new Set(), { woken: bound, leased: bound });
      expect(late, 'orders shipped after the stated worst case').toEqual([]);
      expect(proc.alive()).toBe(true);
      console.log(
        `[wake-ups] Temporal cut: ${ORDERS} orders waited; Temporal unreachable for ${secs(restoredAt - cutAt)} ` +
          `from ${secs(cutAt - answered)} into the recovery (${shippedAtCut} shipped, ${waitingAtRestore} waiting ` +
          `at the end); all shipped ${secs(Math.max(...at.values()) - restoredAt)} after it was reachable again ` +
          `(bound ${secs(bound - restoredAt)})`,
      );
    },
  );
});
