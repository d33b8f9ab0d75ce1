/** What `fulfilment tenant show` found for one tenant: printed as text (show-text.ts) or JSON (show.ts). */
import type { ShippingPause } from '../../adapters/store/shipment-waits.js';
import type { TenantBacklog } from '../../adapters/store/tenant-backlog.js';
import type { TenantShare } from './share.js';

export interface TenantShowResult {
  tenantId: string;
  namespace: string;
  taskQueue: string;
  weight: number;
  /** Where the weight comes from: the tenant is named in TENANT_WEIGHTS, or has TENANT_DEFAULT_WEIGHT. */
  weightFrom: 'TENANT_WEIGHTS' | 'TENANT_DEFAULT_WEIGHT';
  /** Null when Temporal could not be read. */
  share: (TenantShare & { hasWork: boolean; moreTenants: boolean }) | null;
  openRuns: number | null;
  backlog: TenantBacklog | null;
  /** The pause that holds (or, being resumed, held) its shipments: its own, else every tenant's; null when none. */
  pause: ShippingPause | null;
  /** False when the store could not be read. */
  pauseKnown: boolean;
  problems: string[];
}
