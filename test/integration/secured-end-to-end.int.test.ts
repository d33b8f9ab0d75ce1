/**
 * Everything secured at once, as a managed deployment runs: the real service process (src/service.ts, worker and
 * bridge) with Kafka over SASL_SSL (SCRAM-SHA-512, the stack's CA) and Temporal over mTLS with an API key (through
 * the TLS proxy that requires a client certificate and checks the key, test/support/temporal-tls-proxy.ts). Orders
 * ship, a malformed record is dead-lettered over SASL_SSL, and every Temporal call carried the client certificate
 * and the key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caughtUp, events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { saslSslEnv, saslSslListener } from '../support/kafka-sasl-ssl.js';
import { startServiceProcess } from '../support/service-process.js';
import { startTemporalTlsProxy, type TemporalTlsProxy } from '../support/temporal-tls-proxy.js';
import { makeTestPki, type TestPki } from '../support/tls-certs.js';

const API_KEY = 'end-to-end-key-7d21';
let s: Scenario;
let pki: TestPki;
let proxy: TemporalTlsProxy;

beforeAll(async () => {
  // The scenario's own producer, admin and watcher use the SASL_SSL listener too (its config is built from this env).
  s = await scenario('secured', saslSslEnv(await saslSslListener()));
  pki = await makeTestPki();
  proxy = await startTemporalTlsProxy({ upstream: s.config.TEMPORAL_ADDRESS, cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca, apiKey: API_KEY });
});

afterAll(async () => {
  await proxy?.close();
  pki?.remove();
  await s?.close();
});

describe('Kafka SASL_SSL and Temporal mTLS with an API key, in one service process', () => {
  it('ships orders and dead-letters poison with every connection secured', async () => {
    const p = startServiceProcess({
      ...s.env,
      FULFILMENT_ROLES: 'worker,bridge',
      TEMPORAL_ADDRESS: proxy.address,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.ca,
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.client.cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.client.key,
      TEMPORAL_API_KEY: API_KEY,
    });
    try {
      await p.said('service ready');
      const tenant = s.tenant('secured');
      const ids = Array.from({ length: 6 }, (_, i) => `o-${i}`);
      await s.produce([
        ...ids.map((id, i) => ({ partition: i % 3, key: id, value: events.placed(tenant, id) })),
        { partition: 1, key: 'poison', value: 'not json at all' },
      ]);
      await waitFor('every order shipped', async () => (await Promise.all(ids.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'), 150_000, 200);
      expect((await s.shipments(tenant)).map((x) => x.orderId).sort()).toEqual([...ids].sort());
      const [dead] = await s.readTopic(s.config.DLQ_TOPIC, 1);
      expect(dead?.headers).toMatchObject({ 'dlq-error-class': 'MalformedEventError' });
      await waitFor('the group committed every record', () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC), 60_000, 200);
      // Every Temporal call — the bridge's eager starts on the worker's connection, the worker's polls and completions —
      // came through the proxy with the client certificate and the key.
      const paths = new Set(proxy.calls.map((c) => c.path.split('/').at(-1)));
      for (const rpc of ['StartWorkflowExecution', 'PollWorkflowTaskQueue', 'PollActivityTaskQueue', 'RespondWorkflowTaskCompleted']) expect(paths).toContain(rpc);
      expect(new Set(proxy.calls.map((c) => c.clientCn))).toEqual(new Set(['fulfilment-client']));
      expect(proxy.calls.every((c) => c.authorization === `Bearer ${API_KEY}`)).toBe(true);
      console.log(`secured end to end: ${ids.length} orders shipped, 1 dead letter, ${proxy.calls.length} Temporal calls over mTLS with the key`);
      expect(p.alive()).toBe(true);
    } finally {
      if (p.alive()) expect(await p.stop()).toBe(0);
    }
  });
});
