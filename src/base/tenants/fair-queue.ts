/**
 * A weighted fair queue of items by tenant: start-time fair queuing (Goyal, Vin and Cheng, 1996). Each tenant with
 * items waiting is a flow; its head item carries a virtual start tag, and the next item out is the head with the
 * smallest tag. Taking an item advances its tenant's finish tag by `1 / weight`, so while tenants keep items waiting
 * each gets a share of the items taken in proportion to its weight; a tenant that was idle starts at the queue's
 * virtual time (it banks no credit while away). Pure: no clock, no I/O.
 *
 * Rules a reader must not break:
 * - work conserving: `shift()` returns an item whenever one waits, whatever the tenants' weights or tags;
 * - one tenant's items come out in the order they were pushed (the queue never reorders within a tenant);
 * - no starvation: every waiting head's tag is finite and virtual time only grows, so each item is taken after at
 *   most (its position in its tenant's queue + the number of tenants) × (largest weight ÷ smallest weight) others.
 */
import type { TenantWeightOf } from './weights.js';

interface Flow<T> {
  items: T[];
  /** Start tag of the head item (meaningful while `items` is not empty). */
  start: number;
  /** Finish tag of the last item taken: where the next item's start tag begins. */
  finish: number;
}

export class FairQueue<T> {
  private readonly flows = new Map<string, Flow<T>>();
  /** Virtual time: the start tag of the item taken last. */
  private virtualTime = 0;
  private count = 0;

  constructor(private readonly weightOf: TenantWeightOf) {}

  /** Items waiting, over every tenant. */
  get size(): number {
    return this.count;
  }

  /** Items of `tenant` waiting. */
  waiting(tenant: string): number {
    return this.flows.get(tenant)?.items.length ?? 0;
  }

  /** Queues `item` behind `tenant`'s other items. */
  push(tenant: string, item: T): void {
    let flow = this.flows.get(tenant);
    if (!flow) {
      flow = { items: [], start: 0, finish: 0 };
      this.flows.set(tenant, flow);
    }
    // A tenant that had nothing waiting starts now, or where its last share ended if that is later.
    if (flow.items.length === 0) flow.start = Math.max(this.virtualTime, flow.finish);
    flow.items.push(item);
    this.count += 1;
  }

  /** Takes the next item by the tenants' shares, or undefined when none waits. */
  shift(): { tenant: string; item: T } | undefined {
    let best: [string, Flow<T>] | undefined;
    for (const entry of this.flows)
      if (entry[1].items.length > 0 && (!best || entry[1].start < best[1].start)) best = entry;
    if (!best) return undefined;
    const [tenant, flow] = best;
    const item = flow.items.shift()!;
    this.count -= 1;
    this.virtualTime = flow.start;
    flow.finish = flow.start + 1 / this.weightOf(tenant);
    flow.start = flow.finish;
    this.forgetIdle();
    return { tenant, item };
  }

  /** Removes `item` from `tenant`'s queue (its wait was given up); true when it was there. */
  remove(tenant: string, item: T): boolean {
    const flow = this.flows.get(tenant);
    const at = flow ? flow.items.indexOf(item) : -1;
    if (!flow || at < 0) return false;
    flow.items.splice(at, 1);
    this.count -= 1;
    return true;
  }

  /**
   * Tenants with nothing waiting whose finish tag virtual time has passed can be forgotten: they would start at the
   * virtual time anyway. This keeps the map to the tenants that are waiting or were served a moment ago.
   */
  private forgetIdle(): void {
    for (const [tenant, flow] of this.flows)
      if (flow.items.length === 0 && flow.finish <= this.virtualTime) this.flows.delete(tenant);
  }
}
