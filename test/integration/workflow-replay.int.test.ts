/**
 * `fulfilment workflow export` and `workflow replay` on the real stack: an order runs to completion through the
 * service; its history is exported (the same JSON `temporal workflow show --output json` writes) and replayed from
 * the server and from the file on the current workflow code (exit 0, what was replayed); replayed against a
 * deliberately changed copy of the code (test/workflow/replay-diverging-workflows.ts, through the CLI's development
 * option --workflows) it exits 1 with the SDK's nondeterminism message and the event where it diverged.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { runCli } from '../../src/cli/main.js';
import { memoryOutput } from '../../src/cli/output.js';
import { temporalCliPath } from '../../tools/stack/index.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';

const diverging = fileURLToPath(new URL('../workflow/replay-diverging-workflows.ts', import.meta.url));

describe('fulfilment workflow export and replay', () => {
  let s: Scenario;
  let app: App;
  let workflowId: string;
  let runId: string;
  let dir: string;

  beforeAll(async () => {
    // At the defaults: the order's run closes in the task that ships it.
    s = await scenario('wf-replay');
    app = await s.startInstance();
    const tenant = s.tenant('replay');
    workflowId = orderWorkflowId(tenant, 'o-1');
    dir = mkdtempSync(join(tmpdir(), 'workflow-replay-'));
    await s.produce([{ key: `${tenant}/o-1`, value: events.placed(tenant, 'o-1') }]);
    await waitFor('o-1 shipped', async () => (await s.row(tenant, 'o-1'))?.status === 'shipped', 120_000);
    const handle = app.client.workflow.getHandle(workflowId);
    await waitFor('its run to close', async () => (await handle.describe()).status.name === 'COMPLETED', 120_000, 250);
    runId = (await handle.describe()).runId;
  });

  afterAll(async () => {
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const cli = async (...argv: string[]) => {
    const out = memoryOutput();
    const code = await runCli(argv, { out, config: s.config });
    // The command's real output, for docs/cli.md.
    console.log(`$ npx fulfilment ${argv.join(' ')}\n${out.stdout}${out.stderr}(exit ${code})`);
    return { code, stdout: out.stdout, stderr: out.stderr };
  };

  it('exports the run as the JSON `temporal workflow show --output json` writes', async () => {
    const file = join(dir, 'o-1.json');
    const r = await cli('workflow', 'export', workflowId, '--out', file);
    expect(r.code).toBe(0);
    const exported = JSON.parse(readFileSync(file, 'utf8')) as { events: { eventId: string; eventType: string }[] };
    expect(r.stdout).toContain(`${exported.events.length} events of ${workflowId} run ${runId}`);
    expect(r.stdout).toContain(`replay it: fulfilment workflow replay ${workflowId} --file ${file}`);

    const { stdout } = await promisify(execFile)(
      await temporalCliPath(),
      [
        'workflow',
        'show',
        '--address',
        s.config.TEMPORAL_ADDRESS,
        '--namespace',
        s.config.TEMPORAL_NAMESPACE,
        '-w',
        workflowId,
        '--output',
        'json',
      ],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    const shown = JSON.parse(stdout) as typeof exported;
    expect(exported.events.length).toBeGreaterThanOrEqual(7);
    expect(exported.events.map((e) => [e.eventId, e.eventType])).toEqual(
      shown.events.map((e) => [e.eventId, e.eventType]),
    );
    expect(exported).toEqual(shown);

    // A file that exists is kept; --force replaces it.
    const again = await cli('workflow', 'export', workflowId, '--out', file);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`${file} exists already and is kept`);
    const forced = await cli('workflow', 'export', workflowId, '--run-id', runId, '--out', file, '--force');
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain('replacing the file that was there');
  });

  it('replays from the server and from the exported file on the current code: exit 0, what it replayed', async () => {
    const file = join(dir, 'o-1-replay.json');
    expect((await cli('workflow', 'export', workflowId, '--out', file)).code).toBe(0);
    const events = (JSON.parse(readFileSync(file, 'utf8')) as { events: unknown[] }).events.length;

    const fromServer = await cli('workflow', 'replay', workflowId);
    expect(fromServer.code).toBe(0);
    expect(fromServer.stderr).toBe('');
    expect(fromServer.stdout).toMatch(
      new RegExp(
        `^replayed ${workflowId} run ${runId}: ${events} events from server, deterministic on \\S*workflows/index\\.ts\\n$`,
      ),
    );

    const fromRun = await cli('workflow', 'replay', workflowId, '--run-id', runId, '--json');
    expect(fromRun.code).toBe(0);
    expect(JSON.parse(fromRun.stdout)).toMatchObject({
      workflowId,
      runId,
      events,
      source: 'server',
      running: false,
      deterministic: true,
      failure: null,
    });

    const fromFile = await cli('workflow', 'replay', workflowId, '--file', file);
    expect(fromFile.code).toBe(0);
    expect(fromFile.stdout).toContain(
      `replayed ${workflowId} run ${runId}: ${events} events from ${file}, deterministic`,
    );
  });

  it('replays a run that is still open: its history so far', async () => {
    const tenant = s.tenant('open');
    const open = orderWorkflowId(tenant, 'o-2');
    const faults = (body: object) =>
      fetch(`${s.warehouse.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) });
    // The shipment takes 20 s: the run is open, its activity in flight, while it is replayed.
    await faults({ latencyMs: 20_000 });
    try {
      await s.produce([{ key: `${tenant}/o-2`, value: events.placed(tenant, 'o-2') }]);
      const shipping = async () =>
        ((await app.client.workflow.getHandle(open).describe()).raw.pendingActivities ?? []).some(
          (a) => a.activityType?.name === 'shipAndRecordOrder',
        );
      await waitFor('the shipment in flight', shipping, 60_000, 100);
      const r = await cli('workflow', 'replay', open);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(
        new RegExp(
          `^replayed ${open} run [0-9a-f-]{36}: \\d+ events from server \\(the run is still open: its history so far\\), deterministic`,
        ),
      );
      expect(await shipping()).toBe(true);
    } finally {
      await faults({ latencyMs: 0 });
    }
  });

  it('against a deliberately changed workflow: exit 1, the SDK nondeterminism message and the event id', async () => {
    const file = join(dir, 'o-1-diverging.json');
    expect((await cli('workflow', 'export', workflowId, '--out', file)).code).toBe(0);
    for (const source of [[], ['--file', file]]) {
      const r = await cli('workflow', 'replay', workflowId, ...source, '--workflows', diverging);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      const m = /does not replay on \S+replay-diverging-workflows\.ts: nondeterminism at event (\d+) \((\w+)/.exec(
        r.stderr,
      );
      expect(m, r.stderr).not.toBeNull();
      expect(r.stderr).toContain(`error: ${workflowId} run ${runId}`);
      expect(r.stderr).toContain('SDK: Replay failed with a nondeterminism error');
      expect(r.stderr).toContain('[TMPRL1100] Nondeterminism error');
      // The event the summary names is the one the SDK's message names: an event by id, or the marker of what it names
      // without an id — a run of today's code (orderFulfilmentV2) diverges at its first local activity, whose result
      // the history keeps as a marker ("Missing associated machine for LocalActivity(1)").
      if (m![2] === 'MarkerRecorded') {
        expect(r.stderr).toContain('MarkerRecorded: marker core_local_activity');
        expect(r.stderr).toContain('Missing associated machine for LocalActivity(1)');
      } else {
        expect(r.stderr).toContain(`HistoryEvent(id: ${m![1]}, ${m![2]})`);
      }
    }
  });

  it('says what is wrong when there is nothing to replay', async () => {
    const missing = await cli('workflow', 'replay', `${workflowId}-never`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no workflow ${workflowId}-never in namespace ${s.config.TEMPORAL_NAMESPACE}`);

    const noFile = await cli('workflow', 'replay', '--file', join(dir, 'absent.json'));
    expect(noFile.code).toBe(1);
    expect(noFile.stderr).toContain('no such file');

    const junk = join(dir, 'junk.json');
    writeFileSync(junk, JSON.stringify({ hello: 'world' }));
    const notHistory = await cli('workflow', 'replay', '--file', junk);
    expect(notHistory.code).toBe(1);
    expect(notHistory.stderr).toContain(`--file ${junk} is not a workflow history`);
  });
});
