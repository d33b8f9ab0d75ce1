/**
 * A tenant as a metric label, with bounded cardinality: at most `max` tenants are named — those TENANT_WEIGHTS names
 * first (the ones an operator chose to weigh), then the first others this process meets — and every other tenant is
 * `other`. Use it for any per-tenant metric label, so that a service with thousands of tenants keeps a bounded number
 * of series.
 *
 * Rules a reader must not break: a tenant's label never changes within a process (a gauge moved up under one label is
 * moved down under the same one); a tenant actually named `other` is counted with the others.
 */

/** Tenants named in per-tenant metric labels per process; the rest are `other`. */
export const MAX_TENANT_LABELS = 20;

/** The label every tenant past the named ones shares. */
export const OTHER_TENANTS = 'other';

export type TenantLabelOf = (tenantId: string) => string;

/** The label of each tenant: `named` (in order) and then the first seen, `max` in all; `other` for the rest. */
export function tenantLabels(opts: { max?: number; named?: Iterable<string> } = {}): TenantLabelOf {
  const max = opts.max ?? MAX_TENANT_LABELS;
  const labelled = new Set<string>();
  for (const tenant of opts.named ?? []) if (labelled.size < max) labelled.add(tenant);
  return (tenantId) => {
    if (!labelled.has(tenantId) && labelled.size < max) labelled.add(tenantId);
    return labelled.has(tenantId) ? tenantId : OTHER_TENANTS;
  };
}
