/** The rule a waiting order's move to another version follows (src/adapters/deployment/move-rule.ts): only forward. */
import { describe, expect, it } from 'vitest';
import type { DeploymentView } from '../../../../src/adapters/deployment/routing.js';
import { versionMove } from '../../../../src/adapters/deployment/move-rule.js';

const view = (over: Partial<DeploymentView> = {}): DeploymentView => ({
  name: 'orders',
  current: 'b',
  versions: [
    { buildId: 'a', status: 'draining', createdAt: new Date(1_000) },
    { buildId: 'b', status: 'current', createdAt: new Date(2_000) },
  ],
  conflictToken: new Uint8Array(),
  ...over,
});

describe('a waiting order’s move to another version', () => {
  it('goes forward to a newer current version', () => {
    expect(versionMove(view(), 'a')).toMatchObject({ move: true, settled: true });
  });

  it('never goes back: after a rollback the order stays on the newer version, for good', () => {
    expect(versionMove(view({ current: 'a' }), 'b')).toMatchObject({
      move: false,
      settled: true,
      why: expect.stringContaining('a is older than b'),
    });
  });

  it('waits while a version ramps, whichever it is', () => {
    expect(versionMove(view({ ramping: { buildId: 'b', percent: 50 }, current: 'a' }), 'a')).toMatchObject({
      move: false,
      settled: true,
      why: expect.stringContaining('ramping'),
    });
  });

  it('asks again when the routing is not known or does not show a change yet', () => {
    expect(versionMove(undefined, 'a')).toMatchObject({ move: false, settled: false });
    expect(versionMove(view(), undefined)).toMatchObject({ move: false, settled: false });
    expect(versionMove(view({ current: 'a' }), 'a')).toMatchObject({ move: false, settled: false });
    expect(versionMove(view({ current: 'c' }), 'a')).toMatchObject({ move: false, settled: false });
  });
});
