import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../../src/base/config.js';
import { tenantWeights } from '../../../../src/base/tenants/weights.js';

describe('tenant weights', () => {
  it('gives every tenant the default weight unless TENANT_WEIGHTS names it', () => {
    const weightOf = tenantWeights(loadConfig({ TENANT_WEIGHTS: 'acme=2, globex=0.5', TENANT_DEFAULT_WEIGHT: '3' }));
    expect([weightOf('acme'), weightOf('globex'), weightOf('initech')]).toEqual([2, 0.5, 3]);
    expect(tenantWeights(loadConfig({}))('acme')).toBe(1);
  });

  it.each([
    ['acme', 'expected tenant=weight'],
    ['acme=0', 'a number from 0.001 to 1000'],
    ['acme=x', 'a number from 0.001 to 1000'],
    ['-bad=1', 'a tenant id'],
    ['acme=1=2', 'expected tenant=weight'],
    ['acme=1,acme=2', 'tenant "acme" is given twice'],
  ])('refuses TENANT_WEIGHTS=%s, saying what was expected', (value, expected) => {
    expect(() => loadConfig({ TENANT_WEIGHTS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ TENANT_WEIGHTS: value })).toThrow(/TENANT_WEIGHTS/);
    expect(() => loadConfig({ TENANT_WEIGHTS: value })).toThrow(expected);
  });

  it('refuses a default weight out of bounds', () => {
    expect(() => loadConfig({ TENANT_DEFAULT_WEIGHT: '5000' })).toThrow(/TENANT_DEFAULT_WEIGHT.*0\.001 to 1000/);
  });
});
