import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Health } from '../../../src/base/health.js';
import { createMetrics } from '../../../src/base/metrics.js';
import { serveMetrics } from '../../../src/base/observability.js';

describe('readiness checks', () => {
  it('is not ready while starting, with what start-up waits for and its last error', async () => {
    const health = new Health({ cacheMs: 0 });
    const attempt = health.attempting('PostgreSQL', () =>
      Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')),
    );
    await expect(attempt()).rejects.toThrow('ECONNREFUSED');
    expect(await health.readiness()).toEqual({
      ready: false,
      checks: { startup: { ok: false, reason: 'waiting for PostgreSQL: connect ECONNREFUSED 127.0.0.1:5432' } },
    });
    health.set('postgres', () => ({ ok: true }));
    health.started();
    expect(await health.readiness()).toEqual({ ready: true, checks: { postgres: { ok: true } } });
  });

  it('reports each failing check with its reason; a thrown error or a hung check fails with a message', async () => {
    const health = new Health({ cacheMs: 0, timeoutMs: 50 });
    health.started();
    health.set('kafka', () => ({ ok: false, reason: 'not joined the group yet' }));
    health.set('postgres', () => Promise.reject(new Error('password authentication failed')));
    health.set('temporal', () => new Promise(() => undefined));
    health.set('worker', () => ({ ok: true }));
    expect(await health.readiness()).toEqual({
      ready: false,
      checks: {
        kafka: { ok: false, reason: 'not joined the group yet' },
        postgres: { ok: false, reason: 'password authentication failed' },
        temporal: { ok: false, reason: 'the temporal check did not answer within 50 ms' },
        worker: { ok: true },
      },
    });
  });

  it('evaluates at most once per cache period and never twice at once', async () => {
    const health = new Health({ cacheMs: 60_000 });
    health.started();
    let calls = 0;
    health.set('db', async () => {
      calls += 1;
      await new Promise((r) => setTimeout(r, 10));
      return { ok: true };
    });
    await Promise.all(Array.from({ length: 20 }, () => health.readiness()));
    await health.readiness();
    expect(calls).toBe(1);
  });

  it('is neither ready nor live once stopping for good, keeping the first reason', async () => {
    const health = new Health({ cacheMs: 60_000 });
    health.started();
    health.set('db', () => ({ ok: true }));
    expect((await health.readiness()).ready).toBe(true);
    expect(health.liveness()).toEqual({ live: true });
    health.stopping('Temporal worker stopped unexpectedly');
    health.stopping('stopping');
    expect(health.liveness()).toEqual({ live: false, reason: 'Temporal worker stopped unexpectedly' });
    expect(await health.readiness()).toMatchObject({
      ready: false,
      checks: { process: { ok: false, reason: 'stopping: Temporal worker stopped unexpectedly' } },
    });
  });
});

describe('the /metrics, /livez and /readyz server', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => close?.());

  it('answers 200/503 with a JSON body, beside /metrics', async () => {
    const health = new Health({ cacheMs: 0 });
    const metrics = createMetrics();
    const server = await serveMetrics(metrics.registry, 0, '127.0.0.1', health);
    close = () => new Promise((r) => server.close(() => r()));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const get = async (path: string) => {
      const res = await fetch(base + path);
      return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
    };
    expect(await get('/livez')).toMatchObject({ status: 200, type: 'application/json' });
    const starting = await get('/readyz');
    expect(starting.status).toBe(503);
    expect(JSON.parse(starting.body)).toEqual({ ready: false, checks: { startup: { ok: false, reason: 'starting' } } });
    let kafka = { ok: false, reason: 'consumer crashed' };
    health.set('kafka', () => kafka);
    health.started();
    expect(JSON.parse((await get('/readyz')).body)).toEqual({ ready: false, checks: { kafka } });
    kafka = { ok: true } as typeof kafka;
    expect(await get('/readyz?verbose')).toMatchObject({ status: 200 });
    expect((await get('/metrics')).body).toContain('fulfilment_events_processed_total');
    expect((await get('/nope')).status).toBe(404);
    health.stopping('SIGTERM received');
    expect(await get('/livez')).toMatchObject({ status: 503, body: '{"live":false,"reason":"SIGTERM received"}\n' });
  });
});
