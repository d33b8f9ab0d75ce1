/**
 * Each role started while each dependency is down: it waits (logged, with backoff) for what it needs and only
 * for that, becomes ready once the dependency is back, never exits, and then does its work. The role runs as
 * the service process a container runs (src/service.ts); the other role runs in this process once all is up.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createOrderStarter } from '../../src/bridge/order-starter.js';
import { workflowSettings } from '../../src/workflow-settings.js';
import { stackDown, stackUp, type ServiceName } from '../../tools/stack/index.js';
import { connectClient } from '../../src/temporal.js';
import { caughtUp, events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';

type Role = 'bridge' | 'worker';
const DEPENDENCY_NAME: Record<ServiceName, string> = { kafka: 'Kafka', temporal: 'Temporal', postgres: 'PostgreSQL' } as Record<ServiceName, string>;
/** Partitions of a scenario's topic (test/support/harness.ts). */
const PARTITIONS = 3;

afterAll(async () => {
  await stackUp({ services: ['kafka', 'temporal', 'postgres'], quiet: true });
});

/** Canary placements on every partition; resolves once every one shipped and the group committed past them. */
async function canariesFlow(s: Scenario, tenant: string, label: string): Promise<void> {
  const ids = Array.from({ length: PARTITIONS * 2 }, (_, i) => `${label}-${i}`);
  await s.produce(ids.map((id, i) => ({ partition: i % PARTITIONS, key: id, value: events.placed(tenant, id) })));
  await waitFor(`canaries ${label} shipped`, async () => (await Promise.all(ids.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'), 120_000, 200);
  await waitFor(`group committed past canaries ${label}`, () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC), 120_000, 200);
}

describe('start-up while a dependency is down', () => {
  const cases: [Role, ServiceName, boolean][] = [
    ['bridge', 'kafka', true],
    ['bridge', 'temporal', true],
    ['bridge', 'postgres', false],
    ['worker', 'temporal', true],
    ['worker', 'postgres', true],
    ['worker', 'kafka', false],
  ];
  for (const [role, dependency, needed] of cases) {
    const title = needed
      ? `a ${role} started while ${dependency} is down waits for it, becomes ready once it is back, and works`
      : `a ${role} started while ${dependency} is down does not need it: it becomes ready and works meanwhile`;
    it(title, async () => {
      const s = await scenario(`startup-${role}-${dependency}`);
      const tenant = s.tenant(`${role}-${dependency}`);
      let proc: ServiceProcess | undefined;
      let restored = false;
      await stackDown({ services: [dependency], quiet: true });
      try {
        proc = startServiceProcess({ ...s.env, FULFILMENT_ROLES: role });
        if (needed) {
          const waiting = await proc.said(`waiting for ${DEPENDENCY_NAME[dependency]}`);
          expect(waiting).toMatchObject({ dependency: expect.stringContaining(DEPENDENCY_NAME[dependency]) });
          // It keeps waiting (several attempts, backing off) rather than exiting.
          await waitFor('a second attempt', () => proc!.lines.filter((l) => String(l.msg).startsWith('waiting for')).length >= 2, 60_000);
          expect(proc.alive()).toBe(true);
          expect(proc.lines.some((l) => l.msg === 'service ready')).toBe(false);
          await stackUp({ services: [dependency], quiet: true });
          restored = true;
          await proc.said('service ready');
        } else {
          await proc.said('service ready');
          // Doing its work with the dependency still down.
          if (role === 'bridge') {
            await s.produce(Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, value: events.placed(tenant, `during-${partition}`) })));
            await waitFor('the bridge to hand over and commit every partition', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC), 120_000);
          } else {
            const client = await connectClient(s.config.TEMPORAL_ADDRESS, s.config.TEMPORAL_NAMESPACE);
            try {
              const starter = createOrderStarter(client, s.config.TEMPORAL_TASK_QUEUE, workflowSettings(s.config));
              await starter.deliver(events.placed(tenant, 'during') as Parameters<typeof starter.deliver>[0]);
              await waitFor('the worker to ship an order', async () => (await s.row(tenant, 'during'))?.status === 'shipped', 120_000);
            } finally {
              await client.connection.close();
            }
          }
          await stackUp({ services: [dependency], quiet: true });
          restored = true;
        }
        expect(proc.alive()).toBe(true);
        // The other role joins once everything is up; canaries on every partition flow end to end.
        await s.startInstance({ roles: { worker: role === 'bridge', bridge: role === 'worker' } });
        await canariesFlow(s, tenant, `after-${role}-${dependency}`);
        expect(proc.alive()).toBe(true);
        expect(await proc.stop()).toBe(0);
      } finally {
        if (!restored) await stackUp({ services: [dependency], quiet: true });
        if (proc?.alive()) await proc.stop();
        await s.close();
      }
    });
  }
});
