/**
 * Tenants' traffic for the fairness tests: a burst produced as fast as Kafka takes it, a steady stream paced at a
 * rate, each order's publish time kept; and what became of them — publish→shipped per order from the rows' shipped_at.
 */
import type { Db } from '../../src/adapters/store/db.js';
import { tenantRows, waitFor, type Scenario } from './harness.js';
import { events } from './events.js';

/** One order as produced: its id and when Kafka acknowledged it (ms since the epoch). */
export interface Published {
  orderId: string;
  at: number;
}

/** `count` placements of `tenant`, keyed by order so they spread over the partitions, in chunks of 500. */
export async function burst(s: Scenario, tenant: string, count: number, prefix = 'burst'): Promise<Published[]> {
  const out: Published[] = [];
  for (let i = 0; i < count; i += 500) {
    const ids = Array.from({ length: Math.min(500, count - i) }, (_, j) => `${prefix}-${i + j}`);
    await s.produce(ids.map((id) => ({ key: `${tenant}/${id}`, value: events.placed(tenant, id) })));
    const at = Date.now();
    for (const orderId of ids) out.push({ orderId, at });
  }
  return out;
}

/** A steady stream of one placement every `everyMs` for `tenant`, until `stop()`; each order's publish time kept. */
export function stream(s: Scenario, tenant: string, everyMs: number, prefix = 'steady') {
  const published: Published[] = [];
  let stopped = false;
  const done = (async () => {
    for (let i = 0; !stopped; i += 1) {
      const orderId = `${prefix}-${i}`;
      await s.produce([{ key: `${tenant}/${orderId}`, value: events.placed(tenant, orderId) }]);
      published.push({ orderId, at: Date.now() });
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    published,
    async stop(): Promise<Published[]> {
      stopped = true;
      await done;
      return published;
    },
  };
}

/** Each order's publish→shipped, milliseconds, and when it shipped, once every one of them shipped. */
export async function untilShipped(
  db: Db,
  tenant: string,
  published: readonly Published[],
  timeoutMs: number,
): Promise<{ orderId: string; publishedAt: number; shippedAt: number; latencyMs: number }[]> {
  const byId = await waitFor(
    `${published.length} orders of ${tenant} shipped`,
    async () => {
      const rows = new Map((await tenantRows(db, tenant)).map((r) => [r.order_id, r]));
      return published.every(({ orderId }) => rows.get(orderId)?.status === 'shipped') ? rows : undefined;
    },
    timeoutMs,
    500,
  );
  return published.map(({ orderId, at }) => {
    const shippedAt = byId.get(orderId)!.shipped_at!.getTime();
    return { orderId, publishedAt: at, shippedAt, latencyMs: shippedAt - at };
  });
}

/** The `p`th percentile (0–100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
