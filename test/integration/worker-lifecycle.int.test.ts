/**
 * The worker's process lifecycle, run as a container runs it (src/service.ts in a process of its own), on the real
 * stack: a Temporal worker that stops for good makes its process exit 1 (a supervisor restarts it), and a SIGTERM
 * shutdown that cannot finish within SHUTDOWN_DEADLINE_MS exits 2 saying what was still stopping.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createOrderStarter } from '../../src/roles/bridge/order-starter.js';
import { connectClient } from '../../src/domain/temporal.js';
import { workflowSettings } from '../../src/domain/workflow-settings.js';
import { tenantWeights } from '../../src/base/tenants/weights.js';
import type { OrderEvent } from '../../src/vocabulary/order.js';
import { events, scenario, uniqueSuffix, waitFor } from '../support/harness.js';
import { freePort, probe } from '../support/processes.js';
import { startServiceProcess } from '../support/service-process.js';
import { temporalCliPath } from '../../tools/stack/index.js';

const run = promisify(execFile);

describe('a worker that stops for good', () => {
  it(
    'makes its process exit 1 with a fatal log line once its namespace is deleted under it',
    { timeout: 600_000 },
    async () => {
      const s = await scenario('worker-stops');
      // A namespace of its own, deleted below the running worker: the server then refuses every poll (NotFound),
      // the SDK gives the worker up (FAILED) — a real, permanent cause, nothing mocked.
      const namespace = uniqueSuffix('lifecycle').slice(0, 60);
      const cli = await temporalCliPath();
      const address = ['--address', s.config.TEMPORAL_ADDRESS];
      await run(cli, ['operator', 'namespace', 'create', '--namespace', namespace, '--retention', '24h', ...address]);
      const port = await freePort();
      const p = startServiceProcess({
        ...s.env,
        FULFILMENT_ROLES: 'worker',
        TEMPORAL_NAMESPACE: namespace,
        METRICS_PORT: String(port),
      });
      try {
        await p.said('service ready');
        const ready = await waitFor(
          '/readyz to be 200',
          async () => ((await probe(port, '/readyz'))?.status === 200 ? true : undefined),
          120_000,
          250,
        );
        expect(ready).toBe(true);
        const deletedAt = Date.now();
        await run(cli, ['operator', 'namespace', 'delete', '--namespace', namespace, '--yes', ...address]);
        // The dev server takes a minute or two to stop answering for a deleted namespace; generous on a loaded machine.
        const code = await Promise.race([
          p.exited,
          new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 480_000).unref()),
        ]);
        process.stdout.write(
          `\n[worker-stops] exit ${String(code)} ${Date.now() - deletedAt} ms after the namespace was deleted\n`,
        );
        expect(code).toBe(1);
        const fatal = p.lines.find(
          (l) => l.level === 60 && String(l.msg).includes('Temporal worker stopped unexpectedly'),
        );
        expect(fatal, 'the fatal log line').toBeDefined();
        expect(
          p.lines.some(
            (l) => l.level === 60 && l.msg === 'a role stopped for good; stopping the rest and exiting non-zero',
          ),
        ).toBe(true);
        expect(p.lines.at(-1), `the last line; its stderr: ${p.stderr()}`).toMatchObject({
          msg: 'stopped',
          exitCode: 1,
        });
      } finally {
        if (p.alive()) await p.stop();
        await s.close();
      }
    },
  );
});

describe('SIGTERM shutdown deadline', () => {
  it('exits 2 naming what was still stopping when a running activity outlasts SHUTDOWN_DEADLINE_MS', async () => {
    const s = await scenario('shutdown-deadline');
    const tenant = s.tenant();
    // The warehouse answers shipments only after 25 s (its client gives up at 30 s): the shipment activity is still
    // running at SIGTERM, and the worker's grace time lets it run for 2 minutes — far past a 3 s deadline.
    await fetch(`${s.warehouse.url}/admin/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ latencyMs: 25_000 }),
    });
    const p = startServiceProcess({
      ...s.env,
      FULFILMENT_ROLES: 'worker',
      SHUTDOWN_DEADLINE_MS: '3000',
      WORKER_SHUTDOWN_GRACE_MS: '120000',
    });
    const client = await connectClient(s.config);
    try {
      await p.said('service ready');
      await createOrderStarter(client, s.config.TEMPORAL_TASK_QUEUE, workflowSettings(s.config), s.late, {
        weightOf: tenantWeights(s.config),
      }).deliver([events.placed(tenant, 'slow') as OrderEvent]);
      // The first request is the quick attempt (a local activity, given up after 3 s); the second is the heartbeating
      // activity the workflow falls back to — the one that must still be running at SIGTERM. (Stopped during the quick
      // attempt, the worker would finish its shutdown within the deadline: the fallback is never polled.)
      await waitFor(
        "the shipment activity's request to reach the warehouse",
        async () => {
          const stats = (await (await fetch(`${s.warehouse.url}/admin/stats`)).json()) as { shipmentRequests: number };
          return stats.shipmentRequests > 1;
        },
        120_000,
        100,
      );
      const termAt = Date.now();
      const code = await p.stop();
      const tookMs = Date.now() - termAt;
      expect(code).toBe(2);
      // Well before the activity could have ended by itself (25 s), let alone the worker's 120 s grace.
      expect(tookMs).toBeLessThan(20_000);
      const line = p.lines.find((l) => String(l.msg).startsWith('shutdown deadline of 3000 ms passed'));
      expect(line, 'the deadline log line').toMatchObject({ level: 60, deadlineMs: 3000 });
      expect(line!.stillStopping).toEqual(expect.arrayContaining(['Temporal worker']));
    } finally {
      if (p.alive()) await p.stop();
      await client.connection.close();
      await s.close();
    }
  });
});
