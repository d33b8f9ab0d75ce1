/** The step a starting worker takes for its version (src/roles/worker/version-rollout.ts), for each rollout and routing. */
import { describe, expect, it } from 'vitest';
import { rolloutStep } from '../../../../src/roles/worker/version-rollout.js';
import type { DeploymentView, VersionStatus } from '../../../../src/adapters/deployment/routing.js';

/** A deployment whose current version is `a`, beside version `b` in `bStatus` (none: `b` alone, nothing current). */
function withB(bStatus: VersionStatus, routing: Partial<DeploymentView> = { current: 'a' }): DeploymentView {
  const a = routing.current === 'a' ? [{ buildId: 'a', status: 'current' as const }] : [];
  return {
    name: 'order-fulfilment',
    versions: [...a, { buildId: 'b', status: bStatus }],
    conflictToken: new Uint8Array(),
    ...routing,
  };
}

describe('rolloutStep', () => {
  it.each([
    // rollout, b's status, routing, step for b
    ['all-at-once', 'inactive', {}, 'make current'], // the deployment's first version
    ['manual', 'inactive', {}, 'make current'],
    ['all-at-once', 'inactive', { current: 'a' }, 'make current'], // a new build takes every new order
    // ... but the share of a ramp an operator set on another version (Temporal keeps the ramp)
    ['all-at-once', 'inactive', { current: 'a', ramping: { buildId: 'c', percent: 10 } }, 'make current'],
    ['all-at-once', 'draining', { current: 'a' }, 'leave'], // rolled back from: a restart does not undo the rollback
    ['all-at-once', 'drained', { current: 'a' }, 'leave'],
    ['all-at-once', 'ramping', { current: 'a', ramping: { buildId: 'b', percent: 10 } }, 'leave'], // the operator's ramp
    ['all-at-once', 'current', { current: 'b' }, 'leave'], // a restart of the current version
    ['manual', 'inactive', { current: 'a' }, 'leave'], // waits for the operator's ramp or promotion
    ['manual', 'ramping', { current: 'a', ramping: { buildId: 'b', percent: 10 } }, 'leave'],
  ] as const)('%s, version b %s, routing %j: %s', (rollout, status, routing, step) => {
    expect(rolloutStep(withB(status, routing), 'b', rollout)).toBe(step);
  });

  it('all-at-once makes current only a version that never took new runs: never one an order ran on before', () => {
    // What docs/changing-the-workflow.md says: the step is taken for an `inactive` version, whatever else the
    // deployment holds; every version that was current or ramping once (so may hold orders) is left as routed.
    const statuses: VersionStatus[] = ['inactive', 'current', 'ramping', 'draining', 'drained', 'unknown'];
    const madeCurrent = statuses.filter(
      (st) => rolloutStep(withB(st, { current: 'a' }), 'b', 'all-at-once') !== 'leave',
    );
    expect(madeCurrent).toEqual(['inactive']);
  });

  it('refuses to decide for a version Temporal has not registered yet (the worker has not polled)', () => {
    expect(() => rolloutStep(withB('inactive'), 'c', 'manual')).toThrow(/not registered yet/);
  });
});
