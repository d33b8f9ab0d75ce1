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
    const tenant = s.tenant();
    const placed = events.placed(tenant, 'o1');
    await s.produce([0, 1, 2].map((partition) => ({ partition, value: placed })));
    await shipped(tenant, 'o1');
    await waitFor('all three deliveries', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
    await waitFor('two duplicates suppressed', async () => (await counter(app, 'fulfilment_duplicates_suppressed_total')) === 2);
    expect(await s.shipments(tenant)).toHaveLength(1);
    await app.stop();
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
    await waitFor('second pass committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
    expect(await counter(again, 'fulfilment_bridge_records_total', { outcome: 'accepted' })).toBeGreaterThanOrEqual(3);
    for (const o of ['a', 'b', 'c']) {
      await waitFor(`the workflow to suppress the redelivery of ${o}`, async () =>
        (await again.client.workflow.getHandle(orderWorkflowId(tenant, o)).query(orderStatusQuery)).duplicatesSuppressed >= 1,
      );
    }
    expect(await Promise.all(['a', 'b', 'c'].map((o) => s.row(tenant, o)))).toEqual(before);
    expect(await s.shipments(tenant)).toHaveLength(3);
    await again.stop();
  });

  it('a bridge killed between signal and commit: the redelivered event is absorbed', async () => {
    await s.startInstance({ roles: { worker: true, bridge: false } });
    const tenant = s.tenant();
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/crashing-bridge.ts'], {
      env: s.env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await waitFor('the crashing bridge to start', () => out.includes('ready'));

    const placed = events.placed(tenant, 'o1');
    await s.produce([{ value: placed }]);
    expect(await exited).toBe('SIGKILL');
    expect(out).toContain(`delivered ${placed.eventId}`);
    expect(await caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC)).toBe(false);

    // A healthy bridge takes the partition over once the dead member's session expires, and gets the event again.
    const bridge = await s.startInstance({ roles: { worker: false, bridge: true } });
    await waitFor('the redelivery to be committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC), 90_000);
    await shipped(tenant, 'o1');
    const view = await bridge.client.workflow.getHandle(orderWorkflowId(tenant, 'o1')).query(orderStatusQuery);
    expect(view).toMatchObject({ appliedEvents: 1, duplicatesSuppressed: 1 });
    expect(await s.shipments(tenant)).toHaveLength(1);
  });
});
