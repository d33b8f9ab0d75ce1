/**
 * The commands' Kafka: the project's one client set-up (src/adapters/kafka/client.ts) with the CLI's client id and
 * logger, and the port's reads in the CLI's error taxonomy (cli-errors.ts). Kept out of context.ts so that main.ts can
 * build contexts without loading kafkajs: only a command module imports this, after main.ts has checked the command's
 * options.
 */
import type { TopicAdmin, PartitionOffsets } from '../adapters/kafka/admin.js';
import { createKafka, type Kafka } from '../adapters/kafka/client.js';
import {
  GroupInUse,
  readRanges,
  READER_SESSION_TIMEOUT_MS,
  ReadInterrupted,
  type ReadOptions,
} from '../adapters/kafka/topic-reader.js';
import { cliLogger, type CliContext } from './context.js';
import { InterruptedError, NotFoundError, UsageError } from './cli-errors.js';

export function cliKafka(ctx: CliContext): Kafka {
  return createKafka(ctx.config, ctx.logger ?? cliLogger(), { clientId: `${ctx.config.KAFKA_CLIENT_ID}-cli` });
}

/** Every partition of `topic` with its watermarks; NotFoundError when the topic does not exist. */
export async function topicPartitions(admin: TopicAdmin, topic: string): Promise<PartitionOffsets[]> {
  const partitions = await admin.partitionOffsets(topic);
  if (!partitions) throw new NotFoundError(`topic ${topic} does not exist on the brokers`);
  return partitions;
}

/**
 * readRanges (src/adapters/kafka/topic-reader.ts) with the CLI's errors: an interrupted read is an InterruptedError, a
 * `group` with members a UsageError naming `--group`. Errors thrown by `onRecord` pass through unchanged.
 */
export async function readTopic(opts: ReadOptions): Promise<Map<number, bigint>> {
  try {
    return await readRanges(opts);
  } catch (err) {
    if (err instanceof ReadInterrupted) throw new InterruptedError(err.message, { cause: err });
    if (err instanceof GroupInUse) {
      throw new UsageError(
        `--group ${err.group}: the group has ${err.members} active member(s) (state ${err.state}) — another redelivery is running, or one stopped less ` +
          `than a session timeout (${READER_SESSION_TIMEOUT_MS / 1000} s) ago; wait, or choose another --group`,
        { cause: err },
      );
    }
    throw err;
  }
}
