/** A tenant's weight: its share of capacity while tenants compete (src/base/config/tenant-settings.ts). */
import type { Config } from '../config.js';

export type TenantWeightOf = (tenantId: string) => number;

/** The weights configured: TENANT_WEIGHTS, TENANT_DEFAULT_WEIGHT for every tenant it does not name. */
export function tenantWeights(config: Pick<Config, 'TENANT_WEIGHTS' | 'TENANT_DEFAULT_WEIGHT'>): TenantWeightOf {
  return (tenantId) => config.TENANT_WEIGHTS?.get(tenantId) ?? config.TENANT_DEFAULT_WEIGHT;
}
