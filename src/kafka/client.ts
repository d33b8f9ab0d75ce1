/** The Kafka client shared by the bridge, the worker's dead letters, the demo and the CLI, logging through pino. */
import { Kafka, logLevel, type LogEntry } from 'kafkajs';
import './negative-timeout-warning.js';

export type { Kafka } from 'kafkajs';
import type { Logger } from '../log.js';
import { KAFKA_RETRY } from '../retry-policies.js';

export interface KafkaClientOptions {
  /**
   * kafkajs's own retries of one request or connection (300 ms doubling to 5 s, ±20 % jitter); default 5 (about
   * 10 s). When they run out the operation fails: a send or commit reaches the caller's backoff, a consumer crashes.
   */
  retries?: number;
  /** Called for every failed connection attempt kafkajs reports; it retries them itself, so count them as retries. */
  onConnectionError?: () => void;
}

export function createKafka(brokers: string[], clientId: string, logger: Logger, opts: KafkaClientOptions = {}): Kafka {
  const log = logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId,
    brokers,
    logLevel: logLevel.WARN,
    retry: { initialRetryTime: KAFKA_RETRY.initialRetryTime, retries: opts.retries ?? KAFKA_RETRY.requests, maxRetryTime: KAFKA_RETRY.maxRetryTime },
    logCreator: () => (entry: LogEntry) => {
      const { message, ...rest } = entry.log;
      const level = entry.level === logLevel.ERROR ? 'error' : entry.level === logLevel.WARN ? 'warn' : 'debug';
      // kafkajs reports a failed connection attempt only through its log; one entry per attempt.
      if (entry.namespace === 'Connection' && entry.level === logLevel.ERROR && /^Connection (error|timeout)/.test(message)) opts.onConnectionError?.();
      log[level]({ namespace: entry.namespace, ...rest }, message);
    },
  });
}
