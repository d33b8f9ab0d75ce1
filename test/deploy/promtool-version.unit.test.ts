/**
 * promtool's release is stated, not pinned (tools/deploy/promtool.ts): read from what the binary reports, or for a Go
 * build from the module tag it was built from, and one older than PROMTOOL_OLDEST is refused. Fake binaries in a
 * temporary folder; nothing is fetched.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { olderThan, PROMTOOL_OLDEST, promtoolVersion, statedPromtool } from '../../tools/deploy/promtool.js';

const dir = mkdtempSync(join(tmpdir(), 'promtool-version-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A `promtool` in a folder of its own that prints `says` for --version (and the Go build's tag file, if given). */
function promtool(name: string, says: string, tag?: string): string {
  const bin = join(dir, name, 'promtool');
  mkdirSync(join(dir, name));
  writeFileSync(bin, `#!/bin/sh\necho '${says}'\n`);
  chmodSync(bin, 0o755);
  if (tag) writeFileSync(join(dir, name, 'promtool.version'), `${tag}\n`);
  return bin;
}

describe("promtool's release", () => {
  it("is what Debian's binary reports", () => {
    const bin = promtool('debian', 'promtool, version 2.42.0+ds (branch: debian/sid, revision: 2.42.0+ds-5+deb12u1)');
    expect(promtoolVersion(bin)).toBe('2.42.0');
    expect(statedPromtool(bin)).toBe(bin);
  });

  it('of a Go build that reports none, is the release of its module tag', () => {
    const bin = promtool('go', 'promtool, version  (branch: , revision: unknown)', 'v0.316.0');
    expect(promtoolVersion(bin)).toBe('3.16.0');
  });

  it(`is refused when older than ${PROMTOOL_OLDEST}`, () => {
    const bin = promtool('old', 'promtool, version 2.37.1 (branch: HEAD, revision: x)');
    expect(() => statedPromtool(bin)).toThrow(/promtool 2\.37\.1 .* is older than 2\.42\.0/);
    expect(olderThan('2.42.0', '2.42.0')).toBe(false);
    expect(olderThan('2.9.0', '2.42.0')).toBe(true);
    expect(olderThan('3.5.0', '2.42.0')).toBe(false);
  });
});
