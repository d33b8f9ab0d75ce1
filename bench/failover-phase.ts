/**
 * The bench's Kafka failover (the stack's three-node cluster: `STACK_KAFKA=cluster npm run bench -- --phases
 * failover`): one process with both roles at the defaults, orders arriving at a steady FAILOVER_RATE per second on a
 * topic of 6 partitions with 3 replicas, and after BEFORE_S seconds the node leading most of its partitions SIGKILLed
 * (back HELD_S seconds after its partitions have new leaders), the stream going on for AFTER_S seconds more. What a
 * user meets: produce→shipped p50/p99 before, around (the orders that arrived in the AROUND_S seconds after the kill)
 * and after; the stall (the kill → the first order that arrived after it shipped); how long until every order ships
 * within twice the p99 from before again. Sends are not awaited one by one, so the arrival rate holds while the
 * producer waits for an election. Nothing asserted (a bench is not a test).
 */
import { partitionPlacement, planFromEnv, stackKafkaNode } from '../tools/stack/index.js';
import { shippedAfter } from './life-phases.js';
import { percentile } from './stats.js';
import {
  dropTopic,
  measured,
  placement,
  privateTopic,
  produce,
  sleep,
  startChild,
  type Child,
  type Context,
  type PhaseResult,
} from './phases.js';

/** Orders per second through the failover. */
export const FAILOVER_RATE = 10;
const BEFORE_S = 20;
const HELD_S = 10;
const AFTER_S = 30;
const AROUND_S = 15;

/** True when the stack runs the three-node Kafka this phase needs. */
export const clusterRuns = (): boolean => {
  const plan = planFromEnv();
  return plan.kafka.kind === 'cluster' && !plan.kafka.external;
};

const ms = (sorted: number[], q: number) => (sorted.length ? percentile(sorted, q) : -1);

export async function kafkaFailover(ctx: Context, rep: number): Promise<PhaseResult> {
  const tenant = `b-${ctx.suffix}-failover-${rep}`;
  const { topic, group, env } = await privateTopic(ctx, `failover-${rep}`, 6);
  const plan = planFromEnv();
  let both: Child | undefined;
  let killed: number | undefined;
  try {
    both = await startChild('both', { ...env, TEMPORAL_TASK_QUEUE: `bench-${ctx.suffix}-failover-${rep}` });
    const b = both;
    return await measured(
      ctx,
      'failover',
      () => ({ bridge: b.pid }),
      async () => {
        const arrived = new Map<string, number>();
        const sends: Promise<void>[] = [];
        let i = 0;
        const paced = async (untilMs: number) => {
          const start = Date.now();
          for (let k = 0; Date.now() < untilMs; k += 1) {
            const e = placement(tenant, i);
            i += 1;
            arrived.set(e.orderId, Date.now());
            // Not awaited: the orders keep arriving while one send waits out an election.
            sends.push(produce(ctx, topic, [{ key: e.orderId, value: JSON.stringify(e) }]));
            const next = start + ((k + 1) * 1000) / FAILOVER_RATE;
            if (next > Date.now()) await sleep(next - Date.now());
          }
        };
        await paced(Date.now() + BEFORE_S * 1000);
        const placementNow = await partitionPlacement(plan, [topic]);
        const led = new Map<number, number>();
        for (const p of placementNow) led.set(p.leader, (led.get(p.leader) ?? 0) + 1);
        const victim = [...led].sort((a, z) => z[1] - a[1])[0]![0];
        const killAt = Date.now();
        await stackKafkaNode('kill', victim);
        killed = victim;
        const stream = paced(killAt + (AFTER_S + HELD_S) * 1000);
        // Back once its partitions have new leaders and it has stayed down HELD_S more.
        for (;;) {
          const now = await partitionPlacement(plan, [topic]).catch(() => []);
          if (now.length && now.every((p) => p.leader >= 0 && p.leader !== victim)) break;
          await sleep(200);
        }
        const movedAt = Date.now();
        await sleep(HELD_S * 1000);
        await stackKafkaNode('start', victim);
        killed = undefined;
        await stream;
        await Promise.all(sends);
        const total = arrived.size;
        // When each order shipped, ms since the epoch.
        const shippedAt = async () =>
          new Map([...(await shippedAfter(ctx.db, tenant, 0))].map(([id, s]) => [id, s * 1000]));
        let shipped = await shippedAt();
        while (shipped.size < total) {
          ctx.progress(`failover: ${shipped.size}/${total} shipped`);
          await sleep(500);
          shipped = await shippedAt();
        }
        const latency = (from: number, to: number) =>
          [...arrived]
            .filter(([, at]) => at >= from && at < to)
            .map(([id, at]) => shipped.get(id)! - at)
            .sort((a, z) => a - z);
        const before = latency(0, killAt);
        const around = latency(killAt, killAt + AROUND_S * 1000);
        const after = latency(killAt + AROUND_S * 1000, Infinity);
        const firstAfter = Math.min(...[...arrived].filter(([, at]) => at >= killAt).map(([id]) => shipped.get(id)!));
        const bound = 2 * ms(before, 0.99);
        const slowAfterKill = [...arrived].filter(([id, at]) => at >= killAt && shipped.get(id)! - at > bound);
        const caughtUpAt = Math.max(killAt, ...slowAfterKill.map(([id]) => shipped.get(id)!));
        return {
          rate: FAILOVER_RATE,
          orders: total,
          victim,
          electionSeconds: (movedAt - killAt) / 1000,
          p50Before: ms(before, 0.5),
          p99Before: ms(before, 0.99),
          p50Around: ms(around, 0.5),
          p99Around: ms(around, 0.99),
          maxAround: around.at(-1) ?? -1,
          p50After: ms(after, 0.5),
          p99After: ms(after, 0.99),
          stallSeconds: (firstAfter - killAt) / 1000,
          catchUpSeconds: (caughtUpAt - killAt) / 1000,
        };
      },
    );
  } finally {
    if (killed !== undefined) await stackKafkaNode('start', killed).catch(() => undefined);
    await both?.stop();
    await dropTopic(ctx, topic, group);
  }
}
