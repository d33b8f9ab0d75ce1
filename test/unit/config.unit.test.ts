import { describe, expect, it } from 'vitest';
import { ConfigError, LEDGER_RETENTION_FLOOR_DAYS, durationMs, loadConfig } from '../../src/config.js';
import { configFailure } from '../support/config-failure.js';

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

describe('ledger retention configuration', () => {
  const failure = configFailure;

  it('defaults to a 30-day retention pruned every hour, above 7 days of Kafka retention plus a 14-day redrive window', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ LEDGER_RETENTION_DAYS: 30, KAFKA_RETENTION_DAYS: 7, REDRIVE_WINDOW_DAYS: 14, LEDGER_PRUNE_INTERVAL: '1h', LEDGER_PRUNE_BATCH: 1000 });
    expect(c.LEDGER_PRUNE_SCHEDULE_ID).toBe('fulfilment-ledger-retention');
    expect(durationMs(c.LEDGER_PRUNE_INTERVAL)).toBe(3_600_000);
  });

  it('refuses a retention shorter than KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS, naming the variables', () => {
    expect(failure({ LEDGER_RETENTION_DAYS: '20' })).toContain(
      'LEDGER_RETENTION_DAYS=20 is too short: the dedupe ledger must outlive every redelivery, so expected at least KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS = 7 + 14 = 21 days',
    );
    // Raising Kafka retention raises the minimum: the default 30 days is no longer enough.
    expect(failure({ KAFKA_RETENTION_DAYS: '30' })).toContain('KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS = 30 + 14 = 44 days');
    expect(loadConfig({ KAFKA_RETENTION_DAYS: '30', LEDGER_RETENTION_DAYS: '44' }).LEDGER_RETENTION_DAYS).toBe(44);
    expect(loadConfig({ LEDGER_RETENTION_DAYS: '21' }).LEDGER_RETENTION_DAYS).toBe(21);
  });

  it('refuses a retention below the store floor even when Kafka retention and the redrive window are short', () => {
    expect(failure({ KAFKA_RETENTION_DAYS: '1', REDRIVE_WINDOW_DAYS: '0', LEDGER_RETENTION_DAYS: `${LEDGER_RETENTION_FLOOR_DAYS - 1}` })).toContain(
      `expected at least ${LEDGER_RETENTION_FLOOR_DAYS} days, the floor prune_processed_events enforces`,
    );
  });

  it('checks the cross-field rule beside the other variables, and reads the prune interval as a duration', () => {
    const msg = failure({ LEDGER_RETENTION_DAYS: '10', METRICS_PORT: 'abc' });
    expect(msg).toContain('METRICS_PORT="abc" is invalid');
    expect(msg).toContain('LEDGER_RETENTION_DAYS=10 is too short');
    expect(durationMs(loadConfig({ LEDGER_PRUNE_INTERVAL: '90m' }).LEDGER_PRUNE_INTERVAL)).toBe(5_400_000);
    expect(durationMs(loadConfig({ LEDGER_PRUNE_INTERVAL: '0' }).LEDGER_PRUNE_INTERVAL)).toBe(0);
    expect(failure({ LEDGER_PRUNE_INTERVAL: '30s' })).toContain('LEDGER_PRUNE_INTERVAL="30s" is invalid: expected a duration of at least 1m such as 30m, 1h or 1d, or 0');
    expect(failure({ LEDGER_PRUNE_INTERVAL: 'hourly' })).toContain('LEDGER_PRUNE_INTERVAL="hourly" is invalid');
    expect(failure({ LEDGER_PRUNE_BATCH: '20000' })).toContain('LEDGER_PRUNE_BATCH="20000" is invalid: expected a whole number 1–10000');
  });
});
