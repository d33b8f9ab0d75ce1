/**
 * A tenant's share of the service's capacity as the operator's CLI can tell it: its weight over the sum of the weights
 * of the tenants that have work, itself counted whether or not it has any (so a tenant without work is shown the share
 * it gets the moment it has some). "Has work" is what the CLI can see across tenants: at least one open order run on
 * the service's task queue (open-runs.ts) — placed and not yet shipped, waiting for the warehouse or a pause, or
 * about to close. The bridge's queue of records not yet handed over is not visible here (its per-tenant age is in the
 * metrics), nor is a tenant whose orders are all held as failed (their runs have ended).
 */
import type { TenantWeightOf } from '../../base/tenants/weights.js';

export interface TenantShare {
  weight: number;
  /** weight / (weight + the other tenants' with work), 0–1. */
  share: number;
  /** The sum the share divides by. */
  totalWeight: number;
  /** The tenants with work and their weights, this tenant first (whether or not it has work). */
  competing: { tenantId: string; weight: number }[];
}

export function tenantShare(tenantId: string, withWork: readonly string[], weightOf: TenantWeightOf): TenantShare {
  const competing = [tenantId, ...withWork.filter((t) => t !== tenantId)].map((t) => ({
    tenantId: t,
    weight: weightOf(t),
  }));
  const totalWeight = competing.reduce((sum, c) => sum + c.weight, 0);
  const weight = weightOf(tenantId);
  return { weight, share: weight / totalWeight, totalWeight, competing };
}
