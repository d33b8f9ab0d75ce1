import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration', () => {
  it('has working defaults for the local stack', () => {
    const c = loadConfig({});
    expect(c.KAFKA_BROKERS).toEqual(['127.0.0.1:19092']);
    expect(c.ORDERS_TOPIC).toBe('orders');
    expect(c.DLQ_TOPIC).toBe('orders.fulfilment.dlq');
  });

  it('fails fast naming every bad variable and what was expected', () => {
    let err: unknown;
    try {
      loadConfig({ KAFKA_BROKERS: 'nohost', METRICS_PORT: '99999', DATABASE_URL: 'mysql://x/y', CANCEL_GRACE_SECONDS: '-1' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    expect(msg).toContain('KAFKA_BROKERS="nohost" is invalid: expected host:port');
    expect(msg).toContain('METRICS_PORT="99999" is invalid: expected a port number 0–65535');
    expect(msg).toContain('DATABASE_URL="mysql://x/y" is invalid: expected a URL starting with postgres:// or postgresql://');
    expect(msg).toContain('CANCEL_GRACE_SECONDS="-1" is invalid: expected a whole number ≥ 1');
  });
});
