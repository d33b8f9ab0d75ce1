/**
 * The stated worst cases of a waiting order's wake-up (docs/how-it-works.md, "When the warehouse is down"), as
 * deadlines a test asserts, with the margin a loaded 2-core machine needs (rounds late, a workflow task queued, a
 * poll): tight enough that a wake-up left to a mechanism out of the case's reach misses them.
 */

/** What a loaded 2-core machine adds to a stated worst case. */
export const MARGIN_MS = 20_000;

/**
 * By when the orders the resumers wake ship: the probe (WAREHOUSE_PROBE_SECONDS), then the paced share (`orders` ÷
 * WAREHOUSE_RESUME_PER_SECOND, one worker), after `from` (the warehouse answering); `extraMs` for what the case adds
 * (a restart).
 */
export function wokenBy(
  from: number,
  o: { probeSeconds: number; orders: number; perSecond: number; extraMs?: number },
): number {
  return from + o.probeSeconds * 1000 + (o.orders / o.perSecond) * 1000 + (o.extraMs ?? 0) + MARGIN_MS;
}

/** By when an order whose wake-up was lost (released, never signalled) ships: one lease after its release. */
export function leasedBy(releasedAt: number, leaseSeconds: number): number {
  return releasedAt + leaseSeconds * 1000 + MARGIN_MS;
}

/** The orders that shipped after their bound: `lost` ones after `leased`, the others after `woken`. */
export function shippedLate(
  shippedAt: ReadonlyMap<string, number>,
  lost: ReadonlySet<string>,
  bounds: { woken: number; leased: number },
): string[] {
  return [...shippedAt]
    .filter(([id, t]) => t > (lost.has(id) ? bounds.leased : bounds.woken))
    .map(([id]) => id)
    .sort();
}

/** Milliseconds as seconds, for what a case prints. */
export const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
