/**
 * What production runs is what `npm run build` emitted (npm test builds it first): dist/src/service.js, plain
 * JavaScript with the prebuilt workflow bundle, ships an order on the real stack and stops on SIGTERM; a bridge-only
 * process of it loads only what the bridge uses — no worker SDK, no pg, no activities, no tracing SDK — which a
 * preload records (every module resolved, by ESM import or CommonJS require).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { BUILT_SERVICE, startServiceProcess } from '../support/service-process.js';

const dir = mkdtempSync(join(tmpdir(), 'built-service-'));
const log = join(dir, 'resolved.log');
writeFileSync(
  join(dir, 'hooks.mjs'),
  `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(process.env.RESOLVED_LOG, r.url + '\\n');
  return r;
}
`,
);
writeFileSync(
  join(dir, 'preload.mjs'),
  `import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';
register(new URL('./hooks.mjs', import.meta.url));
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  const file = resolveFilename.call(this, request, ...rest);
  appendFileSync(process.env.RESOLVED_LOG, file + '\\n');
  return file;
};
`,
);

describe('the built service (dist/)', () => {
  let s: Scenario;
  beforeAll(async () => {
    s = await scenario('built', { ORDER_LINGER_SECONDS: '0' });
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is there: npm run build emitted the service and the prebuilt workflow bundles', () => {
    expect(existsSync(BUILT_SERVICE)).toBe(true);
    for (const bundle of ['bundle.js', 'bundle-traced.js']) expect(existsSync(join(BUILT_SERVICE, '..', '..', 'workflows', bundle)), bundle).toBe(true);
  });

  it('ships an order with both roles, from the prebuilt bundle, and stops on SIGTERM with exit 0', async () => {
    const p = startServiceProcess({ ...s.env, METRICS_PORT: '0' }, { built: true });
    try {
      await p.said('service ready');
      const tenant = s.tenant();
      await s.produce([{ key: `${tenant}/o-1`, value: events.placed(tenant, 'o-1') }]);
      await waitFor('the order to ship', async () => (await s.row(tenant, 'o-1'))?.status === 'shipped');
    } finally {
      expect(await p.stop()).toBe(0);
    }
  });

  it('a bridge-only process loads neither the worker SDK, pg, the activities nor the tracing SDK', async () => {
    const p = startServiceProcess({ ...s.env, METRICS_PORT: '0', FULFILMENT_ROLES: 'bridge', RESOLVED_LOG: log }, { built: true, nodeArgs: ['--import', pathToFileURL(join(dir, 'preload.mjs')).href] });
    try {
      await p.said('service ready');
    } finally {
      expect(await p.stop()).toBe(0);
    }
    const resolved = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    // The control: the recorder saw what the bridge does load.
    expect(resolved.some((f) => /node_modules[\\/]kafkajs[\\/]/.test(f))).toBe(true);
    expect(resolved.some((f) => /node_modules[\\/]@temporalio[\\/]client[\\/]/.test(f))).toBe(true);
    const unwanted = resolved.filter((f) => /node_modules[\\/](@temporalio[\\/](worker|activity|core-bridge)|pg|@opentelemetry[\\/]sdk-trace-base)[\\/]|dist[\\/]activities[\\/]|dist[\\/]src[\\/]worker[\\/]/.test(f));
    expect([...new Set(unwanted)]).toEqual([]);
  });
});
