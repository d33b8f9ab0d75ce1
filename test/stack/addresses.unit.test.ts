import { describe, expect, it } from 'vitest';
import { maskUrl, parseHostPort, planFromEnv, urlHostPort } from '../../tools/stack/addresses.js';
import { newClusterId } from '../../tools/stack/services/kafka-shared.js';
import { serverConfig } from '../../tools/stack/services/temporal-server.js';

describe('stack addresses', () => {
  it('derives every local port from the config defaults', () => {
    const p = planFromEnv({});
    expect(p.kafka).toMatchObject({
      host: '127.0.0.1',
      port: 19092,
      controllerPort: 19093,
      saslSslPort: 19094,
      brokers: ['127.0.0.1:19092'],
      external: false,
    });
    expect(p.kafka).toMatchObject({ ordersTopic: 'orders', ordersPartitions: 6, dlqTopic: 'orders.fulfilment.dlq' });
    expect(p.temporal).toMatchObject({
      host: '127.0.0.1',
      port: 7233,
      ui: { host: '127.0.0.1', port: 8233 },
      namespace: 'default',
      external: false,
    });
    expect(p.postgres).toMatchObject({
      host: '127.0.0.1',
      port: 55432,
      user: 'fulfilment',
      password: 'fulfilment',
      database: 'fulfilment',
      external: false,
    });
    expect(p.warehouse).toMatchObject({
      host: '127.0.0.1',
      port: 18080,
      listenPort: 18080,
      url: 'http://127.0.0.1:18080',
      external: false,
    });
  });

  it('treats explicitly set addresses as external, and only those', () => {
    const p = planFromEnv({ KAFKA_BROKERS: 'k1:9092, k2:9092', DATABASE_URL: 'postgresql://u:p%40ss@db.example/app' });
    expect(p.kafka).toMatchObject({ external: true, brokers: ['k1:9092', 'k2:9092'], host: 'k1', port: 9092 });
    expect(p.postgres).toMatchObject({
      external: true,
      host: 'db.example',
      port: 5432,
      user: 'u',
      password: 'p@ss',
      database: 'app',
    });
    expect(p.temporal.external).toBe(false);
    expect(p.warehouse.external).toBe(false);
    // an empty variable counts as unset, like in loadConfig
    expect(planFromEnv({ TEMPORAL_ADDRESS: '' }).temporal.external).toBe(false);
    expect(planFromEnv({ TEMPORAL_ADDRESS: 'temporal:7233' }).temporal).toMatchObject({
      external: true,
      host: 'temporal',
      port: 7233,
    });
  });

  it('lets WAREHOUSE_PORT move the local warehouse listener and TEMPORAL_UI_URL the UI', () => {
    expect(planFromEnv({ WAREHOUSE_PORT: '18181' }).warehouse).toMatchObject({ listenPort: 18181, external: false });
    expect(planFromEnv({ TEMPORAL_UI_URL: 'http://127.0.0.1:9233/' }).temporal.ui).toEqual({
      host: '127.0.0.1',
      port: 9233,
    });
  });

  it('runs the dev server unless STACK_TEMPORAL=server, with 8 history shards in one process by default', () => {
    expect(planFromEnv({}).temporal).toMatchObject({ kind: 'dev', shards: 8, processes: 'one' });
    expect(
      planFromEnv({ STACK_TEMPORAL: 'server', STACK_TEMPORAL_SHARDS: '32', STACK_TEMPORAL_PROCESSES: 'split' })
        .temporal,
    ).toMatchObject({ kind: 'server', shards: 32, processes: 'split' });
    expect(() => planFromEnv({ STACK_TEMPORAL: 'cluster' })).toThrow(/STACK_TEMPORAL must be dev or server/);
    expect(() => planFromEnv({ STACK_TEMPORAL_SHARDS: '0' })).toThrow(/STACK_TEMPORAL_SHARDS must be a whole number/);
    expect(() => planFromEnv({ STACK_TEMPORAL_PROCESSES: 'many' })).toThrow(
      /STACK_TEMPORAL_PROCESSES must be one or split/,
    );
  });

  it("configures the Temporal server on the stack's PostgreSQL, its frontend where the dev server listens", () => {
    const c = serverConfig(planFromEnv({ STACK_TEMPORAL: 'server', STACK_TEMPORAL_SHARDS: '16' })) as {
      persistence: {
        numHistoryShards: number;
        datastores: Record<string, { sql: { databaseName: string; connectAddr: string; pluginName: string } }>;
      };
      services: Record<string, { rpc: { grpcPort: number; bindOnIP: string } }>;
    };
    expect(c.persistence.numHistoryShards).toBe(16);
    expect(Object.values(c.persistence.datastores).map((d) => d.sql)).toEqual([
      expect.objectContaining({ pluginName: 'postgres12', databaseName: 'temporal', connectAddr: '127.0.0.1:55432' }),
      expect.objectContaining({
        pluginName: 'postgres12',
        databaseName: 'temporal_visibility',
        connectAddr: '127.0.0.1:55432',
      }),
    ]);
    expect(c.services.frontend?.rpc).toMatchObject({ grpcPort: 7233, bindOnIP: '127.0.0.1' });
    const grpcPorts = Object.values(c.services).map((s) => s.rpc.grpcPort);
    expect(new Set(grpcPorts).size).toBe(4);
  });

  it('parses host:port forms', () => {
    expect(parseHostPort('localhost:1')).toEqual({ host: 'localhost', port: 1 });
    expect(parseHostPort('[::1]:7233')).toEqual({ host: '::1', port: 7233 });
    expect(() => parseHostPort('nope')).toThrow(/host:port/);
    expect(urlHostPort('http://[::1]:8080/x')).toEqual({ host: '::1', port: 8080 });
    expect(urlHostPort('https://example.com')).toEqual({ host: 'example.com', port: 443 });
  });

  it('masks passwords for display', () => {
    expect(maskUrl('postgres://a:secret@h:1/d')).toBe('postgres://a:***@h:1/d');
  });

  it('makes Kafka cluster ids the formatter accepts', () => {
    for (let i = 0; i < 50; i++) expect(newClusterId()).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
  });
});
