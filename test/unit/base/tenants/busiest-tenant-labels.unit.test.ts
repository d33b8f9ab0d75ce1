/** Bounded tenant labels (src/base/tenants/busiest-tenant-labels.ts): the busiest by name, the rest `other`, never more. */
import { describe, expect, it } from 'vitest';
import { TenantLabels } from '../../../../src/base/tenants/busiest-tenant-labels.js';
import { OTHER_TENANTS } from '../../../../src/base/tenants/tenant-label.js';

describe('tenant labels', () => {
  it('names the N busiest tenants and labels every other one `other`', () => {
    const labels = new TenantLabels(2);
    labels.update(
      new Map([
        ['a', 10],
        ['b', 5],
        ['c', 1],
        ['d', 7],
      ]),
    );
    expect([...labels.labelled].sort()).toEqual(['a', 'd']);
    expect(['a', 'b', 'c', 'd'].map((t) => labels.label(t))).toEqual(['a', OTHER_TENANTS, OTHER_TENANTS, 'd']);
  });

  it('never names more than N, however many tenants there are', () => {
    const labels = new TenantLabels(20);
    for (let round = 0; round < 10; round += 1)
      labels.update(new Map(Array.from({ length: 1000 }, (_, i) => [`t${round}-${i}`, i + 1] as [string, number])));
    expect(labels.labelled.size).toBe(20);
  });

  it('a tenant that went quiet gives its name up to a busier one within a few updates', () => {
    const labels = new TenantLabels(1);
    labels.update(new Map([['old', 100]]));
    expect(labels.label('old')).toBe('old');
    let updates = 0;
    while (labels.label('new') !== 'new') {
      labels.update(new Map([['new', 10]]));
      updates += 1;
    }
    expect(updates).toBeLessThanOrEqual(5);
    expect(labels.label('old')).toBe(OTHER_TENANTS);
  });

  it('combines values by label: ages by max, counts by sum; every named tenant and `other` present', () => {
    const labels = new TenantLabels(2);
    labels.update(
      new Map([
        ['a', 3],
        ['b', 2],
        ['c', 1],
        ['d', 1],
      ]),
    );
    const values = new Map([
      ['a', 5],
      ['c', 7],
      ['d', 4],
    ]);
    expect(Object.fromEntries(labels.byLabel(values, 'max'))).toEqual({ a: 5, b: 0, [OTHER_TENANTS]: 7 });
    expect(Object.fromEntries(labels.byLabel(values, 'sum'))).toEqual({ a: 5, b: 0, [OTHER_TENANTS]: 11 });
  });

  it('forgets tenants that have been idle a while (what it keeps stays bounded)', () => {
    const labels = new TenantLabels(5);
    labels.update(new Map([['gone', 1]]));
    for (let i = 0; i < 10; i += 1) labels.update(new Map([['here', 1]]));
    expect(labels.label('gone')).toBe(OTHER_TENANTS);
    expect([...labels.labelled]).toEqual(['here']);
  });
});
