/**
 * Bounded tenant labels for metrics, by activity (src/base/tenants/tenant-label.ts names tenants in the order first
 * met): the `named` busiest tenants are labelled by their id, every other tenant is `other`, so a metric by tenant has
 * at most `named + 1` series however many tenants there are. Busiest is by the activity reported at each update (e.g.
 * records waiting plus in flight), decayed by half per update, so a tenant that goes quiet gives its name up to a
 * busier one within a few updates rather than at once.
 *
 * Rules a reader must not break:
 * - at most `named` tenants carry their own label at any time, and the labels change only at `update()`;
 * - a tenant's id is a label value only while it is named; aggregate values with `byLabel` so that every named
 *   tenant's series and `other` are set together (a gauge reset and refilled in one tick, never half-filled);
 * - what it remembers is bounded by the tenants active in the last few updates (scores under 0.01 are forgotten).
 */
import { OTHER_TENANTS } from './tenant-label.js';

/** Tenants named in per-tenant metrics by default (BRIDGE_TENANT_METRIC_LABELS). */
export const DEFAULT_TENANT_LABELS = 20;

const DECAY = 0.5;
const FORGET_BELOW = 0.01;

export class TenantLabels {
  private readonly scores = new Map<string, number>();
  private named = new Set<string>();

  constructor(private readonly max: number) {}

  /** The label of `tenant` now: its id while it is among the busiest, `other` otherwise. */
  label(tenant: string): string {
    return this.named.has(tenant) ? tenant : OTHER_TENANTS;
  }

  /** The tenants labelled by their id now. */
  get labelled(): ReadonlySet<string> {
    return this.named;
  }

  /** Adds this update's activity by tenant and chooses the busiest `max` (ties broken by id, for stable labels). */
  update(activity: ReadonlyMap<string, number>): void {
    for (const [tenant, score] of this.scores) {
      const decayed = score * DECAY;
      if (decayed < FORGET_BELOW && !activity.has(tenant)) this.scores.delete(tenant);
      else this.scores.set(tenant, decayed);
    }
    for (const [tenant, amount] of activity)
      if (amount > 0) this.scores.set(tenant, (this.scores.get(tenant) ?? 0) + amount);
    const ranked = [...this.scores].sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0));
    this.named = new Set(ranked.slice(0, Math.max(0, this.max)).map(([tenant]) => tenant));
  }

  /**
   * Values by label: each named tenant's own (0 when it has none), and `other` combining the rest (0 when none) —
   * `max` for ages, `sum` for counts.
   */
  byLabel(values: ReadonlyMap<string, number>, combine: 'max' | 'sum'): Map<string, number> {
    const out = new Map<string, number>([[OTHER_TENANTS, 0]]);
    for (const tenant of this.named) out.set(tenant, 0);
    for (const [tenant, value] of values) {
      const label = this.label(tenant);
      const before = out.get(label)!;
      out.set(label, combine === 'max' ? Math.max(before, value) : before + value);
    }
    return out;
  }
}
