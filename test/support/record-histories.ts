/**
 * Records workflow histories from real runs on the local stack into test/histories/, for the replay tests.
 * Run after a deliberate change to the workflow's behaviour (and keep the old files: they guard running
 * workflows):  npx tsx test/support/record-histories.ts
 */
import { writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { temporalCliPath } from '../../tools/stack/index.js';
import { orderEventSignal, orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { parseRecord } from '../../src/events/envelope.js';
import { events, scenario, waitFor } from './harness.js';

const run = promisify(execFile);
const s = await scenario('history', { ORDER_LINGER_SECONDS: '2', CANCEL_GRACE_SECONDS: '600' });
const app = await s.startInstance();
const tenant = `history-${s.suffix}`.slice(0, 64);
const placedOnce = events.placed(tenant, 'o-shipped', { eventId: `h-placed-1-${s.suffix}`, orderVersion: 2 });
/** Each story: the order, and the waves of events sent to it (via Kafka, or straight to the workflow for a duplicate the bridge would hide). */
const stories: Record<string, { order: string; waves: { value: object; direct?: boolean }[][] }> = {
  'shipped-with-duplicate-stale-and-late-cancel': {
    order: 'o-shipped',
    waves: [
      [{ value: placedOnce }],
      [{ value: placedOnce, direct: true }, { value: events.cancelled(tenant, 'o-shipped', { eventId: `h-stale-1-${s.suffix}`, orderVersion: 1 }) }],
      [{ value: events.cancelled(tenant, 'o-shipped', { eventId: `h-cancel-late-${s.suffix}`, orderVersion: 3 }) }],
    ],
  },
  'cancel-before-placement': {
    order: 'o-tombstone',
    waves: [
      [{ value: events.cancelled(tenant, 'o-tombstone', { eventId: `h-cancel-first-${s.suffix}`, orderVersion: 2 }) }],
      [{ value: events.placed(tenant, 'o-tombstone', { eventId: `h-placed-late-${s.suffix}`, orderVersion: 1 }) }],
    ],
  },
};

for (const [name, { order, waves }] of Object.entries(stories)) {
  const handle = app.client.workflow.getHandle(orderWorkflowId(tenant, order));
  let sent = 0;
  for (const wave of waves) {
    for (const { value, direct } of wave) {
      if (direct) await handle.signal(orderEventSignal, parsed(value));
      else await s.produce([{ value }]);
      sent += 1;
    }
    await waitFor(`${name}: wave decided`, async () => {
      const v = await handle.query(orderStatusQuery);
      return v.appliedEvents + v.duplicatesSuppressed + v.staleIgnored >= sent && v.status !== 'pending';
    });
  }
  await waitFor(`${name}: run closed`, async () => (await handle.describe()).status.name === 'COMPLETED');
  const file = `test/histories/${name}.json`;
  // The same export a person makes to debug a workflow: temporal workflow show --output json.
  const { stdout } = await run(await temporalCliPath(), ['workflow', 'show', '--address', s.config.TEMPORAL_ADDRESS, '--namespace', s.config.TEMPORAL_NAMESPACE, '-w', handle.workflowId, '--output', 'json']);
  await writeFile(file, stdout);
  console.log(`wrote ${file}`);
}
await s.close();

function parsed(value: object) {
  const r = parseRecord({ value: Buffer.from(JSON.stringify(value)) });
  if (r.kind !== 'order-event') throw new Error('story events must be order events');
  return r.event;
}
process.exit(0);
