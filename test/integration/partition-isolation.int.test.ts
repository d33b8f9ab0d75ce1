/**
 * A partition that cannot make progress never stops the others of the same bridge. Here one partition's records
 * are held behind a dependency that fails for that partition only (the bridge's starter fails transiently for
 * its orders); meanwhile records on every other partition keep being fetched, shipped and committed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { DependencyUnavailableError } from '../../src/base/errors.js';
import { committedOffsets, counter, endOffsets, events, scenario, waitFor, type Scenario } from '../support/harness.js';

const HELD = 0;
let s: Scenario;
let app: App;
let healthy = false;
let heldAttempts = 0;

beforeAll(async () => {
  s = await scenario('isolation');
  app = await s.startInstance({
    wrapStarter: (starter) => ({
      async deliver(event) {
        if (!healthy && event[0]!.origin?.partition === HELD) {
          heldAttempts += 1;
          throw new DependencyUnavailableError(`partition ${HELD}'s dependency is down (test)`);
        }
        return starter.deliver(event);
      },
    }),
  });
});
afterAll(async () => s?.close());

describe('partition isolation', () => {
  it('one partition held behind a failing dependency; every other partition keeps flowing and committing', async () => {
    const tenant = s.tenant();
    await s.produce(
      Array.from({ length: 5 }, (_, i) => ({ partition: HELD, value: events.placed(tenant, `held-${i}`) })),
    );
    await waitFor('the held partition to back off', () => heldAttempts >= 2, 60_000);
    const heldEnd = (await endOffsets(s.admin, s.config.ORDERS_TOPIC)).get(HELD)!;

    // Waves of canaries on the other partitions, produced after the held partition started failing.
    for (let wave = 0; wave < 3; wave += 1) {
      const ids = [1, 2].flatMap((p) => Array.from({ length: 10 }, (_, i) => ({ p, id: `canary-${wave}-${p}-${i}` })));
      await s.produce(ids.map(({ p, id }) => ({ partition: p, key: id, value: events.placed(tenant, id) })));
      await waitFor(
        `wave ${wave} shipped`,
        async () => (await Promise.all(ids.map(({ id }) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
        60_000,
        200,
      );
      const ends = await endOffsets(s.admin, s.config.ORDERS_TOPIC);
      await waitFor(
        `wave ${wave} committed on partitions 1 and 2`,
        async () => {
          const done = await committedOffsets(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC);
          return [1, 2].every((p) => (done.get(p) ?? -1n) >= ends.get(p)!);
        },
        60_000,
        200,
      );
    }
    // Partition 0 is still held: nothing of it was committed or applied, and it was probed, not hammered.
    const done = await committedOffsets(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC);
    expect(done.get(HELD) ?? -1n).toBeLessThan(heldEnd);
    expect(await s.row(tenant, 'held-0')).toBeUndefined();
    expect(await counter(app, 'fulfilment_retries_total', { operation: 'deliver' })).toBeGreaterThan(0);

    // The dependency comes back: the held partition drains by itself.
    healthy = true;
    await waitFor(
      'the held orders to ship',
      async () =>
        (await Promise.all([0, 1, 2, 3, 4].map((i) => s.row(tenant, `held-${i}`)))).every(
          (r) => r?.status === 'shipped',
        ),
      90_000,
      200,
    );
    await waitFor(
      'the held partition committed',
      async () =>
        ((await committedOffsets(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC)).get(HELD) ?? -1n) >= heldEnd,
      60_000,
    );
  });
});
