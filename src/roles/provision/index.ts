/**
 * `fulfilment provision`: everything the service needs to exist before it runs, created when missing and left alone
 * when present — the Kafka topics, the Temporal search attributes, the PostgreSQL schema and the runtime role's
 * grants. The service itself never creates any of it. Each step is idempotent; running it again changes nothing.
 */
import { ConfigError, type Config } from '../../base/config.js';
import { createKafka } from '../../adapters/kafka/client.js';
import { permanentKafkaFailure } from '../../adapters/kafka/failures.js';
import type { Logger } from '../../base/log.js';
import { connectTemporal } from '../../domain/temporal.js';
import { ensureTopics, serviceTopics, type TopicsResult } from './topics.js';
import { provisionPostgres, type PostgresResult } from './schema-and-grants.js';
import { ensureSearchAttributes, type SearchAttributesResult } from './search-attributes.js';

import { PROVISION_STEPS, type ProvisionStep } from './steps.js';

export { PROVISION_STEPS, type ProvisionStep } from './steps.js';

export interface ProvisionReport {
  kafka?: TopicsResult;
  temporal?: SearchAttributesResult;
  postgres?: PostgresResult;
}

/** Runs `steps` (default: all) in order kafka, temporal, postgres; the first failure stops it. */
export async function provision(
  config: Config,
  logger: Logger,
  steps: readonly ProvisionStep[] = PROVISION_STEPS,
): Promise<ProvisionReport> {
  const report: ProvisionReport = {};
  if (steps.includes('kafka')) {
    const kafka = createKafka(config, logger, { clientId: `${config.KAFKA_CLIENT_ID}-provision` });
    try {
      report.kafka = await ensureTopics(kafka, serviceTopics(config), config.KAFKA_REPLICATION_FACTOR);
    } catch (err) {
      // A refused credential or certificate is said in the same words as at the service's start-up.
      const why = permanentKafkaFailure(err, config) ?? (err as Error).message;
      throw new Error(
        `Kafka at ${config.KAFKA_BROKERS.join(',')} (KAFKA_BROKERS): could not create topics ${config.ORDERS_TOPIC}, ${config.DLQ_TOPIC}, ${config.STATUS_TOPIC}: ${why}`,
        { cause: err },
      );
    }
  }
  if (steps.includes('temporal')) {
    try {
      const connection = await connectTemporal(config, { connectTimeout: '10s' });
      try {
        report.temporal = await ensureSearchAttributes(connection, config.TEMPORAL_NAMESPACE);
      } finally {
        await connection.close().catch(() => undefined);
      }
    } catch (err) {
      throw new Error(
        `Temporal at ${config.TEMPORAL_ADDRESS} (TEMPORAL_ADDRESS), namespace ${config.TEMPORAL_NAMESPACE}: could not register search attributes: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
  if (steps.includes('postgres')) {
    try {
      report.postgres = await provisionPostgres(config);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new Error(`PostgreSQL (DATABASE_MIGRATION_URL): ${(err as Error).message}`, { cause: err });
    }
  }
  return report;
}

/** True when the run changed nothing. */
export function nothingChanged(r: ProvisionReport): boolean {
  return (
    (r.kafka === undefined || (r.kafka.created.length === 0 && r.kafka.grown.length === 0)) &&
    (r.temporal === undefined || r.temporal.registered.length === 0) &&
    (r.postgres === undefined ||
      (r.postgres.applied.length === 0 &&
        r.postgres.grants.granted.length === 0 &&
        r.postgres.grants.revoked.length === 0))
  );
}

/** One line per step, saying what changed or that nothing did. */
export function describeReport(r: ProvisionReport, config: Config): string[] {
  const lines: string[] = [];
  if (r.kafka) {
    const k = r.kafka;
    const parts = [
      ...k.created.map(
        (t) =>
          `created ${t.topic} (${t.numPartitions} partitions, replication ${config.KAFKA_REPLICATION_FACTOR ?? 'broker default'})`,
      ),
      ...k.grown.map((g) => `grew ${g.topic} from ${g.from} to ${g.to} partitions`),
      ...(k.unchanged.length ? [`${k.unchanged.join(', ')} already as configured`] : []),
    ];
    lines.push(`kafka: ${parts.join('; ')}`);
  }
  if (r.temporal) {
    const t = r.temporal;
    lines.push(
      `temporal: ${t.registered.length ? `registered search attributes ${t.registered.join(', ')}` : 'search attributes already registered'} in namespace ${config.TEMPORAL_NAMESPACE}${t.registered.length && t.unchanged.length ? ` (${t.unchanged.join(', ')} were)` : ''}`,
    );
  }
  if (r.postgres) {
    const p = r.postgres;
    const parts = [
      p.applied.length ? `applied ${p.applied.join(', ')}` : 'schema up to date',
      p.grants.granted.length
        ? `granted ${p.runtimeRole} ${p.grants.granted.join(', ')}`
        : `${p.runtimeRole} already has exactly its grants`,
      ...(p.grants.revoked.length ? [`revoked from ${p.runtimeRole} ${p.grants.revoked.join(', ')}`] : []),
    ];
    lines.push(`postgres: ${parts.join('; ')}`);
  }
  return lines;
}
