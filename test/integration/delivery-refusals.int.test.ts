/**
 * Nothing waits unseen (on the stack's Kafka and PostgreSQL, and a Temporal of the test's own whose dynamic config
 * puts a run at one of its per-workflow limits): a record that only its order's workflow refuses — Temporal answers
 * RESOURCE_EXHAUSTED, cause BUSY_WORKFLOW — is retried alone and dead-lettered with the reason past its budget while
 * its partition flows on, never parked; a Temporal down for everyone parks the partition, which the parked gauge
 * shows past its budget, and delivery resumes when it is back.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { workflowSettings } from '../../src/domain/workflow-settings.js';
import { ORDER_WORKFLOW_TYPE, orderWorkflowId } from '../../workflows/api.js';
import type { App } from '../../src/app.js';
import { dedicatedTemporal, type DedicatedTemporal } from '../support/dedicated-temporal.js';
import { caughtUp, counter, events, scenario, waitFor, type Scenario, type TopicWatch } from '../support/harness.js';

const RECORD_BUDGET_SECONDS = 20;
const PARKED_BUDGET_SECONDS = 3;

let temporal: DedicatedTemporal;
let s: Scenario;
let app: App;
let dlq: TopicWatch;

/**
 * A new run of a workflow id is refused for an hour after its previous run started (Temporal's default: 1 s). The same
 * interval also delays every continue-as-new by an hour, and Temporal's own worker-deployment workflows continue as
 * new on every change: so it is set only once the service's worker version is in place, for the test that needs it.
 */
const REUSE_REFUSED = {
  'history.workflowIdReuseMinimalInterval': '1h',
  'history.enableWorkflowIdReuseStartTimeValidation': true,
};

beforeAll(async () => {
  temporal = await dedicatedTemporal({});
  s = await scenario('refusals', {
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: 'default',
    BRIDGE_RECORD_RETRY_BUDGET_SECONDS: String(RECORD_BUDGET_SECONDS),
    BRIDGE_PARKED_BUDGET_SECONDS: String(PARKED_BUDGET_SECONDS),
  });
  app = await s.startInstance();
  dlq = await s.watchTopic(s.config.DLQ_TOPIC);
}, 300_000);

afterAll(async () => {
  await dlq?.close();
  await s?.close();
  await temporal?.stop();
});

const parked = (partition: number) =>
  counter(app, 'fulfilment_bridge_partition_parked_seconds', {
    group: s.config.CONSUMER_GROUP,
    topic: s.config.ORDERS_TOPIC,
    partition: String(partition),
  });

describe('delivery refusals on the stack', () => {
  it(
    'a record only its workflow refuses is retried alone, then dead-lettered with the reason; its partition flows on, never parked',
    { timeout: 300_000 },
    async () => {
      const tenant = s.tenant('busy');
      await temporal.setDynamicConfig(REUSE_REFUSED);
      onTestFinished(() => temporal.setDynamicConfig({}));
      const takeId = async (orderId: string) => {
        const run = await app.client.workflow.start(ORDER_WORKFLOW_TYPE, {
          workflowId: orderWorkflowId(tenant, orderId),
          taskQueue: `nobody-polls-${s.suffix}`,
          args: [{ tenantId: tenant, orderId, settings: workflowSettings(s.config) }],
        });
        await run.terminate('the id is taken for the test');
      };
      let probes = 0;
      await waitFor(
        'Temporal to refuse a new run of an id just used (the interval read from its dynamic config)',
        async () => {
          const id = `probe-${(probes += 1)}`;
          await takeId(id);
          return takeId(id).then(
            () => undefined,
            (e: { code?: number; cause?: { code?: number } }) =>
              (e.code ?? e.cause?.code) === 8 ? true : Promise.reject(e), // 8 = RESOURCE_EXHAUSTED
          );
        },
        120_000,
        1_000,
      );
      // Order a's workflow id was just used by a run that ended (terminated): Temporal refuses to start it again now.
      await takeId('a');
      const placedA = events.placed(tenant, 'a');
      await s.produce(
        [placedA, events.placed(tenant, 'b'), events.placed(tenant, 'c')].map((value) => ({
          partition: 0,
          key: `${tenant}/${value.orderId}`,
          value,
        })),
      );

      // b and c, behind a on the same partition, ship while a is retried alone.
      await waitFor(
        'b and c shipped',
        async () =>
          (await s.row(tenant, 'b'))?.status === 'shipped' && (await s.row(tenant, 'c'))?.status === 'shipped',
        120_000,
        100,
      );
      await waitFor(
        'a retried alone',
        async () => (await counter(app, 'fulfilment_retries_total', { operation: 'deliver-record' })) > 0,
        60_000,
        100,
      );
      expect(
        dlq.records.filter((r) => r.headers['dlq-event-id'] === placedA.eventId),
        'a not dead-lettered yet',
      ).toEqual([]);

      // Past its budget, a goes to the DLQ with the reason, and the group commits past it.
      const letter = await waitFor(
        "a's dead letter",
        () => dlq.records.find((r) => r.headers['dlq-event-id'] === placedA.eventId),
        (RECORD_BUDGET_SECONDS + 120) * 1000,
        200,
      );
      console.log(
        `dead letter: ${letter.headers['dlq-error-class']}: ${letter.headers['dlq-error-message']} (attempts ${letter.headers['dlq-attempts']})`,
      );
      expect(letter.headers['dlq-error-class']).toBe('RecordRetryBudgetSpentError');
      expect(letter.headers['dlq-error-message']).toMatch(
        new RegExp(`past the record's retry budget of ${RECORD_BUDGET_SECONDS} s: .*RESOURCE_EXHAUSTED, BUSY_WORKFLOW`),
      );
      expect(Number(letter.headers['dlq-attempts'])).toBeGreaterThan(1);
      expect(JSON.parse(letter.value!.toString())).toMatchObject({ eventId: placedA.eventId });
      await waitFor(
        'the group committed past a',
        () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
        60_000,
        200,
      );
      expect(await s.row(tenant, 'a')).toBeUndefined();

      // The partition's gate never closed: no delivery backoff, never parked.
      expect(await counter(app, 'fulfilment_retries_total', { operation: 'deliver' })).toBe(0);
      expect(await parked(0)).toBe(0);
    },
  );

  it(
    'a partition parked behind a Temporal down for everyone shows on the gauge past its budget, and flows again when Temporal is back',
    { timeout: 400_000 },
    async () => {
      const tenant = s.tenant('down');
      expect(await counter(app, 'fulfilment_bridge_parked_budget_seconds')).toBe(PARKED_BUDGET_SECONDS);
      await temporal.kill();
      await s.produce([{ partition: 1, key: `${tenant}/d`, value: events.placed(tenant, 'd') }]);
      const seconds = await waitFor(
        `partition 1 parked past ${PARKED_BUDGET_SECONDS} s`,
        async () => {
          const v = await parked(1);
          return v > PARKED_BUDGET_SECONDS ? v : undefined;
        },
        180_000,
        250,
      );
      console.log(`partition 1 parked ${seconds.toFixed(1)} s (budget ${PARKED_BUDGET_SECONDS} s)`);
      expect(await counter(app, 'fulfilment_retries_total', { operation: 'deliver' })).toBeGreaterThan(0);
      expect(
        dlq.records.filter((r) => r.key?.toString() === `${tenant}/d`),
        'an outage dead-letters nothing',
      ).toEqual([]);

      await temporal.restart();
      await waitFor(
        'd shipped once Temporal is back',
        async () => (await s.row(tenant, 'd'))?.status === 'shipped',
        300_000,
        250,
      );
      await waitFor('partition 1 no longer parked', async () => (await parked(1)) === 0, 60_000, 250);
    },
  );
});
