/**
 * The commands' Kafka client: the project's one kafkajs set-up (src/kafka/client.ts) with the CLI's client id and
 * logger. Kept out of context.ts so that main.ts can build contexts without loading kafkajs: only a command module
 * imports this, after main.ts has checked the command's options.
 */
import type { Kafka } from 'kafkajs';
import { createKafka } from '../kafka/client.js';
import { cliLogger, type CliContext } from './context.js';

export function cliKafka(ctx: CliContext): Kafka {
  return createKafka(ctx.config.KAFKA_BROKERS, `${ctx.config.KAFKA_CLIENT_ID}-cli`, ctx.logger ?? cliLogger());
}
