import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { caughtUp, counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';

describe('redelivery', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await scenario('redelivery', { BRIDGE_SESSION_TIMEOUT_MS: '6000' });
  });
  afterAll(async () => s?.close());

  const shipped = (tenant: string, order: string) =>
    waitFor(`${tenant}/${order} to ship`, async () => (await s.row(tenant, order))?.status === 'shipped');

  it('the same event delivered three times yields one row and one shipment', async () => {
    const app = await s.startInstance();
    try {
      const tenant = s.tenant();
      const placed = events.placed(tenant, 'o1');
      await s.produce([0, 1, 2].map((partition) => ({ partition, value: placed })));
      await shipped(tenant, 'o1');
      await waitFor('all three deliveries', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
      // Applied once; each copy suppressed by whichever layer met it: this bridge's hint, the order's run while open, or
      // the store once it closed. (A copy signalled while the first task was completing makes Temporal hand the run a
      // new task, which runs the placement's local activity again: the store suppresses that repeat too, and counts it.)
      const layers = async () =>
        Object.fromEntries(
          await Promise.all(
            ['bridge', 'workflow', 'store'].map(
              async (layer) =>
                [layer, await counter(app, 'fulfilment_duplicates_suppressed_total', { layer })] as const,
            ),
          ),
        );
      const total = async () => Object.values(await layers()).reduce((a, b) => a + b, 0);
      await waitFor('two duplicates suppressed', async () => (await total()) >= 2);
      expect(
        await counter(app, 'fulfilment_events_processed_total', { type: 'orders.OrderPlaced', outcome: 'applied' }),
        JSON.stringify(await layers()),
      ).toBe(1);
      expect(await s.shipments(tenant)).toHaveLength(1);
    } finally {
      await app.stop();
    }
  });

  it('resetting the group offsets and consuming everything again changes nothing', async () => {
    const app = await s.startInstance();
    const tenant = s.tenant();
    await s.produce(['a', 'b', 'c'].map((o) => ({ value: events.placed(tenant, o) })));
    for (const o of ['a', 'b', 'c']) await shipped(tenant, o);
    await waitFor('first pass committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
    const before = await Promise.all(['a', 'b', 'c'].map((o) => s.row(tenant, o)));
    await app.stop();

    await s.admin.resetOffsets({ groupId: s.config.CONSUMER_GROUP, topic: s.config.ORDERS_TOPIC, earliest: true });
    const again = await s.startInstance();
    try {
      await waitFor('second pass committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
      // Every order's run closed as it shipped: the new instance's bridge records each copy through the store, a duplicate.
      expect(
        await counter(again, 'fulfilment_bridge_records_total', { outcome: 'recorded-late' }),
      ).toBeGreaterThanOrEqual(3);
      expect(await counter(again, 'fulfilment_duplicates_suppressed_total', { layer: 'store' })).toBeGreaterThanOrEqual(
        3,
      );
      expect(await Promise.all(['a', 'b', 'c'].map((o) => s.row(tenant, o)))).toEqual(before);
      expect(await s.shipments(tenant)).toHaveLength(3);
    } finally {
      await again.stop();
    }
  });

  it('a bridge killed between signal and commit: the redelivered event is absorbed', async () => {
    const worker = await s.startInstance({ roles: { worker: true, bridge: false } });
    const tenant = s.tenant();
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/crashing-bridge.ts'], {
      env: s.env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    );
    await waitFor('the crashing bridge to start', () => out.includes('ready'));

    const placed = events.placed(tenant, 'o1');
    await s.produce([{ value: placed }]);
    expect(await exited).toBe('SIGKILL');
    expect(out).toContain(`delivered ${placed.eventId}`);
    expect(await caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC)).toBe(false);

    // A healthy bridge takes the partition over once the dead member's session expires, and gets the event again.
    const bridge = await s.startInstance({ roles: { worker: false, bridge: true } });
    await waitFor(
      'the redelivery to be committed',
      () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
      90_000,
    );
    await shipped(tenant, 'o1');
    // The redelivery met the order's run while open (its memory of event ids), or the store once it had closed.
    await waitFor(
      'the redelivery recognised as a duplicate',
      async () =>
        (await counter(worker, 'fulfilment_duplicates_suppressed_total', { layer: 'workflow' })) +
          (await counter(bridge, 'fulfilment_duplicates_suppressed_total', { layer: 'store' })) ===
        1,
    );
    const view = await bridge.client.workflow.getHandle(orderWorkflowId(tenant, 'o1')).query(orderStatusQuery);
    expect(view).toMatchObject({ appliedEvents: 1 });
    expect(await s.shipments(tenant)).toHaveLength(1);
  });
});
