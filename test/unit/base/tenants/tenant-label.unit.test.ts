/**
 * A tenant as a metric label (src/base/tenants/tenant-label.ts): at most `max` tenants named — those TENANT_WEIGHTS
 * names first, then the first met — the rest `other`, and a tenant's label never changes within the process.
 */
import { describe, expect, it } from 'vitest';
import { MAX_TENANT_LABELS, OTHER_TENANTS, tenantLabels } from '../../../../src/base/tenants/tenant-label.js';

describe('tenant labels', () => {
  it('names the weighted tenants first, then the first met, and folds the rest into other', () => {
    const label = tenantLabels({ max: 3, named: ['acme'] });
    expect(['t1', 't2', 't3', 'acme', 't1'].map(label)).toEqual(['t1', 't2', OTHER_TENANTS, 'acme', 't1']);
    expect(label('t3')).toBe(OTHER_TENANTS);
  });

  it(`bounds the label values at ${MAX_TENANT_LABELS} by default, however many tenants`, () => {
    const label = tenantLabels();
    const values = new Set(Array.from({ length: 500 }, (_, i) => label(`tenant-${i}`)));
    expect(values.size).toBe(MAX_TENANT_LABELS + 1);
    expect(values.has(OTHER_TENANTS)).toBe(true);
  });
});
