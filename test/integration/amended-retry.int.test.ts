/**
 * An order held as failed keeps its lines when a newer placement arrives (the order's rules: `amend` changes only a
 * pending order's lines; any other takes the version alone), and a retry then ships exactly the lines the store holds
 * — read from what the warehouse was asked to ship. So do a run that is still open (the order lingers) and a repair
 * run (the order's run closed): both take the order's lines from the store's answer, never from the event.
 *
 * Setting this test changes, and why: ORDER_LINGER_SECONDS 600 (default 0), so that the failed order's run is still
 * open when the newer placement and the retry arrive — the run, not the store, then decides what is shipped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/api.js';
import { events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { cliOf, faultsOf } from '../support/operator.js';

const FIRST_LINES = [{ sku: 'SKU-FIRST', quantity: 1 }];
const NEWER_LINES = [{ sku: 'SKU-NEWER', quantity: 7 }];

let s: Scenario;
let app: App;
let tenant: string;
const opened: string[] = [];
beforeAll(async () => {
  s = await scenario('amended-retry', { ORDER_LINGER_SECONDS: '600' });
  app = await s.startInstance();
  tenant = s.tenant();
});
afterAll(async () => {
  for (const id of opened)
    await app?.client.workflow
      .getHandle(id)
      .terminate('test over')
      .catch(() => undefined);
  await s?.close();
});

const view = (orderId: string) =>
  app.client.workflow.getHandle(orderWorkflowId(tenant, orderId)).query(orderStatusQuery);

/** Places `orderId` with FIRST_LINES while the warehouse refuses it; resolves once the store and the run hold it failed. */
async function failed(orderId: string): Promise<void> {
  opened.push(orderWorkflowId(tenant, orderId));
  await faultsOf(s)({ rejectOrders: [orderId] });
  await s.produce([
    {
      key: `${tenant}/${orderId}`,
      value: events.placed(tenant, orderId, { data: { customerId: 'c-1', lines: FIRST_LINES } }),
    },
  ]);
  await waitFor(
    `${orderId} held as failed`,
    async () => (await s.row(tenant, orderId))?.status === 'failed' && (await view(orderId)).status === 'failed',
  );
}

/** A newer placement of `orderId` with NEWER_LINES; resolves once the store took its version. */
async function amend(orderId: string): Promise<void> {
  await s.produce([
    {
      key: `${tenant}/${orderId}`,
      value: events.placed(tenant, orderId, { orderVersion: 2, data: { customerId: 'c-1', lines: NEWER_LINES } }),
    },
  ]);
  await waitFor(`${orderId} at version 2`, async () => (await s.row(tenant, orderId))?.order_version === 2);
}

/** Retries `orderId` and returns the lines the warehouse was asked to ship, once it shipped. */
async function retriedLines(orderId: string): Promise<unknown> {
  await faultsOf(s)({ rejectOrders: [] });
  const r = await cliOf(s)('order', 'retry', `${tenant}/${orderId}`, '--reason', 'refusal fixed');
  expect(r.code).toBe(0);
  await waitFor(`${orderId} shipped`, async () => (await s.row(tenant, orderId))?.status === 'shipped');
  const shipments = (await s.shipments(tenant)).filter((x) => x.orderId === orderId);
  expect(shipments).toHaveLength(1);
  return shipments[0]!.lines;
}

describe('a failed order amended by a newer placement, then retried', () => {
  it('its open run ships the lines the store holds, not the newer placement’s', async () => {
    await failed('o-open');
    await amend('o-open');
    expect((await s.row(tenant, 'o-open'))!.lines).toEqual(FIRST_LINES);
    expect(await retriedLines('o-open')).toEqual(FIRST_LINES);
    expect((await s.row(tenant, 'o-open'))!.lines).toEqual(FIRST_LINES);
  });

  it('a repair run (its run closed) ships the lines the store holds too', async () => {
    await failed('o-closed');
    await amend('o-closed');
    await app.client.workflow.getHandle(orderWorkflowId(tenant, 'o-closed')).terminate('its run closed');
    expect(await retriedLines('o-closed')).toEqual(FIRST_LINES);
  });
});
