/** The Kafka client shared by the bridge, the demo and the CLI, logging through pino. */
import { Kafka, logLevel, type LogEntry } from 'kafkajs';
import type { Logger } from '../log.js';

export function createKafka(brokers: string[], clientId: string, logger: Logger): Kafka {
  const log = logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId,
    brokers,
    logLevel: logLevel.WARN,
    // Reconnects are our retry loop's business; keep kafkajs's own retries short so outages surface quickly.
    retry: { initialRetryTime: 300, retries: 5, maxRetryTime: 5_000 },
    logCreator: () => (entry: LogEntry) => {
      const { message, ...rest } = entry.log;
      const level = entry.level === logLevel.ERROR ? 'error' : entry.level === logLevel.WARN ? 'warn' : 'debug';
      log[level]({ namespace: entry.namespace, ...rest }, message);
    },
  });
}
