/**
 * deploy/prometheus/rules.yml with Prometheus's own tools: `promtool check rules` (syntax, PromQL, templates) and
 * `promtool test rules deploy/prometheus/rules.test.yml` (each alert fires on its situation and not beside it).
 * A copy of the tests with one expectation changed must fail, so a runner that passed anything would fail here; so must
 * the tests against a copy of the rules whose tenant alert no longer asks for another tenant to flow.
 * Needs no stack: tools/deploy/promtool.ts fetches promtool the first time (Debian's `prometheus` package where apt is
 * at hand, else a Go build; this file's setup does when it is missing). Its release is not pinned but stated: the run
 * prints it, and it must be at least PROMTOOL_OLDEST.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { olderThan, PROMTOOL_OLDEST, promtoolPath, promtoolVersion } from '../../tools/deploy/promtool.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const rulesDir = join(root, 'deploy', 'prometheus');
const scratch = mkdtempSync(join(tmpdir(), 'fulfilment-rules-'));
let promtool: string;

function run(args: string[], cwd = root): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(promtool, args, { cwd, maxBuffer: 1 << 22 }, (err, stdout, stderr) => {
      const code = err
        ? typeof (err as { code?: unknown }).code === 'number'
          ? (err as { code: number }).code
          : 1
        : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

describe('deploy/prometheus rules under promtool', () => {
  beforeAll(async () => {
    promtool = await promtoolPath();
  }, 1_800_000);
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it(`runs a promtool that states its release, ${PROMTOOL_OLDEST} or later`, () => {
    const version = promtoolVersion(promtool);
    process.stdout.write(`promtool ${version ?? '?'} (${promtool})\n`);
    expect(version, `${promtool} --version`).toMatch(/^\d+\.\d+\.\d+$/);
    expect(olderThan(version!, PROMTOOL_OLDEST)).toBe(false);
  });

  it('checks the rules: valid PromQL and templates', async () => {
    const r = await run(['check', 'rules', 'deploy/prometheus/rules.yml']);
    expect(r.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(r.code, r.output).toBe(0);
  });

  it('passes its unit tests', async () => {
    const r = await run(['test', 'rules', 'deploy/prometheus/rules.test.yml']);
    process.stdout.write(`$ promtool test rules deploy/prometheus/rules.test.yml\n${r.output}`);
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS');
  });

  it('fails a test whose expectation is wrong (the runner does compare)', async () => {
    copyFileSync(join(rulesDir, 'rules.yml'), join(scratch, 'rules.yml'));
    const tests = readFileSync(join(rulesDir, 'rules.test.yml'), 'utf8');
    const wrong = tests.replace('summary: "1 order(s) held as failed', 'summary: "2 order(s) held as failed');
    expect(wrong).not.toBe(tests);
    writeFileSync(join(scratch, 'rules.test.yml'), wrong);
    const r = await run(['test', 'rules', 'rules.test.yml'], scratch);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain('FulfilmentOrdersHeldFailed');
  });

  it("fails the tenant alert's tests when the rule no longer asks for another tenant to flow", async () => {
    const rules = readFileSync(join(rulesDir, 'rules.yml'), 'utf8');
    // `and on () count(<tenants flowing>) > 0` becomes `or`: a tenant behind fires whatever the others do.
    const broken = rules.replace(/(> 300\n\s+)and on \(\)(\n\s+count\()/, '$1or on ()$2');
    expect(broken).not.toBe(rules);
    writeFileSync(join(scratch, 'rules.yml'), broken);
    copyFileSync(join(rulesDir, 'rules.test.yml'), join(scratch, 'rules.test.yml'));
    const r = await run(['test', 'rules', 'rules.test.yml'], scratch);
    expect(r.code).not.toBe(0);
    expect(r.output).toMatch(/alertname: FulfilmentTenantStarved, time: 16m/);
  });
});
