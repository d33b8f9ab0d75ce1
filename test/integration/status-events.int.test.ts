/**
 * Status events out, on the real stack (Kafka, Temporal, PostgreSQL; the warehouse in process): a stream of orders
 * covering every status change the store commits — shipped (its placement delivered twice), cancelled before
 * placement, a late cancellation refused after shipment, failed and reopened by `fulfilment order retry` then shipped,
 * cancelled while its shipment was in flight (recalled), and a refused recall (recall-failed → NeedsAttention)
 * resolved by `fulfilment order resolve` (Cancelled, caused by the operator action). The worker's relay publishes the
 * outbox to the scenario's STATUS_TOPIC. Each order produces exactly the expected events, by id (the id the change's
 * claim gives); a record seen twice is an exact copy; one order's events arrive in commit order on one partition;
 * a cancelled order never emits Shipped; every event is valid against the published JSON Schema; `fulfilment status
 * tail` shows the same events, sent; the relay's lag metric falls back to 0.
 */
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { metricValue } from '../../src/base/metrics.js';
import {
  STATUS_EVENT,
  statusEventId,
  type StatusEvent,
  type StatusEventType,
} from '../../src/adapters/status-events/event.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario, type TopicRecord, type TopicWatch } from '../support/harness.js';
import { cliOf, faultsOf } from '../support/operator.js';

const schema = JSON.parse(
  readFileSync(new URL('../../docs/schema/fulfilment-status.v1.schema.json', import.meta.url), 'utf8'),
) as object;
const validate = new Ajv2020({ allErrors: true }).compile(schema);

interface Expected {
  type: StatusEventType;
  /** The claim key of the change's transaction (the basis of its id). */
  claim: string;
  causationId: string;
  status: StatusEvent['status'];
}

describe('status events: every committed status change, exactly, in order per order', () => {
  let s: Scenario;
  let app: App;
  let tenant: string;
  let watch: TopicWatch;
  const expected = new Map<string, Expected[]>();

  beforeAll(async () => {
    // A relay poll of 200 ms instead of 1 s: the test waits for every event, and each poll is one statement.
    s = await scenario('status-events', { STATUS_RELAY_POLL_MS: '200' });
    app = await s.startInstance();
    tenant = s.tenant('status');
    watch = await s.watchTopic(s.config.STATUS_TOPIC);
  });

  afterAll(async () => {
    await faults({ latencyMs: 0, rejectOrders: [], refuseRecalls: [] }).catch(() => undefined);
    await watch?.close();
    for (const id of expected.keys())
      await app?.client.workflow
        .getHandle(orderWorkflowId(tenant, id))
        .terminate('test over')
        .catch(() => undefined);
    await s?.close();
  });

  const faults = (body: object) => faultsOf(s)(body);
  const cli = (...argv: string[]) => cliOf(s)(...argv);
  const key = (orderId: string) => `${tenant}/${orderId}`;
  const status = async (orderId: string) => (await s.row(tenant, orderId))?.status;
  const expect_ = (orderId: string, ...e: Expected[]) =>
    expected.set(orderId, [...(expected.get(orderId) ?? []), ...e]);
  const recordsOf = (orderId: string): TopicRecord[] => watch.records.filter((r) => r.key?.toString() === key(orderId));
  const eventOf = (r: TopicRecord) => JSON.parse(r.value!.toString()) as StatusEvent;
  const idOf = (e: Expected) => statusEventId(tenant, e.type, e.claim);

  it('runs the stream: every story of an order, with duplicates, stale events and operator actions', async () => {
    // Shipped; its placement delivered twice.
    const shipPlaced = events.placed(tenant, 'o-ship');
    await s.produce([
      { key: key('o-ship'), value: shipPlaced },
      { key: key('o-ship'), value: shipPlaced },
    ]);
    expect_('o-ship', {
      type: STATUS_EVENT.shipped,
      claim: `shipped/${tenant}/o-ship`,
      causationId: shipPlaced.eventId,
      status: 'shipped',
    });

    // Cancelled before its placement arrived; the placement (older version) then fills in the tombstone: no event.
    const earlyCancel = events.cancelled(tenant, 'o-early', { orderVersion: 2 });
    await s.produce([{ key: key('o-early'), value: earlyCancel }]);
    await waitFor('o-early tombstone', async () => (await status('o-early')) === 'cancelled');
    await s.produce([{ key: key('o-early'), value: events.placed(tenant, 'o-early') }]);
    expect_('o-early', {
      type: STATUS_EVENT.cancelled,
      claim: earlyCancel.eventId,
      causationId: earlyCancel.eventId,
      status: 'cancelled',
    });

    // Shipped, then a late cancellation refused; a stale placement (version 1 again) changes nothing.
    const latePlaced = events.placed(tenant, 'o-late');
    await s.produce([{ key: key('o-late'), value: latePlaced }]);
    await waitFor('o-late shipped', async () => (await status('o-late')) === 'shipped');
    const lateCancel = events.cancelled(tenant, 'o-late', { orderVersion: 2 });
    await s.produce([
      { key: key('o-late'), value: lateCancel },
      { key: key('o-late'), value: events.placed(tenant, 'o-late') },
    ]);
    expect_(
      'o-late',
      {
        type: STATUS_EVENT.shipped,
        claim: `shipped/${tenant}/o-late`,
        causationId: latePlaced.eventId,
        status: 'shipped',
      },
      {
        type: STATUS_EVENT.cancellationRefused,
        claim: lateCancel.eventId,
        causationId: lateCancel.eventId,
        status: 'shipped',
      },
    );

    // Refused by the warehouse (failed), retried by an operator (reopened), then shipped.
    await faults({ rejectOrders: ['o-fail'] });
    const failPlaced = events.placed(tenant, 'o-fail');
    await s.produce([{ key: key('o-fail'), value: failPlaced }]);
    await waitFor('o-fail held as failed', async () => (await status('o-fail')) === 'failed');
    await faults({ rejectOrders: [] });
    expect((await cli('order', 'retry', key('o-fail'), '--reason', 'SKU mapping fixed')).code).toBe(0);
    await waitFor('o-fail shipped after the retry', async () => (await status('o-fail')) === 'shipped');
    const retry = `retry/${tenant}/o-fail/1`;
    expect_(
      'o-fail',
      {
        type: STATUS_EVENT.failed,
        claim: `failed/${tenant}/o-fail`,
        causationId: failPlaced.eventId,
        status: 'failed',
      },
      { type: STATUS_EVENT.reopened, claim: retry, causationId: retry, status: 'pending' },
      { type: STATUS_EVENT.shipped, claim: `shipped/${tenant}/o-fail`, causationId: retry, status: 'shipped' },
    );

    // Cancelled while the shipment was in flight: one recalled, one whose recall is refused for good (needs
    // attention), then resolved by an operator (cancelled, caused by the resolution). The warehouse takes 15 s to answer
    // (the quick attempt gives up after 3 s, the heartbeating one waits), so the cancellation, sent once the shipment
    // request arrived, lands while it is in flight even on a loaded machine (3 s was too short for one at load 10).
    await faults({ latencyMs: 15_000, refuseRecalls: ['o-recall'] });
    const cancels: Record<string, ReturnType<typeof events.cancelled>> = {};
    for (const orderId of ['o-inflight', 'o-recall']) {
      await s.produce([{ key: key(orderId), value: events.placed(tenant, orderId) }]);
      await waitFor(`${orderId}'s shipment request`, () =>
        s.warehouse.requests().some((r) => r.idempotencyKey === `ship/${tenant}/${orderId}`),
      );
      cancels[orderId] = events.cancelled(tenant, orderId, { orderVersion: 2 });
      await s.produce([{ key: key(orderId), value: cancels[orderId] }]);
    }
    await waitFor('o-recall recall-failed', async () => (await status('o-recall')) === 'recall-failed', 120_000);
    await faults({ latencyMs: 0, refuseRecalls: [] });
    expect(
      (
        await cli(
          'order',
          'resolve',
          key('o-recall'),
          '--action',
          'recalled-by-hand',
          '--reason',
          'carrier returned it',
          '--by',
          'ops-1',
        )
      ).code,
    ).toBe(0);
    await waitFor('o-recall resolved', async () => (await status('o-recall')) === 'cancelled');
    const inflight = cancels['o-inflight']!;
    const recall = cancels['o-recall']!;
    expect_('o-inflight', {
      type: STATUS_EVENT.cancelled,
      claim: inflight.eventId,
      causationId: inflight.eventId,
      status: 'cancelled',
    });
    expect_(
      'o-recall',
      { type: STATUS_EVENT.cancelled, claim: recall.eventId, causationId: recall.eventId, status: 'cancelled' },
      {
        type: STATUS_EVENT.needsAttention,
        claim: `recall-failed/${tenant}/o-recall/1`,
        causationId: recall.eventId,
        status: 'recall-failed',
      },
      {
        type: STATUS_EVENT.cancelled,
        claim: `resolve/${tenant}/o-recall/1`,
        causationId: `resolve/${tenant}/o-recall/1`,
        status: 'cancelled',
      },
    );

    await waitFor(
      'every expected status event on the topic',
      () =>
        [...expected].every(([orderId, want]) =>
          want.every((e) => recordsOf(orderId).some((r) => eventOf(r).eventId === idOf(e))),
        ),
      120_000,
    );
    await waitFor(
      'the relay lag back to 0',
      async () =>
        (await metricValue(app.metrics.registry, 'fulfilment_status_relay_lag_seconds', {
          topic: s.config.STATUS_TOPIC,
        })) === 0,
    );
  });

  it('each order got exactly its expected events, by id, in commit order on one partition; copies are exact', () => {
    for (const [orderId, want] of expected) {
      const records = recordsOf(orderId);
      // Duplicates only as exact copies: the same id always carries the same bytes and headers.
      const byId = new Map<string, TopicRecord>();
      for (const r of records) {
        const first = byId.get(eventOf(r).eventId);
        if (first)
          expect({ value: r.value!.toString(), headers: r.headers }).toEqual({
            value: first.value!.toString(),
            headers: first.headers,
          });
        else byId.set(eventOf(r).eventId, r);
      }
      expect([...byId.keys()], orderId).toEqual(want.map(idOf));
      expect(new Set(records.map((r) => r.partition)).size, `${orderId} on one partition`).toBe(1);
      for (const [i, e] of want.entries()) {
        const event = eventOf(byId.get(idOf(e))!);
        expect(validate(event) ? [] : validate.errors, `${orderId} ${e.type} valid`).toEqual([]);
        expect(event, `${orderId} #${i}`).toMatchObject({
          type: e.type,
          status: e.status,
          causationId: e.causationId,
          tenantId: tenant,
          orderId,
          schemaVersion: 1,
        });
        expect(byId.get(idOf(e))!.headers['correlation-id']).toBe(event.correlationId);
      }
    }
  });

  it('a cancelled order never emits Shipped; placements carry their correlation id into what follows', () => {
    for (const orderId of ['o-early', 'o-inflight', 'o-recall'])
      expect(recordsOf(orderId).map((r) => eventOf(r).type)).not.toContain(STATUS_EVENT.shipped);
    expect(eventOf(recordsOf('o-ship')[0]!).correlationId).toBe('corr-o-ship');
    expect(eventOf(recordsOf('o-early')[0]!).data).toEqual({ cancelledBeforePlacement: true });
    expect(eventOf(recordsOf('o-inflight')[0]!).data).toEqual({ cancelledBeforePlacement: false });
  });

  it("`fulfilment status tail` shows an order's and the tenant's events from the outbox, all sent", async () => {
    const order = await cli('status', 'tail', key('o-recall'));
    expect(order.code).toBe(0);
    const lines = order.stdout.trim().split('\n');
    expect(lines.map((l) => l.split(/\s+/)[1])).toEqual([
      'fulfilment.Cancelled',
      'fulfilment.NeedsAttention',
      'fulfilment.Cancelled',
    ]);
    for (const l of lines) expect(l).toContain('  sent  ');

    const all = await cli('status', 'tail', tenant, '--limit', '100', '--json');
    expect(all.code).toBe(0);
    const shown = all.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { sentAt: string | null; event: StatusEvent });
    const wanted = [...expected.values()].flat().map(idOf);
    expect(shown.map((x) => x.event.eventId).sort()).toEqual([...wanted].sort());
    expect(shown.every((x) => x.sentAt !== null)).toBe(true);
    // What the outbox holds is what was published, byte for byte.
    for (const x of shown) {
      const published = watch.records.find((r) => eventOf(r).eventId === x.event.eventId)!;
      expect(eventOf(published)).toEqual(x.event);
    }

    expect((await cli('status', 'tail', 'not a tenant')).code).toBe(2);
  });
});
