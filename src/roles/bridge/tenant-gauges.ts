/**
 * The bridge's per-tenant gauges, set once a second: for each tenant, the age (by its Kafka timestamp) of its oldest
 * record read and not yet handed over — 0 when none — and its hand-overs in flight, under bounded labels (the busiest
 * tenants by name, by records waiting and in flight; the rest `other`: src/base/tenants/busiest-tenant-labels.ts).
 *
 * Rule a reader must not break: each gauge is reset and refilled in one synchronous step, so a scrape never sees a
 * tenant's old label beside its new one.
 */
import type { Metrics } from '../../base/metrics.js';
import type { TenantLabels } from '../../base/tenants/busiest-tenant-labels.js';
import type { FairSlots } from './fair-slots.js';
import type { RecordInPartition } from './record-pipeline.js';

/** The tenant a record belongs to, as far as the edge could tell (none for a malformed record). */
export function tenantOf(r: RecordInPartition): string | undefined {
  const c = r.classified;
  return c.kind === 'order-event' ? c.event.tenantId : c.kind === 'unknown-type' ? c.tenantId : undefined;
}

export function publishTenantGauges(
  now: number,
  partitions: Iterable<{ unfinished(): Iterable<RecordInPartition> }>,
  slots: Pick<FairSlots, 'inFlight'>,
  labels: TenantLabels,
  metrics: Pick<Metrics, 'tenantOldestWaiting' | 'tenantDeliveriesInFlight'>,
): void {
  const oldest = new Map<string, number>();
  const activity = new Map<string, number>(slots.inFlight());
  for (const run of partitions)
    for (const r of run.unfinished()) {
      const tenant = tenantOf(r);
      if (tenant === undefined) continue;
      const at = Number(r.record.timestamp);
      oldest.set(tenant, Math.min(oldest.get(tenant) ?? at, at));
      activity.set(tenant, (activity.get(tenant) ?? 0) + 1);
    }
  labels.update(activity);
  const ages = new Map([...oldest].map(([tenant, at]) => [tenant, Math.max(0, (now - at) / 1000)]));
  metrics.tenantOldestWaiting.reset();
  for (const [tenant, age] of labels.byLabel(ages, 'max')) metrics.tenantOldestWaiting.set({ tenant }, age);
  metrics.tenantDeliveriesInFlight.reset();
  for (const [tenant, n] of labels.byLabel(slots.inFlight(), 'sum'))
    metrics.tenantDeliveriesInFlight.set({ tenant }, n);
}
