import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  LEDGER_RETENTION_FLOOR_DAYS,
  PRODUCTION_REQUIRED,
  databaseUser,
  durationMs,
  loadConfig,
} from '../../../src/base/config.js';
import { parseProvisionSteps } from '../../../src/roles/provision/steps.js';
import { connectionOptions, migrationConnection, runtimeConnection } from '../../../src/adapters/store/connection.js';
import { configFailure } from '../../support/config-failure.js';

/** The ConfigError message for `env` (fails when the configuration is accepted). */
const failure = configFailure;

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
      loadConfig({
        KAFKA_BROKERS: 'nohost',
        METRICS_PORT: '99999',
        DATABASE_URL: 'mysql://x/y',
        CANCEL_GRACE_SECONDS: '-1',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    expect(msg).toContain('KAFKA_BROKERS="nohost" is invalid: expected host:port');
    expect(msg).toContain('METRICS_PORT="99999" is invalid: expected a port number 0–65535');
    expect(msg).toContain(
      'DATABASE_URL="mysql://x/y" is invalid: expected a URL starting with postgres:// or postgresql://',
    );
    // A URL's password is never repeated in a message.
    const masked = failure({ DATABASE_URL: 'mysql://app:s3cret@db/fulfilment' });
    expect(masked).toContain('DATABASE_URL="mysql://app:***@db/fulfilment" is invalid');
    expect(masked).not.toContain('s3cret');
    expect(msg).toContain('CANCEL_GRACE_SECONDS="-1" is invalid: expected a whole number ≥ 1');
  });
});

describe('ledger retention configuration', () => {
  it('defaults to a 30-day retention pruned every hour, above 7 days of Kafka retention plus a 14-day redrive window', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      LEDGER_RETENTION_DAYS: 30,
      KAFKA_RETENTION_DAYS: 7,
      REDRIVE_WINDOW_DAYS: 14,
      LEDGER_PRUNE_INTERVAL: '1h',
      LEDGER_PRUNE_BATCH: 1000,
    });
    expect(c.LEDGER_PRUNE_SCHEDULE_ID).toBe('fulfilment-ledger-retention');
    expect(durationMs(c.LEDGER_PRUNE_INTERVAL)).toBe(3_600_000);
  });

  it('refuses a retention shorter than KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS, naming the variables', () => {
    expect(failure({ LEDGER_RETENTION_DAYS: '20' })).toContain(
      'LEDGER_RETENTION_DAYS=20 is too short: the dedupe ledger must outlive every redelivery, so expected at least KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS = 7 + 14 = 21 days',
    );
    // Raising Kafka retention raises the minimum: the default 30 days is no longer enough.
    expect(failure({ KAFKA_RETENTION_DAYS: '30' })).toContain(
      'KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS = 30 + 14 = 44 days',
    );
    expect(loadConfig({ KAFKA_RETENTION_DAYS: '30', LEDGER_RETENTION_DAYS: '44' }).LEDGER_RETENTION_DAYS).toBe(44);
    expect(loadConfig({ LEDGER_RETENTION_DAYS: '21' }).LEDGER_RETENTION_DAYS).toBe(21);
  });

  it('refuses a retention below the store floor even when Kafka retention and the redrive window are short', () => {
    expect(
      failure({
        KAFKA_RETENTION_DAYS: '1',
        REDRIVE_WINDOW_DAYS: '0',
        LEDGER_RETENTION_DAYS: `${LEDGER_RETENTION_FLOOR_DAYS - 1}`,
      }),
    ).toContain(`expected at least ${LEDGER_RETENTION_FLOOR_DAYS} days, the floor prune_processed_events enforces`);
  });

  it('checks the cross-field rule beside the other variables, and reads the prune interval as a duration', () => {
    const msg = failure({ LEDGER_RETENTION_DAYS: '10', METRICS_PORT: 'abc' });
    expect(msg).toContain('METRICS_PORT="abc" is invalid');
    expect(msg).toContain('LEDGER_RETENTION_DAYS=10 is too short');
    expect(durationMs(loadConfig({ LEDGER_PRUNE_INTERVAL: '90m' }).LEDGER_PRUNE_INTERVAL)).toBe(5_400_000);
    expect(durationMs(loadConfig({ LEDGER_PRUNE_INTERVAL: '0' }).LEDGER_PRUNE_INTERVAL)).toBe(0);
    expect(failure({ LEDGER_PRUNE_INTERVAL: '30s' })).toContain(
      'LEDGER_PRUNE_INTERVAL="30s" is invalid: expected a duration of at least 1m such as 30m, 1h or 1d, or 0',
    );
    expect(failure({ LEDGER_PRUNE_INTERVAL: 'hourly' })).toContain('LEDGER_PRUNE_INTERVAL="hourly" is invalid');
    expect(failure({ LEDGER_PRUNE_BATCH: '20000' })).toContain(
      'LEDGER_PRUNE_BATCH="20000" is invalid: expected a whole number 1–10000',
    );
  });
});

describe('production mode (NODE_ENV=production)', () => {
  const production = { NODE_ENV: 'production' };
  const addresses = {
    KAFKA_BROKERS: 'kafka-1.internal:9092,kafka-2.internal:9092',
    TEMPORAL_ADDRESS: 'temporal.internal:7233',
    DATABASE_URL: 'postgres://app@db.internal:5432/fulfilment',
    WAREHOUSE_URL: 'https://warehouse.internal',
  };

  it('has no local defaults for the addresses: each missing one is named in one ConfigError', () => {
    let err: unknown;
    try {
      loadConfig(production);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    for (const name of PRODUCTION_REQUIRED)
      expect(msg).toContain(`${name} is not set: required when NODE_ENV=production`);
    expect(msg).not.toContain('127.0.0.1');
  });

  it('names only what is missing, blank counting as missing, beside other bad values', () => {
    const msg = (() => {
      try {
        loadConfig({ ...production, ...addresses, WAREHOUSE_URL: '  ', DATABASE_URL: undefined, METRICS_PORT: 'x' });
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error('accepted');
    })();
    expect(msg).toContain('WAREHOUSE_URL is not set');
    expect(msg).toContain('DATABASE_URL is not set');
    expect(msg).toContain('METRICS_PORT="x" is invalid');
    expect(msg).not.toContain('KAFKA_BROKERS');
    expect(msg).not.toContain('TEMPORAL_ADDRESS');
  });

  it('runs with every address set, and outside production the local-stack defaults stay', () => {
    const c = loadConfig({ ...production, ...addresses });
    expect(c.NODE_ENV).toBe('production');
    expect(c.KAFKA_BROKERS).toEqual(['kafka-1.internal:9092', 'kafka-2.internal:9092']);
    expect(c.WAREHOUSE_URL).toBe('https://warehouse.internal');
    for (const mode of ['development', 'test'])
      expect(loadConfig({ NODE_ENV: mode }).TEMPORAL_ADDRESS).toBe('127.0.0.1:7233');
  });

  it('bounds shutdown by SHUTDOWN_DEADLINE_MS, 30 s unless set', () => {
    expect(loadConfig({}).SHUTDOWN_DEADLINE_MS).toBe(30_000);
    expect(loadConfig({ SHUTDOWN_DEADLINE_MS: '5000' }).SHUTDOWN_DEADLINE_MS).toBe(5000);
    expect(() => loadConfig({ SHUTDOWN_DEADLINE_MS: '0' })).toThrow(
      'SHUTDOWN_DEADLINE_MS="0" is invalid: expected a whole number ≥ 1',
    );
  });
});

describe('PostgreSQL configuration', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'config-ca-'));
    writeFileSync(join(dir, 'ca.pem'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    writeFileSync(join(dir, 'not-a-cert.pem'), 'hello\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('defaults to the local stack: the runtime role for the service, the owner for provisioning (dev-only passwords)', () => {
    const c = loadConfig({});
    expect(databaseUser(c.DATABASE_URL)).toBe('fulfilment');
    expect(databaseUser(c.DATABASE_MIGRATION_URL!)).toBe('fulfilment_owner');
    expect(c.DATABASE_SSL_CA_FILE).toBeUndefined();
    expect(c.KAFKA_REPLICATION_FACTOR).toBeUndefined();
  });

  it('a configured DATABASE_URL never pairs with the local owner: DATABASE_MIGRATION_URL is then unset, and provisioning says so', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://app:pw@db.example/orders' });
    expect(c.DATABASE_MIGRATION_URL).toBeUndefined();
    expect(() => migrationConnection(c)).toThrow(ConfigError);
    expect(() => migrationConnection(c)).toThrow(
      'DATABASE_MIGRATION_URL is not set: provisioning applies the migrations as the role that owns the tables',
    );
    // The service itself needs only DATABASE_URL.
    expect(runtimeConnection(c)).toEqual({ connectionString: 'postgres://app:pw@db.example/orders' });
  });

  it('refuses one role for both URLs', () => {
    expect(
      failure({ DATABASE_URL: 'postgres://app:a@db/x', DATABASE_MIGRATION_URL: 'postgres://app:b@db/x' }),
    ).toContain(
      'DATABASE_URL and DATABASE_MIGRATION_URL both connect as "app": the service must run as a runtime role that owns nothing',
    );
    expect(
      loadConfig({ DATABASE_URL: 'postgres://app:a@db/x', DATABASE_MIGRATION_URL: 'postgres://owner:b@db/x' })
        .DATABASE_MIGRATION_URL,
    ).toBe('postgres://owner:b@db/x');
  });

  it('DATABASE_MIGRATION_URL must be a PostgreSQL URL', () => {
    expect(failure({ DATABASE_MIGRATION_URL: 'mysql://o@db/x' })).toContain(
      'DATABASE_MIGRATION_URL="mysql://o@db/x" is invalid: expected a URL starting with postgres:// or postgresql://',
    );
  });

  it('DATABASE_SSL_CA_FILE must be a readable PEM certificate', () => {
    expect(failure({ DATABASE_SSL_CA_FILE: join(dir, 'missing.pem') })).toContain(
      `DATABASE_SSL_CA_FILE="${join(dir, 'missing.pem')}" is invalid: expected a readable PEM file (ENOENT)`,
    );
    expect(failure({ DATABASE_SSL_CA_FILE: join(dir, 'not-a-cert.pem') })).toContain(
      'is invalid: expected a PEM file holding a certificate (-----BEGIN CERTIFICATE-----)',
    );
  });

  it("with a CA file both connections verify the server against it; the URL's sslmode still applies", () => {
    const ca = join(dir, 'ca.pem');
    const c = loadConfig({
      DATABASE_URL: 'postgres://app:a@db.example/x',
      DATABASE_MIGRATION_URL: 'postgres://owner:b@db.example/x?sslmode=require',
      DATABASE_SSL_CA_FILE: ca,
    });
    const runtime = new URL(runtimeConnection(c).connectionString!);
    expect(runtime.searchParams.get('sslrootcert')).toBe(ca);
    expect(runtime.searchParams.get('sslmode')).toBe('verify-full');
    const owner = new URL(migrationConnection(c).connectionString!);
    expect(owner.searchParams.get('sslrootcert')).toBe(ca);
    expect(owner.searchParams.get('sslmode')).toBe('require');
    // Without one, the URL is used as given.
    expect(connectionOptions('postgres://a@h/d?sslmode=verify-full')).toEqual({
      connectionString: 'postgres://a@h/d?sslmode=verify-full',
    });
  });

  it('a CA file contradicting the URL (sslmode=disable or no-verify, or a CA of its own) is refused, naming the URL', () => {
    const ca = join(dir, 'ca.pem');
    expect(
      failure({
        DATABASE_URL: 'postgres://app:a@db/x?sslmode=disable',
        DATABASE_MIGRATION_URL: 'postgres://o:b@db/x',
        DATABASE_SSL_CA_FILE: ca,
      }),
    ).toContain('DATABASE_URL has sslmode=disable, which contradicts DATABASE_SSL_CA_FILE');
    expect(
      failure({
        DATABASE_URL: 'postgres://app:a@db/x',
        DATABASE_MIGRATION_URL: 'postgres://o:b@db/x?sslmode=no-verify',
        DATABASE_SSL_CA_FILE: ca,
      }),
    ).toContain('DATABASE_MIGRATION_URL has sslmode=no-verify, which contradicts DATABASE_SSL_CA_FILE');
    expect(
      failure({
        DATABASE_URL: 'postgres://app:a@db/x?sslrootcert=/etc/ca.pem',
        DATABASE_MIGRATION_URL: 'postgres://o:b@db/x',
        DATABASE_SSL_CA_FILE: ca,
      }),
    ).toContain('DATABASE_URL names a CA itself (sslrootcert) and DATABASE_SSL_CA_FILE names one too');
  });

  it('KAFKA_REPLICATION_FACTOR is a whole number ≥ 1 when set', () => {
    expect(loadConfig({ KAFKA_REPLICATION_FACTOR: '3' }).KAFKA_REPLICATION_FACTOR).toBe(3);
    expect(failure({ KAFKA_REPLICATION_FACTOR: '0' })).toContain(
      'KAFKA_REPLICATION_FACTOR="0" is invalid: expected a whole number of replicas ≥ 1',
    );
  });
});

describe('fulfilment provision --only', () => {
  it('takes the steps in any order and case, runs them in order, and refuses unknown ones', () => {
    expect(parseProvisionSteps('postgres,Kafka')).toEqual(['kafka', 'postgres']);
    expect(parseProvisionSteps('temporal')).toEqual(['temporal']);
    expect(parseProvisionSteps('kafka,mysql')).toBeUndefined();
    expect(parseProvisionSteps('')).toBeUndefined();
  });
});
