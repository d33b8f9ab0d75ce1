/**
 * A bridge SIGKILLed mid-burst (a process of its own: test/support/bridge-process.ts; the worker in this one): what
 * its successor hands over again stays within the read-ahead — only the contiguous finished prefix was committed, and
 * nothing was started past BRIDGE_READ_AHEAD_RECORDS of the oldest unfinished record — and the dedupe absorbs it:
 * every order ships once (one warehouse shipment each), none is lost. The worst case is made on purpose: the first
 * order on each partition never finishes in the killed bridge (TEST_HOLD_ORDERS), so nothing behind it is committed,
 * and the bridge is killed once it has handed over all it may.
 *
 * Settings changed: BRIDGE_READ_AHEAD_RECORDS is 100 (not 2000), so that a 900-order burst on 3 partitions is well
 * past it and the bound, not the burst, decides what is redelivered; BRIDGE_SESSION_TIMEOUT_MS is 6000, so that the
 * killed member's partitions move in seconds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/adapters/store/db.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { burst, untilShipped } from '../support/tenant-traffic.js';

const READ_AHEAD = 100;
const PARTITIONS = 3;
const BURST = 900;

/** A bridge child; `delivered` holds the event ids it saw Temporal accept. */
function bridgeChild(env: Record<string, string>) {
  const delivered = new Set<string>();
  let ready = false;
  let pending = '';
  const proc: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'test/support/bridge-process.ts'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  proc.stdout!.on('data', (d: Buffer) => {
    const lines = (pending + d.toString()).split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (line === 'ready') ready = true;
      if (line.startsWith('delivered ')) for (const id of line.split(' ').slice(1)) delivered.add(id);
    }
  });
  return { proc, delivered, isReady: () => ready };
}

let s: Scenario;
let db: Db;
const children: ChildProcess[] = [];

beforeAll(async () => {
  s = await scenario('bridge-kill', {
    BRIDGE_READ_AHEAD_RECORDS: String(READ_AHEAD),
    BRIDGE_SESSION_TIMEOUT_MS: '6000',
  });
  db = createDb(runtimeConnection(s.config), 2);
  await s.startInstance({ roles: { worker: true, bridge: false } });
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await db?.end();
  await s?.close();
});

describe('a bridge killed mid-burst', () => {
  it('its successor redelivers at most the read-ahead per partition; every order ships once', async () => {
    const first = bridgeChild({ ...s.env, TEST_HOLD_ORDERS: 'held-' });
    children.push(first.proc);
    await waitFor('the first bridge to consume', first.isReady, 90_000);
    const tenant = s.tenant('kill');
    const held = await Promise.all(
      [0, 1, 2].map(async (partition) => {
        const orderId = `held-${partition}`;
        await s.produce([{ partition, key: `${tenant}/${orderId}`, value: events.placed(tenant, orderId) }]);
        return { orderId, at: Date.now() };
      }),
    );
    const published = [...held, ...(await burst(s, tenant, BURST))];
    // Killed once it has handed over all it may: every partition's read-ahead used up behind its held order, and no
    // hand-over for a second (a bridge without the bound would go on past it).
    await waitFor('the read-ahead used up', () => first.delivered.size >= (READ_AHEAD - 1) * PARTITIONS, 300_000, 100);
    let seen = -1;
    await waitFor(
      'the first bridge to hand over nothing more',
      () => {
        const quiet = first.delivered.size === seen;
        seen = first.delivered.size;
        return quiet;
      },
      300_000,
      1_000,
    );
    first.proc.kill('SIGKILL');
    const before = new Set(first.delivered);

    const second = bridgeChild(s.env);
    children.push(second.proc);
    await untilShipped(db, tenant, published, 600_000);
    const again = [...second.delivered].filter((id) => before.has(id));
    console.log(
      `killed after ${before.size} hand-overs; its successor handed over ${second.delivered.size}, ${again.length} of them again (bound ${READ_AHEAD * PARTITIONS})`,
    );
    expect(again.length).toBeLessThanOrEqual(READ_AHEAD * PARTITIONS);
    const shipments = await s.shipments(tenant);
    expect(shipments).toHaveLength(BURST + held.length);
    expect(new Set(shipments.map((x) => x.orderId)).size).toBe(BURST + held.length);
  }, 900_000);
});
