import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { UsageError } from '../../src/cli/cli-errors.js';
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import { redeliver } from '../../src/cli/redeliver/redeliver.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { caughtUp, counter, events, scenario, waitFor, type Scenario } from '../support/harness.js';

describe('fulfilment redeliver', () => {
  let s: Scenario;
  let app: App;
  let tenant: string;
  let group: string;
  const orders = ['a', 'b', 'c', 'd'];
  const ctx = () => ({ config: s.config, out: memoryOutput() });
  const view = (order: string) => app.client.workflow.getHandle(orderWorkflowId(tenant, order)).query(orderStatusQuery);
  const mainOffsets = () => s.admin.fetchOffsets({ groupId: s.config.CONSUMER_GROUP, topics: [s.config.ORDERS_TOPIC] });
  const shipped = (order: string) =>
    waitFor(`${order} to ship`, async () => (await s.row(tenant, order))?.status === 'shipped');

  beforeAll(async () => {
    s = await scenario('redeliver');
    app = await s.startInstance();
    tenant = s.tenant();
    group = `redeliver-${s.suffix}`;
    await s.produce([
      { partition: 0, value: events.placed(tenant, 'a') },
      { partition: 1, value: events.placed(tenant, 'b') },
      { partition: 2, value: events.placed(tenant, 'c') },
      { partition: 0, value: events.placed(tenant, 'd') },
      { partition: 1, value: Buffer.from('not json at all') },
      { partition: 2, value: { ...events.placed(tenant, 'refund-1'), type: 'orders.OrderRefunded' } },
    ]);
    for (const o of orders) await shipped(o);
    await waitFor('the service caught up', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
  });

  afterAll(async () => {
    await s?.admin.deleteGroups([group]).catch(() => undefined);
    await s?.close();
  });

  it("refuses to redeliver in the service's own consumer group", async () => {
    await expect(
      redeliver(ctx(), { from: { kind: 'earliest' }, rate: 10, group: s.config.CONSUMER_GROUP }),
    ).rejects.toThrow(UsageError);
    const out = memoryOutput();
    expect(
      await runCli(['redeliver', '--from', 'earliest', '--rate', '10', '--group', s.config.CONSUMER_GROUP], {
        out,
        config: s.config,
      }),
    ).toBe(2);
    expect(out.stderr).toContain(`--group ${s.config.CONSUMER_GROUP} is the service's own consumer group`);
  });

  it('a dry run counts what a redelivery would deliver and delivers and commits nothing', async () => {
    const before = await mainOffsets();
    const summary = await redeliver(ctx(), { from: { kind: 'earliest' }, dryRun: true, group });
    expect(summary).toMatchObject({
      dryRun: true,
      group: null,
      records: 6,
      read: 6,
      valid: 4,
      alreadyProcessed: 4,
      delivered: 0,
      malformed: 1,
      unknownType: 1,
      completed: true,
    });
    const late = await counter(app, 'fulfilment_bridge_records_total', { outcome: 'recorded-late' });
    const redeliveryGroup = await s.admin.fetchOffsets({ groupId: group, topics: [s.config.ORDERS_TOPIC] });
    expect(redeliveryGroup[0]!.partitions.every((p) => p.offset === '-1')).toBe(true);
    expect(await mainOffsets()).toEqual(before);
    expect(await counter(app, 'fulfilment_bridge_records_total', { outcome: 'recorded-late' })).toBe(late);
  });

  it('redelivering everything in a separate group applies nothing twice and leaves the service group alone', async () => {
    const mainBefore = await mainOffsets();
    const rowsBefore = await Promise.all(orders.map((o) => s.row(tenant, o)));
    expect(await s.shipments(tenant)).toHaveLength(4);

    const out = memoryOutput();
    const summary = await redeliver(
      { config: s.config, out },
      { from: { kind: 'earliest' }, rate: 20, group, progressEveryMs: 0 },
    );
    // Every order's run closed as it shipped: each redelivered copy is recorded through the store (a duplicate there).
    expect(summary).toMatchObject({
      dryRun: false,
      group,
      records: 6,
      read: 6,
      valid: 4,
      delivered: 0,
      alreadyProcessed: 4,
      recordedLate: 4,
      rejected: 0,
      malformed: 1,
      unknownType: 1,
      completed: true,
    });
    expect(out.stderr).toContain('redelivery: 6/6 records');
    expect(out.stdout).toContain(`as group ${group}: complete`);

    for (const o of orders) expect(await view(o)).toMatchObject({ status: 'shipped', appliedEvents: 1 });
    expect(await Promise.all(orders.map((o) => s.row(tenant, o)))).toEqual(rowsBefore);
    expect(await s.shipments(tenant)).toHaveLength(4);
    expect(await s.row(tenant, 'refund-1')).toBeUndefined();
    expect(await mainOffsets()).toEqual(mainBefore);
    // the redelivery group's own offsets record how far it got: the end of every partition
    const ends = await s.admin.fetchTopicOffsets(s.config.ORDERS_TOPIC);
    const redelivered = await s.admin.fetchOffsets({ groupId: group, topics: [s.config.ORDERS_TOPIC] });
    expect(Object.fromEntries(redelivered[0]!.partitions.map((p) => [p.partition, p.offset]))).toEqual(
      Object.fromEntries(ends.map((e) => [e.partition, e.high])),
    );
  });

  it('a redelivery from a time delivers only what was written from then on', async () => {
    const since = new Date();
    await s.produce([{ partition: 1, value: events.placed(tenant, 'e') }]);
    await shipped('e');
    await waitFor('the service caught up', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
    const summary = await redeliver(ctx(), { from: { kind: 'time', at: since }, rate: 20, group });
    expect(summary).toMatchObject({
      records: 1,
      delivered: 0,
      recordedLate: 1,
      alreadyProcessed: 1,
      malformed: 0,
      unknownType: 0,
      completed: true,
    });
    expect(await s.shipments(tenant)).toHaveLength(5);
  });
});
