/** Which version `fulfilment deployment rollback` makes current again (src/adapters/deployment/routing.ts, rollbackTarget). */
import { describe, expect, it } from 'vitest';
import { rollbackTarget, type VersionView } from '../../../../src/adapters/deployment/routing.js';

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute));
const version = (buildId: string, v: Partial<VersionView> = {}): VersionView => ({ buildId, status: 'draining', ...v });

describe('rollbackTarget', () => {
  it('is the version most recently current before the current one', () => {
    const versions = [
      version('a', { lastCurrentAt: at(0), lastDeactivatedAt: at(10) }),
      version('b', { lastCurrentAt: at(10), lastDeactivatedAt: at(20) }),
      version('c', { status: 'current', lastCurrentAt: at(20) }),
    ];
    expect(rollbackTarget({ current: 'c', versions })?.buildId).toBe('b');
  });

  it('is never a canary that only ramped, however recently its ramp ended', () => {
    const versions = [
      version('a', { lastCurrentAt: at(0), lastDeactivatedAt: at(10) }),
      version('b', { status: 'current', lastCurrentAt: at(10) }),
      version('canary', { firstActivatedAt: at(15), lastDeactivatedAt: at(30) }),
    ];
    expect(rollbackTarget({ current: 'b', versions })?.buildId).toBe('a');
    expect(rollbackTarget({ current: 'a', versions: [versions[0]!, versions[2]!] })).toBeUndefined();
  });

  it('takes a version current once and ramped again since by when it was current', () => {
    const versions = [
      version('a', { lastCurrentAt: at(0), lastDeactivatedAt: at(40) }), // current first, later ramped and aborted
      version('b', { lastCurrentAt: at(10), lastDeactivatedAt: at(20) }),
      version('c', { status: 'current', lastCurrentAt: at(20) }),
    ];
    expect(rollbackTarget({ current: 'c', versions })?.buildId).toBe('b');
  });
});
