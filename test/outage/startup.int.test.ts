/**
 * Each role started while each dependency is down: it waits (logged, with backoff) for what it needs and only
 * for that, becomes ready once the dependency is back, never exits, and then does its work. Both roles run as
 * the service process a container runs (src/service.ts), started together while one dependency is down: the role
 * that needs it waits, the other becomes ready and works meanwhile.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createOrderStarter } from '../../src/roles/bridge/order-starter.js';
import { workflowSettings } from '../../src/domain/workflow-settings.js';
import { tenantWeights } from '../../src/base/tenants/weights.js';
import { connectClient } from '../../src/domain/temporal.js';
import { stackDown, stackTemporalKind, stackUp, type ServiceName } from '../../tools/stack/index.js';
import type { OrderEvent } from '../../src/vocabulary/order.js';
import { caughtUp, events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';

type Role = 'bridge' | 'worker';
const NAME: Partial<Record<ServiceName, string>> = { kafka: 'Kafka', temporal: 'Temporal', postgres: 'PostgreSQL' };
/** Which role needs which dependency at start-up. */
const NEEDS: Record<Role, ServiceName[]> = { bridge: ['kafka', 'temporal'], worker: ['temporal', 'postgres'] };
/**
 * With STACK_TEMPORAL=server the Temporal server keeps its store on the stack's PostgreSQL: while PostgreSQL is down
 * the bridge's Temporal answers (frontend up) but cannot persist, so the bridge neither waits at start-up nor hands
 * anything over. It is then only required to do its share once PostgreSQL is back.
 */
const temporalOnPostgres = stackTemporalKind() === 'server';
/** Partitions of a scenario's topic (test/support/harness.ts). */
const PARTITIONS = 3;

afterAll(async () => {
  await stackUp({ services: ['kafka', 'temporal', 'postgres'], quiet: true });
});

/** Canary placements on every partition; resolves once every one shipped and the group committed past them. */
async function canariesFlow(s: Scenario, tenant: string, label: string): Promise<void> {
  const ids = Array.from({ length: PARTITIONS * 2 }, (_, i) => `${label}-${i}`);
  await s.produce(ids.map((id, i) => ({ partition: i % PARTITIONS, key: id, value: events.placed(tenant, id) })));
  await waitFor(
    `canaries ${label} shipped`,
    async () => (await Promise.all(ids.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
    120_000,
    200,
  );
  await waitFor(
    `group committed past canaries ${label}`,
    () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
    120_000,
    200,
  );
}

/** Shows the role that does not need the stopped dependency doing its work while it is down. */
async function worksMeanwhile(s: Scenario, role: Role, tenant: string): Promise<void> {
  if (role === 'bridge') {
    // Hand-over and commit need only Kafka and Temporal.
    await s.produce(
      Array.from({ length: PARTITIONS }, (_, partition) => ({
        partition,
        value: events.placed(tenant, `during-${partition}`),
      })),
    );
    await waitFor(
      'the bridge to hand over and commit every partition',
      () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
      120_000,
    );
    return;
  }
  // Workflows and activities need only Temporal and PostgreSQL: an order started directly ships.
  const client = await connectClient(s.config);
  try {
    const starter = createOrderStarter(client, s.config.TEMPORAL_TASK_QUEUE, workflowSettings(s.config), s.late, {
      weightOf: tenantWeights(s.config),
    });
    await starter.deliver([events.placed(tenant, 'during') as OrderEvent]);
    await waitFor(
      'the worker to ship an order',
      async () => (await s.row(tenant, 'during'))?.status === 'shipped',
      120_000,
    );
  } finally {
    await client.connection.close();
  }
}

describe('start-up while a dependency is down', () => {
  for (const dependency of ['kafka', 'temporal', 'postgres'] as const) {
    const waiting = (Object.keys(NEEDS) as Role[]).filter((r) => NEEDS[r].includes(dependency));
    const throughTemporal = (r: Role) =>
      temporalOnPostgres && dependency === 'postgres' && NEEDS[r].includes('temporal');
    const unaffected = (Object.keys(NEEDS) as Role[]).filter(
      (r) => !NEEDS[r].includes(dependency) && !throughTemporal(r),
    );
    const held = (Object.keys(NEEDS) as Role[]).filter((r) => !NEEDS[r].includes(dependency) && throughTemporal(r));
    const title = [
      `${waiting.join(' and ')} started while ${dependency} is down wait${waiting.length === 1 ? 's' : ''} for it and become${waiting.length === 1 ? 's' : ''} ready once it is back`,
      ...unaffected.map((r) => `the ${r} does not need it: ready and working meanwhile`),
      ...held.map((r) => `the ${r} reaches it through Temporal's store: working once it is back`),
    ].join('; ');
    it(title, async () => {
      const s = await scenario(`startup-${dependency}`);
      const tenant = s.tenant(dependency);
      const procs = new Map<Role, ServiceProcess>();
      let restored = false;
      await stackDown({ services: [dependency], quiet: true });
      try {
        for (const role of ['bridge', 'worker'] as const)
          procs.set(role, startServiceProcess({ ...s.env, FULFILMENT_ROLES: role }));
        for (const role of waiting) {
          const p = procs.get(role)!;
          expect(await p.said(`waiting for ${NAME[dependency]}`)).toMatchObject({
            dependency: expect.stringContaining(NAME[dependency]!),
          });
        }
        for (const role of unaffected) {
          await procs.get(role)!.said('service ready');
          await worksMeanwhile(s, role, tenant);
        }
        // Those that need it keep waiting — backing off, not exiting — until it is back.
        for (const role of waiting) {
          const p = procs.get(role)!;
          await waitFor(
            `the ${role} to try again`,
            () => p.lines.filter((l) => String(l.msg).startsWith('waiting for')).length >= 2,
            90_000,
          );
          expect(p.alive()).toBe(true);
          expect(p.lines.some((l) => l.msg === 'service ready')).toBe(false);
        }
        await stackUp({ services: [dependency], quiet: true });
        restored = true;
        for (const role of waiting) await procs.get(role)!.said('service ready');
        // Both processes together do the whole job: canaries on every partition ship and are committed.
        await canariesFlow(s, tenant, `after-${dependency}`);
        for (const [role, p] of procs) {
          expect(p.alive(), role).toBe(true);
          expect(await p.stop(), `${role} exit code`).toBe(0);
        }
      } finally {
        if (!restored) await stackUp({ services: [dependency], quiet: true });
        for (const p of procs.values()) if (p.alive()) await p.stop();
        await s.close();
      }
    });
  }
});
