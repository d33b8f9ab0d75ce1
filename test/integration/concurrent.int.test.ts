import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caughtUp, events, scenario, waitFor, type Scenario } from '../support/harness.js';

describe('two bridge instances in one group', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await scenario('concurrent');
  });
  afterAll(async () => s?.close());

  it('the same event delivered concurrently to both yields one row and one shipment', async () => {
    await s.startInstance({ roles: { worker: true, bridge: false } });
    const bridges = [
      await s.startInstance({ roles: { worker: false, bridge: true } }),
      await s.startInstance({ roles: { worker: false, bridge: true } }),
    ];
    // Wait until the group has settled with both members holding partitions.
    await waitFor('both bridges to hold partitions', async () => {
      const [group] = (await s.admin.describeGroups([s.config.CONSUMER_GROUP])).groups;
      return (
        group?.state === 'Stable' &&
        group.members.length === 2 &&
        group.members.every((m) => m.memberAssignment.length > 0)
      );
    });
    expect(bridges).toHaveLength(2);

    const tenant = s.tenant();
    const placed = events.placed(tenant, 'o1');
    // One copy on every partition: both instances get it at the same moment.
    await s.produce([0, 1, 2].map((partition) => ({ partition, value: placed })));
    await waitFor('all copies committed', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC));
    await waitFor('the order to ship', async () => (await s.row(tenant, 'o1'))?.status === 'shipped');
    expect(await s.shipments(tenant)).toHaveLength(1);
    const row = await s.row(tenant, 'o1');
    expect(row).toMatchObject({ order_version: 1, last_event_id: placed.eventId });
  });
});
