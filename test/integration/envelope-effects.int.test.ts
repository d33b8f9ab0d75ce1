/**
 * The parser's promise checked against the real effects, not a model of them: every generated record the edge
 * accepts is written by the store's own functions to the real PostgreSQL (each in a transaction rolled back
 * afterwards) and shipped through the real warehouse client to the development warehouse — none is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/base/config.js';
import { parseRecord } from '../../src/adapters/events/envelope.js';
import { createDb, inTenantTransaction, type Db } from '../../src/adapters/store/db.js';
import { recordCancellation, recordPlacement } from '../../src/adapters/store/fulfilments.js';
import { provisionPostgres } from '../../src/roles/provision/schema-and-grants.js';
import { runtimeConnection } from '../../src/adapters/store/connection.js';
import { claim } from '../../src/adapters/store/processed-events.js';
import { createWarehouseClient } from '../../src/adapters/warehouse/client.js';
import { startWarehouse, type WarehouseServer } from '../../tools/warehouse/server.js';
import { CONSUMER_NAME, ORDER_PLACED, shipmentKey, type OrderEvent } from '../../src/vocabulary/order.js';
import { sampleCases } from '../support/envelope-property.js';

/** Thrown to roll a transaction back once its writes succeeded. */
class RolledBack extends Error {}

let db: Db;
let warehouse: WarehouseServer;
beforeAll(async () => {
  const config = loadConfig();
  await provisionPostgres(config);
  db = createDb(runtimeConnection(config), 4);
  warehouse = await startWarehouse({ port: 0 });
});
afterAll(async () => {
  await db?.end();
  await warehouse?.close();
});

describe('what the edge accepts, the effects take', () => {
  it('every accepted generated event is stored by PostgreSQL and sent by the warehouse client', async () => {
    const accepted: OrderEvent[] = [];
    for (const c of sampleCases({ numRuns: 600, seed: 20261201, generators: ['valid', 'mutated'] })) {
      try {
        const parsed = parseRecord({ value: c.value, headers: c.headers });
        if (parsed.kind === 'order-event') accepted.push(parsed.event);
      } catch {
        // refused at the edge: nothing reaches the effects
      }
    }
    expect(accepted.length).toBeGreaterThan(200);
    const client = createWarehouseClient(warehouse.url);
    const refused: string[] = [];
    for (const [i, event] of accepted.entries()) {
      const stored = inTenantTransaction(db, event.tenantId, async (tx) => {
        await claim(tx, CONSUMER_NAME, event.tenantId, event.eventId);
        // The status event, if any, is written too (and rolled back with the rest): the outbox takes every stored value.
        const change = {
          topic: 'status.envelope-effects',
          claimKey: event.eventId,
          causationId: event.eventId,
          correlationId: event.correlationId,
        };
        if (event.type === ORDER_PLACED) await recordPlacement(tx, event, event.data, change);
        else await recordCancellation(tx, event, event.data, change);
        throw new RolledBack();
      }).catch((err: unknown) => {
        if (!(err instanceof RolledBack)) refused.push(`store refused ${event.eventId}: ${(err as Error).message}`);
      });
      await stored;
      if (event.type !== ORDER_PLACED) continue;
      const { tenantId, orderId, data, correlationId } = event;
      await client
        .ship(`${shipmentKey(tenantId, orderId)}/${i}`, {
          tenantId,
          orderId,
          lines: data.lines,
          shippingAddress: data.shippingAddress,
          correlationId,
        })
        .catch((err: unknown) => refused.push(`warehouse client refused ${event.eventId}: ${(err as Error).message}`));
    }
    expect(refused).toEqual([]);
  });
});
