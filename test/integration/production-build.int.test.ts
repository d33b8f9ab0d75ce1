/**
 * What production runs is what `npm run build` emitted (npm test builds it first): dist/src/service.js, plain
 * JavaScript with the prebuilt workflow bundle, ships an order on the real stack and stops on SIGTERM; a bridge-only
 * process of it loads only what the bridge uses — no worker SDK, no activities, no tracing SDK (pg, for the late path
 * only) — which a preload records (every module resolved, by ESM import or CommonJS require). Every attempt at an
 * order's events is logged with the event's id, type, version, attempt and correlation id.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient } from '../../src/domain/temporal.js';
import { orderWorkflowId } from '../../workflows/api.js';
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
    s = await scenario('built');
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is there: npm run build emitted the service and the prebuilt workflow bundles', () => {
    expect(existsSync(BUILT_SERVICE)).toBe(true);
    for (const bundle of ['bundle.js', 'bundle-traced.js'])
      expect(existsSync(join(BUILT_SERVICE, '..', '..', 'workflows', bundle)), bundle).toBe(true);
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
    // The signal stops the roles in order, through the service's own handlers alone: the SDK's runtime stopping the
    // worker on the same signal would log it as stopped unexpectedly.
    expect(p.lines.filter((l) => Number(l.level) >= 50).map((l) => l.msg)).toEqual([]);
  });

  it("logs every attempt at one order's events with its event id, type, version, attempt and correlation id", async () => {
    const p = startServiceProcess({ ...s.env, METRICS_PORT: '0' }, { built: true });
    const tenant = s.tenant();
    const placed = events.placed(tenant, 'logged', { correlationId: 'corr-logged-1' });
    const cancelled = events.cancelled(tenant, 'logged', { orderVersion: 2, correlationId: 'corr-logged-2' });
    try {
      await p.said('service ready');
      await s.produce([{ key: 'logged', value: placed }]);
      await waitFor('the order to ship', async () => (await s.row(tenant, 'logged'))?.status === 'shipped');
      // The row is shipped inside the run's one task; the run closes when that task completes, a moment later (longer
      // on a loaded machine). After it closed, the bridge's late path records the cancellation (and logs it).
      const client = await connectClient(s.config);
      try {
        await waitFor(
          'its run to close',
          async () =>
            (await client.workflow.getHandle(orderWorkflowId(tenant, 'logged')).describe()).status.name !== 'RUNNING',
        );
      } finally {
        await client.connection.close();
      }
      await s.produce([{ key: 'logged', value: cancelled }]);
      await waitFor('the late cancellation recorded', async () => (await s.row(tenant, 'logged'))?.cancel_refused_at);
      await waitFor('its outcome logged', () =>
        p.lines.some((l) => l.eventId === cancelled.eventId && l.msg === 'order event decided'),
      );
    } finally {
      expect(await p.stop()).toBe(0);
    }
    const ofEvent = (e: { eventId: string }) => p.lines.filter((l) => l.eventId === e.eventId);
    for (const e of [placed, cancelled] as {
      eventId: string;
      type: string;
      orderVersion: number;
      correlationId: string;
    }[]) {
      const attempts = ofEvent(e).filter(
        (l) => l.msg === 'delivering event to order workflow' || l.msg === 'recording order event',
      );
      expect(attempts.length, `attempt lines of ${e.eventId}`).toBeGreaterThan(0);
      for (const l of attempts)
        expect(l, String(l.msg)).toMatchObject({
          eventId: e.eventId,
          type: e.type,
          orderVersion: e.orderVersion,
          attempt: expect.any(Number),
          correlationId: e.correlationId,
          tenantId: tenant,
          orderId: 'logged',
        });
      // And its outcome, as the store decided it: applied first (a record retried after a quick attempt that ran out of
      // time — a loaded machine — finds it claimed: a duplicate, logged as such).
      const decided = ofEvent(e).filter((l) => l.msg === 'order event decided');
      expect(
        decided.map((l) => l.outcome),
        String(e.eventId),
      ).toEqual(['applied', ...decided.slice(1).map(() => 'duplicate')]);
      for (const l of decided)
        expect(l).toMatchObject({
          eventId: e.eventId,
          type: e.type,
          orderVersion: e.orderVersion,
          correlationId: e.correlationId,
        });
    }
    // The placement was recorded inside its run (the activity's attempt line); the cancellation by the bridge's late path.
    expect(ofEvent(placed).map((l) => l.msg)).toContain('recording order event');
    expect(ofEvent(cancelled).map((l) => l.msg)).toContain("order's run had closed; event recorded through the store");
  });

  it('a bridge-only process loads neither the worker SDK, the activities nor the tracing SDK (pg only for its late path)', async () => {
    const p = startServiceProcess(
      { ...s.env, METRICS_PORT: '0', FULFILMENT_ROLES: 'bridge', RESOLVED_LOG: log },
      { built: true, nodeArgs: ['--import', pathToFileURL(join(dir, 'preload.mjs')).href] },
    );
    try {
      await p.said('service ready');
    } finally {
      expect(await p.stop()).toBe(0);
    }
    const resolved = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    // The control: the recorder saw what the bridge does load.
    expect(resolved.some((f) => /node_modules[\\/]kafkajs[\\/]/.test(f))).toBe(true);
    expect(resolved.some((f) => /node_modules[\\/]@temporalio[\\/]client[\\/]/.test(f))).toBe(true);
    const unwanted = resolved.filter((f) =>
      /node_modules[\\/](@temporalio[\\/](worker|activity|core-bridge)|@opentelemetry[\\/]sdk-trace-base)[\\/]|dist[\\/]activities[\\/]|dist[\\/]src[\\/]worker[\\/]/.test(
        f,
      ),
    );
    expect([...new Set(unwanted)]).toEqual([]);
  });
});
