/**
 * The bridge's delivery slots, shared by tenants: at most `n` hand-overs (signal-with-start calls) run at once over
 * every partition of the process, and when more wait, a freed slot goes to the tenant whose turn it is by the
 * tenants' weights (src/base/tenants/fair-queue.ts) — not to whoever asked first. A tenant alone gets every slot.
 *
 * Rules a reader must not break:
 * - a slot is held only while the hand-over runs, and is given back however it ends;
 * - a wait given up (its signal aborted: the partition parked or revoked, the bridge stopping) leaves the queue and
 *   rejects with Abandoned, so the record stays unfinished and is refetched — it never takes a slot afterwards.
 */
import { FairQueue } from '../../base/tenants/fair-queue.js';
import type { TenantWeightOf } from '../../base/tenants/weights.js';
import { Abandoned } from './backoff-gate.js';

export class FairSlots {
  private free: number;
  private readonly queue: FairQueue<() => void>;
  private readonly running = new Map<string, number>();

  constructor(n: number, weightOf: TenantWeightOf) {
    this.free = Math.max(1, n);
    this.queue = new FairQueue(weightOf);
  }

  /** Runs `work` for `tenant` once a slot is its; rejects with Abandoned if `signal` aborts while it waits. */
  async run<T>(tenant: string, signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    await this.acquire(tenant, signal);
    this.running.set(tenant, (this.running.get(tenant) ?? 0) + 1);
    try {
      return await work();
    } finally {
      const left = this.running.get(tenant)! - 1;
      if (left === 0) this.running.delete(tenant);
      else this.running.set(tenant, left);
      this.release();
    }
  }

  /** Hand-overs running now, by tenant (tenants with none are absent). */
  inFlight(): ReadonlyMap<string, number> {
    return this.running;
  }

  /** Hand-overs waiting for a slot, over every tenant. */
  get waiting(): number {
    return this.queue.size;
  }

  private acquire(tenant: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(new Abandoned('abandoned'));
    if (this.free > 0) {
      this.free -= 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal.removeEventListener('abort', giveUp);
        resolve();
      };
      const giveUp = () => {
        if (this.queue.remove(tenant, grant)) reject(new Abandoned('abandoned'));
      };
      signal.addEventListener('abort', giveUp, { once: true });
      this.queue.push(tenant, grant);
    });
  }

  private release(): void {
    const next = this.queue.shift();
    if (next) next.item();
    else this.free += 1;
  }
}
