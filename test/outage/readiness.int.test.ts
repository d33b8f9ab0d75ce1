/**
 * /readyz of a running service (worker and bridge in one process, as src/service.ts runs them) through an outage of
 * each dependency of the local stack in turn: 200, then 503 naming the dependency that is down (with the reason)
 * while it is down, then 200 again once it is back — without a restart of the process. /livez stays 200 throughout:
 * an outage is not a reason to kill the process.
 *
 * Only the outage project runs this (one file at a time, after everything else): it stops shared services.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackDown, stackUp, type ServiceName } from '../../tools/stack/index.js';
import { scenario, waitFor, type Scenario } from '../support/harness.js';
import { freePort, probe, type Probe } from '../support/processes.js';
import { startServiceProcess, type ServiceProcess } from '../support/service-process.js';

/** The readiness check that names each stack service. */
const CHECK: Partial<Record<ServiceName, string>> = { kafka: 'kafka', temporal: 'temporal', postgres: 'postgres' };
/** How each reason names its dependency. */
const NAME: Partial<Record<ServiceName, string>> = { kafka: 'Kafka', temporal: 'Temporal at', postgres: 'PostgreSQL' };
/** Session timeout of the bridge here: its Kafka check fails once the broker has been silent this long. */
const SESSION_TIMEOUT_MS = 10_000;

let s: Scenario;
let p: ServiceProcess;
let port: number;
const livez: number[] = [];
let livezTimer: NodeJS.Timeout | undefined;

const ready = () => probe(port, '/readyz');

async function waitReady(what: string): Promise<Probe> {
  return waitFor(
    what,
    async () => {
      const r = await ready();
      return r?.status === 200 ? r : undefined;
    },
    240_000,
    250,
  );
}

beforeAll(async () => {
  s = await scenario('readiness');
  port = await freePort();
  p = startServiceProcess({
    ...s.env,
    METRICS_PORT: String(port),
    BRIDGE_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
  });
  await p.said('service ready');
  const first = await waitReady('the service to be ready');
  expect(first.body).toEqual({
    ready: true,
    checks: { temporal: { ok: true }, postgres: { ok: true }, worker: { ok: true }, kafka: { ok: true } },
  });
  // Liveness sampled all along, not only at the checkpoints.
  livezTimer = setInterval(() => void probe(port, '/livez').then((r) => r && livez.push(r.status)), 500);
});

afterAll(async () => {
  clearInterval(livezTimer);
  await stackUp({ services: ['kafka', 'temporal', 'postgres'], quiet: true });
  if (p?.alive()) expect(await p.stop()).toBe(0);
  await s?.close();
});

describe('/readyz through each dependency outage', () => {
  for (const service of ['kafka', 'temporal', 'postgres'] as const) {
    it(`is 503 naming ${service} while it is down, and 200 again once it is back`, { timeout: 600_000 }, async () => {
      const check = CHECK[service]!;
      await waitReady(`the service to be ready before ${service} stops`);
      let restored = false;
      const downAt = Date.now();
      await stackDown({ services: [service], quiet: true });
      try {
        const notReady = await waitFor(
          `/readyz to report ${service} down`,
          async () => {
            const r = await ready();
            return r?.status === 503 && r.body.checks?.[check]?.ok === false ? r : undefined;
          },
          240_000,
          250,
        );
        const notReadyMs = Date.now() - downAt;
        expect(notReady.body.ready).toBe(false);
        expect(notReady.body.checks![check]!.reason, 'the reason').toContain(NAME[service]);
        // The other dependencies are still reported as they are: only the one down (and what needs it) fails. On a
        // loaded machine one probe of another dependency can miss its 1.5 s deadline, so this waits for a reading in
        // which the stopped one is down and the others answer (each reading is one /readyz, as a probe sees it).
        const others = await waitFor(
          `/readyz to report the others ready while ${service} is down`,
          async () => {
            const r = await ready();
            if (r?.body.checks?.[check]?.ok !== false)
              throw new Error(`${service} is reported ${JSON.stringify(r?.body.checks?.[check])} while stopped`);
            const fine = (dep: 'postgres' | 'temporal') => service === dep || r.body.checks?.[dep]?.ok === true;
            return fine('postgres') && fine('temporal') ? r : undefined;
          },
          60_000,
          250,
        );
        if (service !== 'postgres') expect(others.body.checks!.postgres).toEqual({ ok: true });
        if (service !== 'temporal') expect(others.body.checks!.temporal).toEqual({ ok: true });
        await stackUp({ services: [service], quiet: true });
        restored = true;
        const upAt = Date.now();
        const back = await waitReady(`/readyz to be 200 after ${service} is back`);
        process.stdout.write(
          `\n[readiness:${service}] 503 ${notReadyMs} ms after the stop (${JSON.stringify(notReady.body.checks)}); 200 ${Date.now() - upAt} ms after it was back\n`,
        );
        expect(back.body.ready).toBe(true);
        expect(p.alive()).toBe(true);
      } finally {
        if (!restored) await stackUp({ services: [service], quiet: true });
      }
    });
  }

  it('kept /livez 200 throughout', () => {
    expect(livez.length).toBeGreaterThan(10);
    expect(livez.filter((c) => c !== 200)).toEqual([]);
  });
});
