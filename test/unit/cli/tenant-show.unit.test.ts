/**
 * `tenant show`'s pure parts: the share (share.ts) over the tenants with work, its own weight counted whether or not it
 * has work, and the text it prints for a tenant alone, one without work, one among more tenants than were looked for.
 */
import { describe, expect, it } from 'vitest';
import { tenantShare } from '../../../src/cli/tenant/share.js';
import type { TenantShowResult } from '../../../src/cli/tenant/show-result.js';
import { describeTenant } from '../../../src/cli/tenant/show-text.js';
import { loadConfig } from '../../../src/base/config.js';
import { tenantWeights } from '../../../src/base/tenants/weights.js';

const weightOf = tenantWeights(loadConfig({ TENANT_WEIGHTS: 'acme=3,initech=5' }));

const result = (over: Partial<TenantShowResult>): TenantShowResult => ({
  tenantId: 'acme',
  namespace: 'default',
  taskQueue: 'order-fulfilment',
  weight: 3,
  weightFrom: 'TENANT_WEIGHTS',
  share: null,
  openRuns: null,
  backlog: null,
  pause: null,
  pauseKnown: false,
  problems: [],
  ...over,
});

describe('tenant show', () => {
  it("divides a tenant's weight by its own and the other tenants' with work", () => {
    expect(tenantShare('acme', ['globex', 'acme'], weightOf)).toMatchObject({
      weight: 3,
      share: 0.75,
      totalWeight: 4,
      competing: [
        { tenantId: 'acme', weight: 3 },
        { tenantId: 'globex', weight: 1 },
      ],
    });
    // Alone, it gets all of it whatever its weight; without work, what it gets the moment it has some.
    expect(tenantShare('globex', ['globex'], weightOf).share).toBe(1);
    expect(tenantShare('initech', ['acme', 'globex'], weightOf)).toMatchObject({ share: 5 / 9, totalWeight: 9 });
  });

  it('says a share without work is the one it gets once it has some, and "at most" past the tenants looked for', () => {
    const share = { ...tenantShare('initech', ['acme', 'globex'], weightOf), hasWork: false, moreTenants: false };
    const idle = describeTenant(result({ tenantId: 'initech', weight: 5, share, openRuns: 0 }));
    expect(idle.find((l) => l.startsWith('share'))).toContain('none now; 55.6% (5 of 9) once it has work');
    expect(idle.at(-1)).toBe('other tenants with open runs (weight): acme (3), globex (1)');

    const many = { ...tenantShare('acme', ['b', 'c'], weightOf), hasWork: true, moreTenants: true };
    const crowded = describeTenant(result({ share: many, openRuns: 2 }));
    expect(crowded.find((l) => l.startsWith('share'))).toContain('60% at most (3 of 5 or more)');
    expect(crowded.at(-1)).toBe('other tenants with open runs (weight): b (1), c (1), and more');
    const twelve = Array.from({ length: 12 }, (_, i) => `t${i}`);
    const named = describeTenant(
      result({ share: { ...tenantShare('acme', twelve, weightOf), hasWork: true, moreTenants: false } }),
    );
    expect(named.at(-1)).toMatch(/: t0 \(1\), .*, t9 \(1\), and 2 more$/);
    const past = describeTenant(
      result({ share: { ...tenantShare('acme', twelve, weightOf), hasWork: true, moreTenants: true } }),
    );
    expect(past.at(-1)).toMatch(/, t9 \(1\), and 2\+ more$/);
  });

  it('shows what could not be read as unknown', () => {
    const lines = describeTenant(result({}));
    expect(lines.find((l) => l.startsWith('share'))).toMatch(/^share +\? +Temporal could not be read$/);
    expect(lines.find((l) => l.startsWith('backlog'))).toMatch(/^backlog +\? +PostgreSQL could not be read$/);
    expect(lines.find((l) => l.startsWith('shipping'))).toMatch(/^shipping +\? +shipping_pauses in force$/);
  });
});
