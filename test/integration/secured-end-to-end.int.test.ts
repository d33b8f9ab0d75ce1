/**
 * Everything secured at once, as a managed deployment runs: the real service process (src/service.ts, worker and
 * bridge) with Kafka over SASL_SSL (SCRAM-SHA-512, the stack's CA) and Temporal over mTLS with an API key (the stack's
 * TLS Temporal: a real Temporal server that requires a client certificate and verifies the key on every call,
 * test/support/temporal-tls.ts). Orders ship, a malformed record is dead-lettered over SASL_SSL, and every order's
 * workflow ran on the TLS Temporal, none on the plaintext one.
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient } from '../../src/domain/temporal.js';
import type { TemporalTlsInfo } from '../../tools/stack/index.js';
import { orderWorkflowId } from '../../workflows/api.js';
import { caughtUp, events, scenario, waitFor, type Scenario } from '../support/harness.js';
import { saslSslEnv, saslSslListener } from '../support/kafka-sasl-ssl.js';
import { startServiceProcess } from '../support/service-process.js';
import { tlsEnv, tlsTemporal, tlsTemporalClient } from '../support/temporal-tls.js';

let s: Scenario;
let tls: TemporalTlsInfo;
let secured: Client;
let plaintext: Client;

beforeAll(async () => {
  // The scenario's own producer, admin and watcher use the SASL_SSL listener too (its config is built from this env).
  s = await scenario('secured', saslSslEnv(await saslSslListener()));
  tls = await tlsTemporal();
  secured = await tlsTemporalClient(s.env, tls);
  plaintext = await connectClient(s.config);
});

afterAll(async () => {
  await Promise.all([secured, plaintext].map((c) => c?.connection.close()));
  await s?.close();
});

describe('Kafka SASL_SSL and Temporal mTLS with an API key, in one service process', () => {
  it('ships orders and dead-letters poison with every connection secured', async () => {
    // The stack's client certificate and the service's API key (`<namespace>:write`), the stack's CA.
    const p = startServiceProcess(
      tlsEnv(s.env, tls, { extra: { FULFILMENT_ROLES: 'worker,bridge', TEMPORAL_TLS_SERVER_NAME: 'localhost' } }),
    );
    try {
      await p.said('service ready');
      const tenant = s.tenant('secured');
      const ids = Array.from({ length: 6 }, (_, i) => `o-${i}`);
      await s.produce([
        ...ids.map((id, i) => ({ partition: i % 3, key: id, value: events.placed(tenant, id) })),
        { partition: 1, key: 'poison', value: 'not json at all' },
      ]);
      await waitFor(
        'every order shipped',
        async () => (await Promise.all(ids.map((id) => s.row(tenant, id)))).every((r) => r?.status === 'shipped'),
        150_000,
        200,
      );
      expect((await s.shipments(tenant)).map((x) => x.orderId).sort()).toEqual([...ids].sort());
      const [dead] = await s.readTopic(s.config.DLQ_TOPIC, 1);
      expect(dead?.headers).toMatchObject({ 'dlq-error-class': 'MalformedEventError' });
      await waitFor(
        'the group committed every record',
        () => caughtUp(s.admin, s.config.CONSUMER_GROUP, s.config.ORDERS_TOPIC),
        60_000,
        200,
      );
      // Every order's workflow ran on the TLS Temporal (the only Temporal this process was given), none on the plaintext one.
      for (const id of ids) {
        expect((await secured.workflow.getHandle(orderWorkflowId(tenant, id)).describe()).workflowId).toBe(
          orderWorkflowId(tenant, id),
        );
        await expect(plaintext.workflow.getHandle(orderWorkflowId(tenant, id)).describe()).rejects.toBeInstanceOf(
          WorkflowNotFoundError,
        );
      }
      console.log(
        `secured end to end: ${ids.length} orders shipped, 1 dead letter, over SASL_SSL and Temporal mTLS with an API key`,
      );
      expect(p.alive()).toBe(true);
    } finally {
      if (p.alive()) expect(await p.stop()).toBe(0);
    }
  });
});
