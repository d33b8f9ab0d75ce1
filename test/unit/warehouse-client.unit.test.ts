/** The warehouse client against the real development warehouse server: what counts towards the breaker. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DependencyUnavailableError, InvalidRequestError } from '../../src/errors.js';
import { createWarehouseClient } from '../../src/warehouse/client.js';
import { startWarehouse, type WarehouseServer } from '../../tools/warehouse/server.js';

let warehouse: WarehouseServer;
beforeAll(async () => {
  warehouse = await startWarehouse({ port: 0 });
});
afterAll(async () => warehouse?.close());

const request = (orderId: string, correlationId?: string) => ({
  tenantId: 'acme',
  orderId,
  lines: [{ sku: 's', quantity: 1 }],
  correlationId,
});

describe('warehouse client', () => {
  it("a request one order's data cannot form fails that order alone; the breaker stays closed for everyone", async () => {
    const states: string[] = [];
    const client = createWarehouseClient(warehouse.url, {
      breaker: { failures: 2, halfOpenAfterMs: 60_000, onStateChange: (s) => states.push(s) },
    });
    for (const bad of ['a\r\nx-injected: 1', 'nul\u0000', 'caf\u00e9\u2603', '\u{1F600}']) {
      await expect(client.ship(`ship/acme/${encodeURIComponent(bad)}`, request('o-bad', bad))).rejects.toBeInstanceOf(
        InvalidRequestError,
      );
    }
    expect(states).toEqual([]);
    const receipt = await client.ship('ship/acme/o-good', request('o-good', 'corr-good'));
    expect(receipt.status).toBe('dispatched');
  });

  it('connection failures do count: after the configured number the circuit opens and calls fail fast', async () => {
    const states: string[] = [];
    const client = createWarehouseClient('http://127.0.0.1:9', {
      breaker: { failures: 2, halfOpenAfterMs: 60_000, onStateChange: (s) => states.push(s) },
    });
    for (let i = 0; i < 2; i += 1)
      await expect(client.ship(`k${i}`, request(`o${i}`))).rejects.toBeInstanceOf(DependencyUnavailableError);
    expect(states).toEqual(['open']);
    await expect(client.ship('k3', request('o3'))).rejects.toThrow(/circuit open/);
  });
});
