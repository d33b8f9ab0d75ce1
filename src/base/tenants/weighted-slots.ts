/**
 * Weighted fair slots: a fixed number of slots (e.g. one worker's concurrent warehouse calls) shared by tenants in
 * proportion to their weights while several have callers waiting, and all of them to a tenant alone (work conserving).
 *
 * A freed slot goes to the waiting tenant with the fewest slots in use per unit of weight (ties: the tenant whose first
 * caller has waited longest); within a tenant, callers are served first come, first served. So while tenants compete,
 * each holds slots in proportion to its weight; a tenant alone takes every free slot; and a caller of another tenant
 * waits only for the next slot to free, never behind a queue of the busy tenant's callers. Nothing is taken back from
 * a tenant that holds more than its share (its calls are not interrupted): its slots come back as its calls end.
 *
 * Rules a reader must not break: every slot granted is released exactly once (the release function is idempotent);
 * a caller whose signal aborts while it waits leaves the queue at once, with the signal's reason, and never holds a
 * slot; after every step either no slot is free or no caller waits (a free slot never idles beside a waiter).
 *
 * Why not a library: cockatiel's bulkhead (in package.json) is one first-come-first-served queue with one capacity —
 * one tenant's backlog would sit ahead of everyone else's, and a bulkhead per tenant would fix each tenant's capacity,
 * idle while the tenant is, so a tenant alone could not use it all. Neither is weighted by key.
 */

/** Releases a granted slot; calling it again does nothing. */
export type ReleaseSlot = () => void;

/** Told of every change of a tenant's slots in use and callers waiting (e.g. to move a gauge), as +1 / -1. */
export interface SlotsObserver {
  inUse(tenant: string, delta: 1 | -1): void;
  waiting(tenant: string, delta: 1 | -1): void;
}

export interface WeightedSlots {
  /** The number of slots shared. */
  readonly total: number;
  /**
   * Waits for a slot for `tenant` and resolves with its release. Rejects with `signal.reason` if the signal aborts
   * before the slot is granted (the caller's place is given up).
   */
  acquire(tenant: string, signal?: AbortSignal): Promise<ReleaseSlot>;
  /** Slots in use and callers waiting, per tenant that has either. */
  usage(): Map<string, { inUse: number; waiting: number }>;
}

interface Waiter {
  seq: number;
  grant(release: ReleaseSlot): void;
}

interface TenantSlots {
  weight: number;
  inUse: number;
  queue: Waiter[];
}

/**
 * `total` slots shared by tenants weighted by `weightOf` (read once per tenant while it holds or waits for a slot).
 * Over 80 lines: a factory whose steps (choose the next tenant, grant, release, give up a place) share one closure's
 * state — the free count and each tenant's slots and queue — each a named inner function.
 */
export function createWeightedSlots(
  total: number,
  weightOf: (tenant: string) => number,
  observer?: SlotsObserver,
): WeightedSlots {
  if (!Number.isInteger(total) || total < 1) throw new RangeError(`slots: expected a whole number ≥ 1, got ${total}`);
  const tenants = new Map<string, TenantSlots>();
  let free = total;
  let arrivals = 0;

  const stateOf = (tenant: string): TenantSlots => {
    let s = tenants.get(tenant);
    if (!s) {
      const weight = weightOf(tenant);
      if (!(weight > 0)) throw new RangeError(`slots: tenant ${tenant}'s weight must be > 0, got ${weight}`);
      s = { weight, inUse: 0, queue: [] };
      tenants.set(tenant, s);
    }
    return s;
  };
  const forgetIdle = (tenant: string, s: TenantSlots) => {
    if (s.inUse === 0 && s.queue.length === 0) tenants.delete(tenant);
  };

  /** The waiting tenant furthest below its share: fewest slots in use per weight, then the longest-waiting. */
  function next(): [string, TenantSlots] | undefined {
    let best: [string, TenantSlots] | undefined;
    for (const entry of tenants) {
      const s = entry[1];
      if (s.queue.length === 0) continue;
      if (!best) {
        best = entry;
        continue;
      }
      const b = best[1];
      const load = s.inUse / s.weight;
      const bestLoad = b.inUse / b.weight;
      if (load < bestLoad || (load === bestLoad && s.queue[0]!.seq < b.queue[0]!.seq)) best = entry;
    }
    return best;
  }

  function releaser(tenant: string, s: TenantSlots): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      s.inUse -= 1;
      free += 1;
      observer?.inUse(tenant, -1);
      forgetIdle(tenant, s);
      dispatch();
    };
  }

  /** Grants free slots to waiters until none is free or none waits. */
  function dispatch(): void {
    while (free > 0) {
      const chosen = next();
      if (!chosen) return;
      const [tenant, s] = chosen;
      const waiter = s.queue.shift()!;
      s.inUse += 1;
      free -= 1;
      observer?.waiting(tenant, -1);
      observer?.inUse(tenant, 1);
      waiter.grant(releaser(tenant, s));
    }
  }

  return {
    total,
    async acquire(tenant, signal) {
      signal?.throwIfAborted();
      const s = stateOf(tenant);
      return new Promise<ReleaseSlot>((resolve, reject) => {
        const onAbort = () => {
          const at = s.queue.indexOf(waiter);
          if (at < 0) return;
          s.queue.splice(at, 1);
          observer?.waiting(tenant, -1);
          forgetIdle(tenant, s);
          reject(signal!.reason);
        };
        const waiter: Waiter = {
          seq: (arrivals += 1),
          grant(release) {
            signal?.removeEventListener('abort', onAbort);
            resolve(release);
          },
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        s.queue.push(waiter);
        observer?.waiting(tenant, 1);
        dispatch();
      });
    },
    usage() {
      const out = new Map<string, { inUse: number; waiting: number }>();
      for (const [tenant, s] of tenants) out.set(tenant, { inUse: s.inUse, waiting: s.queue.length });
      return out;
    },
  };
}
